//! codemode's core: runs agent-written JavaScript programs, one sandboxed worker per
//! program, and serves their `tools.<plugin>.<tool>(input)` calls through one dispatch
//! path ([`dispatch`]). It knows no MCP, command line or configuration file: the
//! `codemode` crate's front ends (the MCP server, `codemode run`) drive it.
//!
//! The flow, top to bottom:
//! - [`Executor`] ([`executor`]) takes a program and its [`Limits`] ([`limits`]);
//! - the [`launcher`] starts a worker: forked from a pristine template process, or spawned;
//! - the executor serves the worker's tool calls from the [`Catalog`] ([`tool`]) over
//!   the `protocol` channel, and enforces the wall clock;
//! - the worker is killed and reaped ([`worker_process`]) and the program's
//!   [`Outcome`] ([`outcome`]) is returned.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use codemode_core::{Catalog, Executor, Tool, ToolDefinition, ToolResult};
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

pub mod cgroups;
pub mod cut;
pub mod dispatch;
pub mod executor;
pub mod launcher;
pub mod limits;
pub mod outcome;
pub mod telemetry;
pub mod tool;
pub mod typescript;
pub mod worker_process;

pub use dispatch::CallHooks;
pub use executor::{default_worker_path, Executor, ExecutorBuilder, ExecutorError, Program};
pub use launcher::{LaunchMode, SandboxPolicy};
pub use limits::Limits;
pub use outcome::{Outcome, OutcomeKind, Phases};
pub use tool::{CallContext, Caller, Catalog, CatalogError, Content, Tool, ToolDefinition, ToolHandler, ToolResult};
