//! MCP servers as plugins, through the official Rust SDK (`rmcp`): a server started as
//! a command (stdio) or reached at a URL (streamable HTTP). Its tools appear as
//! `tools.<plugin>.<tool>`.
//!
//! - [`http`]: how a server at a `url` is reached: its configured headers (each written,
//!   or read from the environment), a configured bearer token, or OAuth with the tokens
//!   `codemode auth login` stored ([`crate::oauth`]);
//! - [`client`]: what the server sends during a session (elicitation to the person
//!   behind the call, progress to the call's program, logs to codemode's log, tool
//!   list changes).
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

mod client;
pub mod http;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientNotification,
    ClientRequest, ServerResult,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Mutex;

use super::backoff::Backoff;
use super::process::{drain_stderr, plugin_command, PluginError, StderrTail};
use crate::oauth::Challenge;
use crate::tool::{CallContext, ToolDefinition, ToolResult};
use client::{CallPeers, InFlight, ServerMessages};
pub use http::{http_client, HttpServer};

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
    Http(HttpServer),
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

type Session = RunningService<RoleClient, ServerMessages>;

/// An MCP server used as a plugin.
pub struct McpPlugin {
    config: McpConfig,
    session: Mutex<Option<Arc<Session>>>,
    changed: tokio::sync::watch::Sender<u64>,
    backoff: std::sync::Mutex<Backoff>,
    stderr_tail: StderrTail,
    /// The calls in flight, for the server's questions and progress.
    calls: Arc<InFlight>,
    /// The session carries stored OAuth tokens.
    authorized: std::sync::atomic::AtomicBool,
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
            calls: Arc::default(),
            authorized: std::sync::atomic::AtomicBool::new(false),
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
        // A session that closed: the next one is a restart (or a reconnection).
        let restarting = slot.is_some();
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
        if restarting {
            crate::telemetry::plugin_restarted(&self.config.name);
        }
        *slot = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Starts or reaches the server and does the MCP handshake.
    async fn connect(&self) -> Result<Arc<Session>, PluginError> {
        let messages = ServerMessages {
            plugin: self.config.name.clone(),
            changed: self.changed.clone(),
            calls: Arc::clone(&self.calls),
        };
        let start = |reason: String| PluginError::Start { plugin: self.config.name.clone(), reason };
        let session = match &self.config.transport {
            McpTransport::Stdio { command, args, env, cwd } => {
                let env = super::settings::resolve_env(env, &super::settings::host_environment)
                    .map_err(|e| start(e.to_string()))?;
                let cmd = plugin_command(command, args, &env, cwd.as_deref());
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| start(format!("{}: {e}", command.display())))?;
                if let Some(stderr) = stderr {
                    drain_stderr(self.config.name.clone(), stderr, self.stderr_tail.clone());
                }
                tokio::time::timeout(SETUP_TIMEOUT, messages.serve(transport)).await
            }
            McpTransport::Http(server) => {
                let (transport, authorized) = server.transport(&self.config.name).await.map_err(start)?;
                let session = match transport {
                    http::Transport::Plain(t) => tokio::time::timeout(SETUP_TIMEOUT, messages.serve(t)).await,
                    http::Transport::Authorized(t) => tokio::time::timeout(SETUP_TIMEOUT, messages.serve(t)).await,
                };
                self.authorized.store(authorized, std::sync::atomic::Ordering::Relaxed);
                if let Ok(Err(e)) = &session {
                    if let Some(header) = e.auth_challenge() {
                        let challenge = Challenge::from_header(header);
                        return Err(start(server.refusal(&self.config.name, authorized, &challenge)));
                    }
                }
                session
            }
        };
        match session {
            Ok(Ok(s)) => Ok(Arc::new(s)),
            Ok(Err(e)) => Err(start(format!("the MCP handshake failed: {}", http::with_causes(&e)))),
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
            .map_err(|e| match self.challenge(&e) {
                Some(why) => PluginError::Start { plugin: self.config.name.clone(), reason: why },
                None => self.gone(format!("tools/list failed: {e}")),
            })?;
        tools
            .into_iter()
            .map(|t| {
                let mut definition = serde_json::to_value(t)
                    .and_then(serde_json::from_value::<ToolDefinition>)
                    .map_err(|e| self.gone(format!("it listed a tool this host cannot read: {e}")))?;
                // MCP makes a description optional; agents still need a sentence.
                if definition.description.trim().is_empty() {
                    definition.description = match definition.title.as_deref().filter(|t| !t.trim().is_empty()) {
                        Some(title) => format!("{title}."),
                        None => format!(
                            "Tool {} of MCP server {} (the server gives no description).",
                            definition.name, self.config.name
                        ),
                    };
                }
                Ok(definition)
            })
            .collect()
    }

