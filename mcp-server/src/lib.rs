//! The MCP server: codemode offered to agents over MCP (`codemode mcp` on stdio,
//! `codemode serve` on streamable HTTP), through the official Rust SDK (rmcp).
//!
//! - [`server`]: the rmcp handler: code mode's `execute` tool or separate tools,
//!   cancellation, progress, list changes, approvals through elicitation;
//! - [`description`]: the texts the model reads (the `execute` description and the
//!   instructions with every plugin's rules);
//! - [`cut`]: shrinking outputs to the configured cap, keeping JSON valid;
//! - [`media`]: images and audio in a returned value, attached as MCP content;
//! - [`logs`]: codemode's log as MCP log notifications, for the sessions the operator
//!   chose;
//! - [`http`]: the streamable HTTP listener with its bearer-token check (stateful, or
//!   stateless for replicas behind a load balancer);
//! - [`operations`]: the operations listener (`/healthz`, `/readyz`, `/metrics`);
//! - [`slots`]: program slots shared fairly between sessions;
//! - [`approvals`]: asking the person behind the client (elicitation, in a session or
//!   through Multi Round-Trip Requests);
//! - [`rounds`]: a 2026-07-28 client's program, paused for an answer between requests;
//! - [`sampling`]: a plugin's model calls, answered by the client's model (sampling);
//! - [`sealed_state`]: the encrypted, caller-bound `requestState` of such a program.

pub mod approvals;
pub use codemode_core::cut;
pub mod description;
pub mod http;
pub mod logs;
pub mod media;
pub mod operations;
pub mod rounds;
pub mod sampling;
pub mod sealed_state;
pub mod server;
pub mod settings;
pub mod slots;

pub use server::CodemodeServer;

/// The name of the code-mode tool.
pub const EXECUTE: &str = "execute";

/// The next connection on `listener` (of the `what` listener, for the log). Accepting
/// fails now and then (out of descriptors, a connection reset before accept): it waits
/// a moment and goes on, since a listener must outlive any one client.
pub(crate) async fn accept(listener: &tokio::net::TcpListener, what: &str) -> tokio::net::TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => return stream,
            Err(e) => {
                tracing::warn!("accepting an {what} connection failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}
