//! codemode's host: runs agent-written JavaScript programs, one sandboxed worker per
//! program, and serves their `tools.<plugin>.<tool>(input)` calls.
//!
//! The programs themselves run in `codemode-core` (re-exported here: [`executor`],
//! [`dispatch`], [`tool`], ...); this crate adds the front ends and what plugs into them:
//! the plugin runtimes ([`plugins`], [`oauth`]), the MCP server ([`serve`]), the
//! configuration ([`config`]) and the command line's approvals on the terminal.
//!
//! The flow, top to bottom:
//! - [`app`] builds the plugins and the executor from a [`config`] file: what the
//!   command line's `run`, `tools`, `mcp` and `serve` share, and what tests build;
//! - [`Executor`] ([`executor`]) takes a program and its [`Limits`] ([`limits`]);
//! - the [`launcher`] starts a worker: forked from a pristine template process, or spawned;
//! - the executor serves the worker's tool calls from the [`Catalog`] ([`tool`]) over
//!   the `protocol` channel, and enforces the wall clock;
//! - the worker is killed and reaped ([`worker_process`]) and the program's
//!   [`Outcome`] ([`outcome`]) is returned.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use codemode::{Catalog, Executor, Tool, ToolDefinition, ToolResult};
//! use serde_json::json;
//!
//! let add = Tool::from_fn(
//!     ToolDefinition::new("add", "Adds a and b.", json!({"type": "object"})),
//!     |input, _ctx| async move { ToolResult::text((input["a"].as_f64().unwrap_or(0.0) + input["b"].as_f64().unwrap_or(0.0)).to_string()) },
//! );
//! let executor = Executor::builder().catalog(Catalog::new().with("math", add)?).build().await?;
//! let outcome = executor.run("async (tools) => await tools.math.add({ a: 1, b: 2 })").await;
//! assert_eq!(outcome.agent_text(), "3");
//! # Ok(()) }
//! ```

pub mod app;
pub mod config;
pub mod config_discovery;
pub mod examples;
pub mod oauth;
pub mod sandbox_report;
pub mod terminal_approvals;

pub use codemode_mcp_server as serve;
pub use codemode_plugin_runtimes as plugins;
pub use codemode_plugin_runtimes::tls;

pub use codemode_core::{
    cgroups, cut, dispatch, executor, launcher, limits, outcome, telemetry, tool, typescript, worker_process,
};

pub use codemode_core::{
    default_worker_path, CallContext, CallHooks, Caller, Catalog, CatalogError, Content, Executor, ExecutorBuilder,
    ExecutorError, LaunchMode, Limits, Outcome, OutcomeKind, Phases, Program, SandboxPolicy, Tool, ToolDefinition,
    ToolHandler, ToolResult,
};