    /// What to say when the server refused a request for lack of authorization (and,
    /// for a 403 naming scopes, remember them for the next login); `None` for other
    /// failures.
    fn challenge(&self, error: &ServiceError) -> Option<String> {
        let McpTransport::Http(server) = &self.config.transport else { return None };
        let challenge = crate::oauth::challenge_in(error)?;
        if let (Challenge::InsufficientScope { scope: Some(scope), .. }, false) =
            (&challenge, server.has_configured_credentials())
        {
            server.want_scopes(scope);
        }
        Some(server.refusal(&self.config.name, self.authorized.load(std::sync::atomic::Ordering::Relaxed), &challenge))
    }

    /// Calls a tool; failures are failed tool results. The call's approver answers the
    /// server's questions during it, and its progress sink hears its progress.
    pub async fn call_tool(&self, tool: &str, input: Value, context: CallContext) -> ToolResult {
        let session = match self.connected(true).await {
            Ok(s) => s,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match input {
            Value::Object(map) => Some(map),
            _ => None,
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match session.send_cancellable_request(request, Default::default()).await {
            Ok(handle) => handle,
            Err(e) => return self.failed(&session, &e).await,
        };
        let peers = CallPeers {
            tool: tool.to_string(),
            approver: context.approver.clone(),
            progress: context.progress.clone(),
        };
        let _in_flight = self.calls.enter(handle.progress_token.clone(), peers);
        // A call given up (timeout, cancellation, the program gone) is cancelled at the server.
        let abandoned = Abandoned { peer: handle.peer.clone(), id: Some(handle.id.clone()) };
        let result = tokio::select! {
            r = handle.await_response() => r,
            () = tokio::time::sleep(self.config.call_timeout) => {
                return ToolResult::error(format!("tool {}.{tool} timed out after {} s", self.config.name, self.config.call_timeout.as_secs_f64()));
            }
            () = context.cancel.cancelled() => return ToolResult::error("the call was cancelled"),
        };
        abandoned.disarm();
        match result {
            Ok(ServerResult::CallToolResult(r)) => {
                serde_json::to_value(r).and_then(serde_json::from_value::<ToolResult>).unwrap_or_else(|e| {
                    ToolResult::error(format!(
                        "plugin {} returned a result this host cannot read: {e}",
                        self.config.name
                    ))
                })
            }
            Ok(_) => ToolResult::error(format!(
                "plugin {} answered tools/call with something other than a tool result",
                self.config.name
            )),
            Err(e) => self.failed(&session, &e).await,
        }
    }

    /// A failed request as the call's result: the authorization it lacks, or the error
    /// (and a closed session is dropped, so the next call connects again).
    async fn failed(&self, session: &Session, error: &ServiceError) -> ToolResult {
        if session.is_closed() {
            *self.session.lock().await = None;
        }
        match self.challenge(error) {
            Some(why) => ToolResult::error(format!("plugin {} refused the call: {why}", self.config.name)),
            None => ToolResult::error(format!("plugin {} failed: {error}", self.config.name)),
        }
    }
}

/// Sends `notifications/cancelled` for a request when dropped before it is disarmed
/// (the call timed out, was cancelled, or its program ended).
struct Abandoned {
    peer: rmcp::Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Abandoned {
    fn disarm(mut self) {
        self.id = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let notification =
            CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some("the call was given up".into())));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.send_notification(ClientNotification::CancelledNotification(notification)).await;
            });
        }
    }
}
