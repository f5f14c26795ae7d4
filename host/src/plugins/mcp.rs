//! MCP servers as plugins, through the official Rust SDK (`rmcp`): a server started as
//! a command (stdio) or reached at a URL (streamable HTTP). Its tools appear as
//! `tools.<plugin>.<tool>`.
//!
//! [`McpPlugin`] keeps one client session; a session that fails (the server exited, the
//! transport closed) is dropped and the next call connects again, after a backoff
//! while it keeps failing. Calls have a time limit, and a call the host gives up is
//! cancelled at the server (rmcp sends `notifications/cancelled` when the request is
//! dropped). The server's `notifications/tools/list_changed` makes the host ask for
//! the tools again.
//!
//! A server started as a command gets what a process plugin gets: an environment of
//! only `PATH` and its configured `env` (never the host's tokens or credentials), the
//! configuration's folder as its working directory, a kill when the host dies, and its
//! standard error in codemode's log (the last lines also in the reason it is
//! unavailable).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::process::{drain_stderr, plugin_command, PluginError, StderrTail};
use crate::tool::{ToolDefinition, ToolResult};

/// Where the server is.
#[derive(Debug, Clone)]
pub enum McpTransport {
    /// A command speaking MCP over its stdio.
    Stdio {
        /// The executable.
        command: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (written in the configuration, or read from the
        /// host's environment at start).
        env: Vec<(String, super::settings::SettingValue)>,
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
    backoff: std::sync::Mutex<Backoff>,
    stderr_tail: StderrTail,
}

/// Redirects followed per request.
const MAX_REDIRECTS: usize = 10;

/// The HTTP client of a server at a `url`. Built here rather than by rmcp, whose default
/// client panics when it cannot be built (for example when no CA certificate can be
/// loaded): that is a plugin that cannot start, never a host that stops. Connections
/// are not pooled idle, and only same-origin 307/308 redirects are followed (they keep
/// the method and body, and do not replay the session or headers to another host).
fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if same_origin && keeps_body {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder().pool_max_idle_per_host(0).redirect(policy).build()
}

/// An error with its causes, as one line.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// How long connecting and listing may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

impl McpPlugin {
    /// A plugin that connects on first use.
    pub fn new(config: McpConfig) -> Arc<Self> {
        crate::tls::ensure_provider();
        Arc::new(Self {
            config,
            session: Mutex::new(None),
            changed: tokio::sync::watch::channel(0).0,
            backoff: std::sync::Mutex::new(Backoff::default()),
            stderr_tail: StderrTail::default(),
        })
    }

    /// What the server last wrote on standard error (servers started as a command).
    pub fn stderr_tail(&self) -> &StderrTail {
        &self.stderr_tail
    }

    /// How long until the server may be connected again after a failure (zero: now).
    pub fn retry_in(&self) -> Duration {
        self.backoff.lock().map(|b| b.delay()).unwrap_or_default()
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

    /// The live session, or a new one (after the backoff when `wait`; refused at once
    /// while backing off otherwise).
    async fn connected(&self, wait: bool) -> Result<Arc<Session>, PluginError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = slot.as_ref() {
            if !s.is_closed() {
                return Ok(Arc::clone(s));
            }
        }
        let delay = self.retry_in();
        if !delay.is_zero() {
            if !wait {
                return Err(PluginError::Start {
                    plugin: self.config.name.clone(),
                    reason: format!("it failed recently and is tried again in {:.1} s", delay.as_secs_f64()),
                });
            }
            tokio::time::sleep(delay).await;
        }
        let session = self.connect().await;
        if let Ok(mut b) = self.backoff.lock() {
            match &session {
                Ok(_) => b.succeeded(),
                Err(_) => b.failed(),
            }
        }
        let session = session?;
        *slot = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Starts or reaches the server and does the MCP handshake.
    async fn connect(&self) -> Result<Arc<Session>, PluginError> {
        let events = Events { changed: self.changed.clone() };
        let session = match &self.config.transport {
            McpTransport::Stdio { command, args, env, cwd } => {
                let env = super::settings::resolve_env(env, &super::settings::host_environment)
                    .map_err(|e| PluginError::Start { plugin: self.config.name.clone(), reason: e.to_string() })?;
                let cmd = plugin_command(command, args, &env, cwd.as_deref());
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| PluginError::Start {
                        plugin: self.config.name.clone(),
                        reason: format!("{}: {e}", command.display()),
                    })?;
                if let Some(stderr) = stderr {
                    drain_stderr(self.config.name.clone(), stderr, self.stderr_tail.clone());
                }
                tokio::time::timeout(SETUP_TIMEOUT, events.serve(transport)).await
            }
            McpTransport::Http { url } => {
                let client = http_client().map_err(|e| PluginError::Start {
                    plugin: self.config.name.clone(),
                    reason: format!("cannot make an HTTP client for {url}: {}", with_causes(&e)),
                })?;
                let transport = StreamableHttpClientTransport::with_client(
                    client,
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()),
                );
                tokio::time::timeout(SETUP_TIMEOUT, events.serve(transport)).await
            }
        };
        match session {
            Ok(Ok(s)) => Ok(Arc::new(s)),
            Ok(Err(e)) => Err(PluginError::Start {
                plugin: self.config.name.clone(),
                reason: format!("the MCP handshake failed: {}", with_causes(&e)),
            }),
            Err(_) => Err(PluginError::Timeout {
                plugin: self.config.name.clone(),
                method: "initialize".into(),
                seconds: SETUP_TIMEOUT.as_secs_f64(),
            }),
        }
    }

    /// The server's tools (`tools/list`, all pages), connecting first if needed (after
    /// the backoff when `wait`, at once or not at all otherwise).
    pub async fn list_tools(&self, wait: bool) -> Result<Vec<ToolDefinition>, PluginError> {
        let session = self.connected(wait).await?;
        let tools = tokio::time::timeout(SETUP_TIMEOUT, session.list_all_tools())
            .await
            .map_err(|_| PluginError::Timeout {
                plugin: self.config.name.clone(),
                method: "tools/list".into(),
                seconds: SETUP_TIMEOUT.as_secs_f64(),
            })?
            .map_err(|e| self.gone(format!("tools/list failed: {e}")))?;
        tools
            .into_iter()
            .map(|t| {
                serde_json::to_value(t)
                    .and_then(serde_json::from_value::<ToolDefinition>)
                    .map_err(|e| self.gone(format!("it listed a tool this host cannot read: {e}")))
            })
            .collect()
    }

    /// Calls a tool; failures are failed tool results.
    pub async fn call_tool(&self, tool: &str, input: Value, cancel: CancellationToken) -> ToolResult {
        let session = match self.connected(true).await {
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
            Ok(r) => serde_json::to_value(r).and_then(serde_json::from_value::<ToolResult>).unwrap_or_else(|e| {
                ToolResult::error(format!("plugin {} returned a result this host cannot read: {e}", self.config.name))
            }),
            Err(e) => {
                if session.is_closed() {
                    *self.session.lock().await = None;
                }
                ToolResult::error(format!("plugin {} failed: {e}", self.config.name))
            }
        }
    }
}
