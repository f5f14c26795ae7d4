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
//! Both revisions of MCP: codemode asks a server with `server/discover` and speaks the
//! stateless 2026-07-28 revision where it is offered (`_meta` on every request; the
//! server's questions come back as "input required" answers to the call, which is sent
//! again with the person's answers; tool list changes through `subscriptions/listen`),
//! and the `initialize` handshake of 2025-11-25 with a session otherwise
//! ([`McpProtocol`]).
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
    ClientRequest, ElicitResult, ElicitationAction, InputRequest, ProtocolVersion, ServerNotification, ServerResult,
    SubscriptionFilter,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::Value;
use tokio::sync::Mutex;

use futures::future::BoxFuture;

use super::child::{drain_stderr, plugin_command, Restarts, StderrTail};
use super::runtime::{remote_tools, Listed, PluginError, PluginRuntime, RemoteCalls};
use crate::oauth::Challenge;
use client::{CallPeers, InFlight, ServerMessages};
use codemode_core::tool::{CallContext, ToolDefinition, ToolResult};
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
    /// Which revision of MCP to speak to it.
    pub protocol: McpProtocol,
}

/// Which revision of MCP codemode speaks to a plugin's server (`protocol` in its
/// configuration entry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub enum McpProtocol {
    /// Ask with `server/discover`: 2026-07-28 where the server offers it, else the
    /// `initialize` handshake (also when the server cannot be asked: it closes the
    /// connection, or answers nothing within 10 s).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// The stateless revision only (`server/discover`, `_meta` on every request).
    #[serde(rename = "2026-07-28")]
    Stateless,
    /// The `initialize` handshake and a session (2025-11-25 and earlier).
    #[serde(rename = "2025-11-25")]
    Handshake,
}

/// How many rounds of questions one tool call may take (2026-07-28 servers).
const MAX_INPUT_ROUNDS: usize = 10;

type Session = RunningService<RoleClient, ServerMessages>;

/// Why a session could not be opened: refused (the server wants authorization, or the
/// plugin cannot even be started: no other revision would help), or failed.
enum Connect {
    Refused(PluginError),
    Failed(PluginError),
}

