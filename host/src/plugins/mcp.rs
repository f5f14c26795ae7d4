//! MCP servers as plugins, through the official Rust SDK (`rmcp`): a server started as
//! a command (stdio) or reached at a URL (streamable HTTP). Its tools appear as
//! `tools.<plugin>.<tool>`.
//!
//! [`McpPlugin`] keeps one client session; a session that fails (the server exited, the
//! transport closed) is dropped and the next call connects again. Calls have a time
//! limit, and a call the host gives up is cancelled at the server (rmcp sends
//! `notifications/cancelled` when the request is dropped). The server's
//! `notifications/tools/list_changed` makes the host ask for the tools again.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::process::PluginError;
use crate::catalog::{ToolDefinition, ToolResult};

/// Where the server is.
#[derive(Debug, Clone)]
pub enum McpTransport {
    /// A command speaking MCP over its stdio.
    Stdio {
        /// The executable.
        command: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// Its URL.
        url: String,
    },
}

/// How to reach an MCP server.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// The plugin's name (`tools.<name>`).
    pub name: String,
    /// Where the server is.
    pub transport: McpTransport,
    /// Longest a tool call may take.
    pub call_timeout: Duration,
}

/// Hears the server's notifications.
#[derive(Clone)]
struct Events {
    changed: tokio::sync::watch::Sender<u64>,
}

impl ClientHandler for Events {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }
}

type Session = RunningService<RoleClient, Events>;

/// An MCP server used as a plugin.
pub struct McpPlugin {
    config: McpConfig,
    session: Mutex<Option<Arc<Session>>>,
    changed: tokio::sync::watch::Sender<u64>,
}

/// How long connecting and listing may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

impl McpPlugin {
    /// A plugin that connects on first use.
    pub fn new(config: McpConfig) -> Arc<Self> {
        Arc::new(Self { config, session: Mutex::new(None), changed: tokio::sync::watch::channel(0).0 })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// A receiver that changes whenever the server announces a new tool list.
    pub fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn gone(&self, reason: impl std::fmt::Display) -> PluginError {
        PluginError::Gone { plugin: self.config.name.clone(), reason: reason.to_string() }
    }

    async fn connected(&self) -> Result<Arc<Session>, PluginError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = slot.as_ref() {
            if !s.is_closed() {
                return Ok(Arc::clone(s));
            }
        }
        let events = Events { changed: self.changed.clone() };
        let session = match &self.config.transport {
            McpTransport::Stdio { command, args, env, cwd } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let transport = TokioChildProcess::new(cmd).map_err(|e| PluginError::Start { plugin: self.config.name.clone(), reason: format!("{}: {e}", command.display()) })?;
                tokio::time::timeout(SETUP_TIMEOUT, events.serve(transport)).await
            }
            McpTransport::Http { url } => {
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                tokio::time::timeout(SETUP_TIMEOUT, events.serve(transport)).await
            }
        };
        let session = match session {
            Ok(Ok(s)) => Arc::new(s),
            Ok(Err(e)) => return Err(PluginError::Start { plugin: self.config.name.clone(), reason: format!("the MCP handshake failed: {e}") }),
            Err(_) => return Err(PluginError::Timeout { plugin: self.config.name.clone(), method: "initialize".into(), seconds: SETUP_TIMEOUT.as_secs_f64() }),
        };
        *slot = Some(Arc::clone(&session));
        Ok(session)
    }

    /// The server's tools (`tools/list`, all pages).
    pub async fn list_tools(&self) -> Result<Vec<ToolDefinition>, PluginError> {
        let session = self.connected().await?;
        let tools = tokio::time::timeout(SETUP_TIMEOUT, session.list_all_tools())
            .await
            .map_err(|_| PluginError::Timeout { plugin: self.config.name.clone(), method: "tools/list".into(), seconds: SETUP_TIMEOUT.as_secs_f64() })?
            .map_err(|e| self.gone(format!("tools/list failed: {e}")))?;
        tools
            .into_iter()
            .map(|t| serde_json::to_value(t).and_then(serde_json::from_value::<ToolDefinition>).map_err(|e| self.gone(format!("it listed a tool this host cannot read: {e}"))))
            .collect()
    }

    /// Calls a tool; failures are failed tool results.
    pub async fn call_tool(&self, tool: &str, input: Value, cancel: CancellationToken) -> ToolResult {
        let session = match self.connected().await {
            Ok(s) => s,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match input {
            Value::Object(map) => Some(map),
            _ => None,
        };
        // Dropping the request future (timeout, cancellation) cancels it at the server.
        let call = session.call_tool(params);
        let result = tokio::select! {
            r = call => r,
            () = tokio::time::sleep(self.config.call_timeout) => {
                return ToolResult::error(format!("tool {}.{tool} timed out after {} s", self.config.name, self.config.call_timeout.as_secs_f64()));
            }
            () = cancel.cancelled() => return ToolResult::error("the call was cancelled"),
        };
        match result {
            Ok(r) => serde_json::to_value(r)
                .and_then(serde_json::from_value::<ToolResult>)
                .unwrap_or_else(|e| ToolResult::error(format!("plugin {} returned a result this host cannot read: {e}", self.config.name))),
            Err(e) => {
                if session.is_closed() {
                    *self.session.lock().await = None;
                }
                ToolResult::error(format!("plugin {} failed: {e}", self.config.name))
            }
        }
    }
}
