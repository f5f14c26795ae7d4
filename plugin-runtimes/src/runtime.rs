//! The seam every plugin runtime kind implements, and what the remote kinds share.
//!
//! 1. [`PluginHost`](super::PluginHost) holds one [`PluginRuntime`] per configured
//!    plugin and never asks which kind it is: it asks each for its tools
//!    ([`PluginRuntime::list`]), how long until it may be tried again
//!    ([`PluginRuntime::retry_in`]) and to be told when its tools change
//!    ([`PluginRuntime::watch_changes`]);
//! 2. a runtime whose tools are served somewhere else (a process plugin, a JavaScript
//!    plugin's runtime, an MCP server) lists them as [`RemoteTool`]s, one handler type
//!    for every such tool, that sends each call through the runtime's [`RemoteCalls`];
//! 3. a request to such a runtime that fails says why as a [`PluginError`].
//!
//! A runtime ends when the last reference to it is dropped (its process is killed, its
//! session closed): there is no separate shutdown to call.
//!
//! Adding a runtime kind is one module implementing [`PluginRuntime`] (and
//! [`RemoteCalls`] when its tools are served remotely), plus the configuration variant
//! that builds it; `plugins::fixed` (a test-only kind) shows it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use codemode_core::tool::{CallContext, ToolDefinition, ToolHandler, ToolResult};

/// A tool a runtime listed, with what serves its calls.
pub type ListedTool = (Arc<dyn ToolHandler>, ToolDefinition);

/// What a runtime offers now.
#[derive(Default)]
pub struct Listed {
    /// Its tools, as the runtime defines them (the host checks them, and applies the
    /// configuration's approvals and scopes).
    pub tools: Vec<ListedTool>,
    /// What it said, when it last started, that it cannot honour (shown once, as notes).
    pub notes: Vec<String>,
}

/// One configured plugin's runtime, of whatever kind.
pub trait PluginRuntime: Send + Sync + 'static {
    /// The plugin's name (`tools.<name>`).
    fn name(&self) -> &str;

    /// Asks for the plugin's tools, starting it if needed, at once: a runtime still
    /// backing off after a failure is not started now. `Err` is why the plugin is
    /// unavailable, as the agent reads it (with the last lines of its stderr when it
    /// wrote some).
    fn list(self: Arc<Self>) -> BoxFuture<'static, Result<Listed, String>>;

    /// How long until the plugin may be tried again after a failure (zero: now).
    fn retry_in(&self) -> Duration;

    /// A receiver that changes whenever the plugin announces that its tools changed.
    fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64>;
}

/// How the calls of a remote runtime's tools reach it (its transport).
pub trait RemoteCalls: Send + Sync + 'static {
    /// Calls `tool`; a failure is a failed tool result.
    fn call(self: Arc<Self>, tool: String, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult>;
}

/// A tool served by a remote runtime: every call goes to the runtime's [`RemoteCalls`].
pub struct RemoteTool {
    runtime: Arc<dyn RemoteCalls>,
    tool: String,
}

impl ToolHandler for RemoteTool {
    fn call(&self, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult> {
        Arc::clone(&self.runtime).call(self.tool.clone(), input, context)
    }
}

/// `definitions`, each served by `runtime`.
pub fn remote_tools(runtime: Arc<dyn RemoteCalls>, definitions: Vec<ToolDefinition>) -> Vec<ListedTool> {
    definitions
        .into_iter()
        .map(|definition| {
            let tool = RemoteTool { runtime: Arc::clone(&runtime), tool: definition.name.clone() };
            (Arc::new(tool) as Arc<dyn ToolHandler>, definition)
        })
        .collect()
}

/// Why a plugin request failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum PluginError {
    /// The process could not be started.
    #[error("plugin {plugin} could not be started: {reason}")]
    Start {
        /// The plugin.
        plugin: String,
        /// Why.
        reason: String,
    },
    /// The process went away or broke the protocol while the request was in flight.
    #[error("plugin {plugin} failed: {reason}")]
    Gone {
        /// The plugin.
        plugin: String,
        /// What happened.
        reason: String,
    },
    /// The plugin answered with a JSON-RPC error.
    #[error("plugin {plugin} answered {method} with an error: {message}")]
    Rpc {
        /// The plugin.
        plugin: String,
        /// The method.
        method: String,
        /// The error's message.
        message: String,
    },
    /// No answer in time.
    #[error("plugin {plugin} did not answer {method} within {seconds} s")]
    Timeout {
        /// The plugin.
        plugin: String,
        /// The method.
        method: String,
        /// The limit.
        seconds: f64,
    },
    /// The call was given up.
    #[error("the call was cancelled")]
    Cancelled,
}