/// An MCP server used as a plugin.
pub struct McpPlugin {
    config: McpConfig,
    session: Mutex<Option<Arc<Session>>>,
    changed: tokio::sync::watch::Sender<u64>,
    restarts: Restarts,
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
            restarts: Restarts::default(),
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
        self.restarts.retry_in()
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
        self.restarts.before_start(&self.config.name, wait).await?;
        let session = self.connect().await;
        match &session {
            Ok(_) => self.restarts.succeeded(),
            Err(_) => self.restarts.failed(),
        }
        let session = session?;
        if restarting {
            codemode_core::telemetry::plugin_restarted(&self.config.name);
        }
        *slot = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Starts or reaches the server and opens a session: in the revision `protocol`
    /// says; `Auto` asks with `server/discover` first and, when that does not settle on
    /// 2026-07-28 (the server refused it, closed the connection or said nothing), starts
    /// again with the `initialize` handshake on a new connection.
    async fn connect(&self) -> Result<Arc<Session>, PluginError> {
        let modern = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        let session = match self.config.protocol {
            McpProtocol::Handshake => self.connect_with(ClientLifecycleMode::Initialize).await,
            McpProtocol::Stateless => self.connect_with(modern).await,
            McpProtocol::Auto => {
                let auto = ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: Some(ProtocolVersion::V_2025_11_25),
                };
                match self.connect_with(auto).await {
                    Ok(session) => Ok(session),
                    // Authorization is not a matter of revisions.
                    Err(Connect::Refused(e)) => Err(Connect::Refused(e)),
                    Err(Connect::Failed(first)) => {
                        tracing::debug!(plugin = %self.config.name, "server/discover did not settle ({first}); trying the initialize handshake");
                        self.connect_with(ClientLifecycleMode::Initialize).await
                    }
                }
            }
        };
        let session = match session {
            Ok(session) => Arc::new(session),
            Err(Connect::Refused(e) | Connect::Failed(e)) => return Err(e),
        };
        self.listen_for_changes(&session);
        Ok(session)
    }

    /// A 2026-07-28 server sends its tool list changes only to a listener
    /// (`subscriptions/listen`): keep one for as long as the session lives.
    fn listen_for_changes(&self, session: &Arc<Session>) {
        let Some(info) = session.peer().peer_info() else { return };
        let announces = info.capabilities.tools.as_ref().is_some_and(|t| t.list_changed == Some(true));
        if info.protocol_version.has_initialize() || !announces {
            return;
        }
        let (peer, changed, plugin) = (session.peer().clone(), self.changed.clone(), self.config.name.clone());
        tokio::spawn(async move {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            let mut subscription = match peer.listen(filter).await {
                Ok(subscription) => subscription,
                Err(e) => {
                    tracing::debug!(plugin = %plugin, "the server takes no subscription to its tool list changes: {e}");
                    return;
                }
            };
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(notification, ServerNotification::ToolListChangedNotification(_)) {
                    changed.send_modify(|n| *n += 1);
                }
            }
        });
    }

    /// Starts or reaches the server and opens a session in `lifecycle`.
    async fn connect_with(&self, lifecycle: ClientLifecycleMode) -> Result<Session, Connect> {
        let messages = ServerMessages {
            plugin: self.config.name.clone(),
            changed: self.changed.clone(),
            calls: Arc::clone(&self.calls),
        };
        let start = |reason: String| PluginError::Start { plugin: self.config.name.clone(), reason };
        let session = match &self.config.transport {
            McpTransport::Stdio { command, args, env, cwd } => {
                let env = super::settings::resolve_env(env, &super::settings::host_environment)
                    .map_err(|e| Connect::Refused(start(e.to_string())))?;
                let cmd = plugin_command(command, args, &env, cwd.as_deref());
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| Connect::Refused(start(format!("{}: {e}", command.display()))))?;
                if let Some(stderr) = stderr {
                    drain_stderr(self.config.name.clone(), stderr, self.stderr_tail.clone());
                }
                tokio::time::timeout(SETUP_TIMEOUT, messages.serve_with_lifecycle(transport, lifecycle)).await
            }
            McpTransport::Http(server) => {
                let (transport, authorized) =
                    server.transport(&self.config.name).await.map_err(|e| Connect::Refused(start(e)))?;
                let session = match transport {
                    http::Transport::Plain(t) => {
                        tokio::time::timeout(SETUP_TIMEOUT, messages.serve_with_lifecycle(t, lifecycle)).await
                    }
                    http::Transport::Authorized(t) => {
                        tokio::time::timeout(SETUP_TIMEOUT, messages.serve_with_lifecycle(t, lifecycle)).await
                    }
                };
                self.authorized.store(authorized, std::sync::atomic::Ordering::Relaxed);
                if let Ok(Err(e)) = &session {
                    if let Some(header) = e.auth_challenge() {
                        let challenge = Challenge::from_header(header);
                        return Err(Connect::Refused(start(server.refusal(&self.config.name, authorized, &challenge))));
                    }
                }
                session
            }
        };
        match session {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(Connect::Failed(start(format!("the MCP handshake failed: {}", http::with_causes(&e))))),
            Err(_) => Err(Connect::Failed(PluginError::Timeout {
                plugin: self.config.name.clone(),
                method: "initialize".into(),
                seconds: SETUP_TIMEOUT.as_secs_f64(),
            })),
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
    /// server's questions during it (an elicitation request, up to 2025-11-25; an
    /// "input required" answer, from 2026-07-28, after which the call is sent again with
    /// the answers), and its progress sink hears its progress. The time limit covers
    /// every round.
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
        let deadline = tokio::time::Instant::now() + self.config.call_timeout;
        let timed_out = || {
            ToolResult::error(format!(
                "tool {}.{tool} timed out after {} s",
                self.config.name,
                self.config.call_timeout.as_secs_f64()
            ))
        };
        for round in 0..MAX_INPUT_ROUNDS {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let handle = match session.send_cancellable_request(request, self.request_options(&session)).await {
                Ok(handle) => handle,
                Err(e) => return self.failed(&session, &e).await,
            };
            let peers = CallPeers {
                tool: tool.to_string(),
                approver: context.approver.clone(),
                progress: context.progress.clone(),
                sampler: context.sampler.clone(),
            };
            let _in_flight = self.calls.enter(handle.progress_token.clone(), peers);
            // A call given up (timeout, cancellation, the program gone) is cancelled at the server.
            let abandoned = Abandoned { peer: handle.peer.clone(), id: Some(handle.id.clone()) };
            let result = tokio::select! {
                r = handle.await_response() => r,
                () = tokio::time::sleep_until(deadline) => return timed_out(),
                () = context.cancel.cancelled() => return ToolResult::error("the call was cancelled"),
            };
            abandoned.disarm();
            let input = match result {
                Ok(ServerResult::CallToolResult(r)) => return self.read_result(r),
                Ok(ServerResult::InputRequiredResult(input)) => input,
                Ok(_) => {
                    return ToolResult::error(format!(
                        "plugin {} answered tools/call with something other than a tool result",
                        self.config.name
                    ))
                }
                Err(e) => return self.failed(&session, &e).await,
            };
            // The server needs answers from the person behind this call (or only wants
            // the call again, with its state, after a pause that grows each round).
            let asks = input.input_requests.unwrap_or_default();
            let answers = tokio::select! {
                answers = self.answer_inputs(tool, asks, &context) => answers,
                () = tokio::time::sleep_until(deadline) => return timed_out(),
                () = context.cancel.cancelled() => return ToolResult::error("the call was cancelled"),
            };
            let answers = match answers {
                Ok(answers) => answers,
                Err(why) => return ToolResult::error(format!("plugin {}: {why}", self.config.name)),
            };
            if answers.is_empty() {
                let pause = Duration::from_millis(50 << round.min(2)).min(Duration::from_millis(250));
                tokio::time::sleep(pause).await;
            }
            params.input_responses = (!answers.is_empty()).then_some(answers);
            params.request_state = input.request_state;
        }
        ToolResult::error(format!(
            "plugin {} asked more than {MAX_INPUT_ROUNDS} rounds of questions for one call of {tool}",
            self.config.name
        ))
    }

    /// What every request to the server carries besides its own: on a 2026-07-28
    /// session, the log level (what a session's `logging/setLevel` was: its log at
    /// `info` and above reaches codemode's log during the request).
    fn request_options(&self, session: &Session) -> rmcp::service::PeerRequestOptions {
        let options = rmcp::service::PeerRequestOptions::no_options();
        let modern = session.peer().peer_info().is_some_and(|info| !info.protocol_version.has_initialize());
        if !modern {
            return options;
        }
        let mut meta = rmcp::model::RequestMetaObject::default();
        #[allow(deprecated)] // MCP's logging (SEP-2577), which servers still send.
        meta.set_log_level(rmcp::model::LoggingLevel::Info);
        options.with_meta(meta)
    }

    /// A tool result as the host reads it.
    fn read_result(&self, result: rmcp::model::CallToolResult) -> ToolResult {
        serde_json::to_value(result).and_then(serde_json::from_value::<ToolResult>).unwrap_or_else(|e| {
            ToolResult::error(format!("plugin {} returned a result this host cannot read: {e}", self.config.name))
        })
    }

    /// The answers to a 2026-07-28 server's questions for one call of `tool`: the
    /// person's, through the call's approver (elicitation); the caller's workspace as
    /// the only root (`roots/list`); a request for a model's completion
    /// (`sampling/createMessage`) to the call's sampler, the model of the MCP client
    /// that runs the program ([`client::sample`]).
    async fn answer_inputs(
        &self,
        tool: &str,
        asks: rmcp::model::InputRequests,
        context: &CallContext,
    ) -> Result<rmcp::model::InputResponses, String> {
        let mut answers = rmcp::model::InputResponses::new();
        for (key, ask) in asks {
            let answer = match ask {
                InputRequest::Elicitation(request) => {
                    let result = match &context.approver {
                        Some(approver) => {
                            client::ask_person(&self.config.name, tool.to_string(), approver, request.params).await
                        }
                        None => Ok(ElicitResult::new(ElicitationAction::Decline)),
                    };
                    let result = result.map_err(|e| format!("its question could not be asked: {}", e.message))?;
                    serde_json::to_value(result).map_err(|e| e.to_string())?
                }
                InputRequest::ListRoots(_) => {
                    let roots: Vec<Value> = context
                        .caller
                        .workspace
                        .as_deref()
                        .and_then(|w| url::Url::from_directory_path(w).ok())
                        .map(|url| serde_json::json!({ "uri": url.to_string() }))
                        .into_iter()
                        .collect();
                    serde_json::json!({ "roots": roots })
                }
                InputRequest::CreateMessage(request) => {
                    let sampler = context.sampler.clone();
                    let result = client::sample(&self.config.name, tool.to_string(), sampler, request.params).await?;
                    serde_json::to_value(result).map_err(|e| e.to_string())?
                }
                _ => return Err("it asked codemode for a kind of input that codemode does not know".into()),
            };
            answers.insert(key, answer);
        }
        Ok(answers)
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

impl PluginRuntime for McpPlugin {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn list(self: Arc<Self>) -> BoxFuture<'static, Result<Listed, String>> {
        Box::pin(async move {
            match self.list_tools(false).await {
                Ok(definitions) => {
                    let tools = remote_tools(Arc::clone(&self) as Arc<dyn RemoteCalls>, definitions);
                    Ok(Listed { tools, notes: Vec::new() })
                }
                Err(e) => Err(self.stderr_tail.explain(&e)),
            }
        })
    }

    fn retry_in(&self) -> Duration {
        self.restarts.retry_in()
    }

    fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

impl RemoteCalls for McpPlugin {
    fn call(self: Arc<Self>, tool: String, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { self.call_tool(&tool, input, context).await })
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
