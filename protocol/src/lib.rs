//! The IPC channel between the codemode host and its sandbox workers.
//!
//! Every byte that crosses the process boundary goes through this crate:
//!
//! - [`cost`] counts what JSON text costs the host once parsed (for byte budgets);
//! - [`frame`] cuts a byte stream into length-prefixed frames and refuses oversized,
//!   truncated or undecodable ones before it allocates for them.
//! - [`message`] defines the typed messages of both directions: the host starts a
//!   program and answers tool calls; the worker asks for tools, writes console output
//!   and reports the program's outcome.
//! - [`channel`] wraps a stream in role-named helpers (`send_to_worker`,
//!   `recv_from_host`, ...) so that each side can only send what its role sends.
//! - [`manifest`] is a JavaScript plugin's `manifest.json`, read by the host and by
//!   the plugin runtime alike.
//! - [`mcp`] mirrors MCP's `Tool` and `CallToolResult` (every content kind);
//!   [`plugin`] is the plugin wire format (JSON-RPC lines) as typed messages.
//! - [`skills`] is seed 001's skills and agents as a plugin's layout reports them.
//! - [`template`] is the small control channel between the host and the pristine
//!   template process that forks one worker per program.
//! - [`worker`] is the rest of the host ↔ worker contract: the worker's command line,
//!   its exit codes, its engine, the sandbox layers with their descriptions and hints,
//!   the probe report and what `info` prints.
//!
//! Frames carry JSON (serde_json): the messages are small, debuggable with any tool,
//! and tool inputs and results are JSON already, so they pass through as
//! [`serde_json::value::RawValue`] without being parsed twice.

pub mod channel;
pub mod cost;
pub mod frame;
pub mod manifest;
pub mod mcp;
pub mod message;
pub mod plugin;
pub mod skills;
pub mod template;
pub mod worker;

pub use channel::WorkerChannel;
#[cfg(feature = "tokio")]
pub use channel::{FromWorker, HostChannel, ToWorker};
pub use frame::{FrameError, MAX_FRAME_BYTES};
pub use message::*;
