//! Process plugins: any executable that speaks JSON-RPC 2.0 over its stdin and stdout
//! (the wire format is in `protocol/PLUGINS.md`).
//!
//! [`ProcessPlugin`] owns one connection at a time. It starts the process, calls
//! `initialize` and `tools/list`, then serves `tool/call`s concurrently. A reader task
//! matches answers to calls by id. When the plugin exits, crashes, writes something that
//! is not JSON-RPC, or floods its output, every call in flight fails with a clear error
//! and the connection is dropped; the next call starts a new process, after a backoff
//! that doubles while the plugin keeps failing. A call the host gives up (the program
//! ended, hit a limit, or the call timed out) is followed by `tool/cancel { id }`. The
//! host never blocks on a plugin: every wait has a timeout or a cancellation. What a
//! running call says about itself (`host/progress`) goes to that call's progress sink,
//! found by the call's request id.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use protocol::plugin::{
    ApproveResult, CallContext, HostInfo, HostRequest, InitializeParams, InitializeResult, Outgoing, PluginMessage,
    PluginNotification, PluginRequest, ProgressParams, RequestId, RpcError, SampleParams, ToolCallParams,
    ToolsListResult, PROTOCOL_VERSION,
};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::{oneshot, Mutex};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

use futures::future::BoxFuture;

use super::child::{drain_stderr, plugin_command, Restarts, StderrTail};
use super::net::NetAccess;
pub use super::runtime::PluginError;
use super::runtime::{remote_tools, Listed, PluginRuntime, RemoteCalls};
use super::settings::{host_environment, resolve_env, resolve_settings, SettingError, SettingValue};
use super::workspace::{Workspace, WorkspaceError};
use codemode_core::tool::artifacts::Artifacts;
use codemode_core::tool::{
    ApprovalQuestion, Approver, CallStatus, ProgressSink, SampleRequest, Sampler, ToolDefinition, ToolResult,
};
use plugin_format::sniff::{WORKSPACE_READ, WORKSPACE_WRITE};
use protocol::plugin::{
    ArtifactInfo, ArtifactParams, ArtifactResult, FileOp, WorkspaceEntry, WorkspaceParams, WorkspaceResult,
};

/// The longest line a plugin may write (one JSON-RPC message).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// The most a line may cost once parsed (`protocol::cost::json_cost`): a 16 MiB line of
/// tiny values would otherwise take the host hundreds of MiB to hold.
const MAX_LINE_COST: u64 = 64 * 1024 * 1024;
/// Longest question a plugin may put to a person (`host/approve`), in characters.
const MAX_APPROVAL_MESSAGE_CHARS: usize = 2000;
/// Longest line a plugin may say about a running call (`host/progress`), in characters.
const MAX_PROGRESS_MESSAGE_CHARS: usize = 2000;
/// File requests (`host/workspace`, `host/artifacts`) one plugin may have served at once:
/// each may hold a file of up to 8 MiB, several times over while it is encoded.
const MAX_FILE_REQUESTS: usize = 8;
/// How long `initialize` and `tools/list` may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(20);

/// How to start a process plugin.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    /// The plugin's name (`tools.<name>`).
    pub name: String,
    /// The executable.
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (the rest of the host's environment is not passed),
    /// each written in the configuration or read from the host's environment at start.
    pub env: Vec<(String, SettingValue)>,
    /// Settings sent in `initialize` (JavaScript plugins).
    pub settings: BTreeMap<String, SettingValue>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Longest a tool call may take before the host gives it up.
    pub call_timeout: Duration,
    /// What the plugin may fetch through the host (`host/fetch`); `None`: nothing.
    pub net: Option<Arc<NetAccess>>,
    /// The permissions its code derives (`host:workspace:read`, `host:workspace:write`),
    /// which `host/workspace` requires and the load report shows; none for a process
    /// plugin, which reaches files itself.
    pub permissions: Vec<String>,
}

type Pending = Arc<StdMutex<HashMap<u64, oneshot::Sender<Result<Value, PluginError>>>>>;
/// What serves the running `tool/call`s' own requests, by request id.
type RunningCalls = Arc<StdMutex<HashMap<u64, CallServices>>>;

/// What serves the plugin's own requests for one running `tool/call`: who approves what
/// it asks a person (`host/approve`), who answers its model calls (`host/sample`), and
/// who hears how it is going (`host/progress`), and what its file requests reach
/// (`host/workspace`, `host/artifacts`); `None` where the front end has nobody.
#[derive(Clone, Default)]
pub struct CallServices {
    /// The tool the call runs (named in questions and errors).
    pub tool: String,
    /// `host/approve`.
    pub approver: Option<Arc<dyn Approver>>,
    /// `host/sample`.
    pub sampler: Option<Arc<dyn Sampler>>,
    /// `host/progress`.
    pub reporter: Option<Arc<dyn ProgressSink>>,
    /// The call's workspace (its caller's), for `host/workspace`.
    pub workspace: Option<String>,
    /// Why the call may not work in its workspace's files, when it may not.
    pub workspace_refused: Option<String>,
    /// The workspace as the front end opened it when the request came.
    pub workspace_dir: Option<codemode_core::tool::OpenedFolder>,
    /// The session's artifacts, for `host/artifacts`.
    pub artifacts: Option<Arc<Artifacts>>,
}

impl CallServices {
    /// The services of a call from the front end's context.
    pub fn of(tool: &str, context: &codemode_core::tool::CallContext) -> Self {
        Self {
            tool: tool.to_string(),
            approver: context.approver.clone(),
            sampler: context.sampler.clone(),
            reporter: context.progress.clone(),
            workspace: context.caller.workspace.clone(),
            workspace_refused: context.caller.workspace_refused.clone(),
            workspace_dir: context.caller.workspace_dir.clone(),
            artifacts: context.artifacts.clone(),
        }
    }
}

type Stdin = Arc<Mutex<tokio::process::ChildStdin>>;

/// One running process and its reader.
struct Connection {
    stdin: Stdin,
    pending: Pending,
    calls: RunningCalls,
    next_id: AtomicU64,
    /// Cancelled when the connection is dead (and kills the process when dropped).
    dead: CancellationToken,
    /// Cancelled when the plugin said it is stopping (`host/stopping`): new calls go to
    /// a new process while the answers already on their way still arrive here.
    retired: CancellationToken,
    /// Calls that timed out since the plugin last answered anything.
    silent_timeouts: AtomicU64,
    _child: tokio::process::Child,
}

/// Calls in a row that may time out, with no answer at all in between, before the
/// plugin is taken for hung (stopped, deadlocked) and replaced by a new process.
const HUNG_AFTER_TIMEOUTS: u64 = 3;

/// A process plugin.
pub struct ProcessPlugin {
    config: ProcessConfig,
    connection: Mutex<Option<Arc<Connection>>>,
    restarts: Restarts,
    /// Notified when the plugin says its tools changed.
    changed: tokio::sync::watch::Sender<u64>,
    /// The last lines the plugin wrote on standard error (any of its processes).
    stderr_tail: StderrTail,
    /// What the plugin said it cannot honour when it last started (`initialize`'s notes).
    notes: StdMutex<Vec<String>>,
    /// Set once its process was first started: later starts are restarts.
    started_once: AtomicBool,
}

impl ProcessPlugin {
    /// A plugin that starts on first use.
    pub fn new(config: ProcessConfig) -> Arc<Self> {
        Arc::new(Self {
            config,
            connection: Mutex::new(None),
            restarts: Restarts::default(),
            changed: tokio::sync::watch::channel(0).0,
            stderr_tail: StderrTail::default(),
            notes: StdMutex::new(Vec::new()),
            started_once: AtomicBool::new(false),
        })
    }

    /// What the plugin said, when it last started, that it cannot honour, and the
    /// permissions it holds (shown to whoever enables it, in the load report).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.lock().map(|n| n.clone()).unwrap_or_default();
        notes.extend(self.config.permissions.iter().map(|p| permission_note(p)));
        notes
    }

    /// What the plugin last wrote on standard error.
    pub fn stderr_tail(&self) -> &StderrTail {
        &self.stderr_tail
    }

    /// How long until the plugin may be started again after a failure (zero: now).
    pub fn retry_in(&self) -> Duration {
        self.restarts.retry_in()
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// A receiver that changes whenever the plugin announces `host/tools.changed`.
    pub fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Asks the plugin for its tools (`tools/list`), starting it if needed (at once, or
    /// after the rest of its backoff when `wait` is true; without `wait`, a plugin still
    /// backing off fails at once).
    pub async fn list_tools(self: &Arc<Self>, wait: bool) -> Result<Vec<ToolDefinition>, PluginError> {
        let result = self.request_with(HostRequest::ToolsList, SETUP_TIMEOUT, None, wait).await?;
        serde_json::from_value::<ToolsListResult>(result).map(|r| r.tools).map_err(|e| PluginError::Gone {
            plugin: self.config.name.clone(),
            reason: format!("tools/list answered something that is not {{ tools: [Tool] }}: {e}"),
        })
    }

    /// Calls a tool (`tool/call`). A plugin failure is a failed tool result, never a panic.
    /// `services` answer what the plugin asks during the call (`host/approve`,
    /// `host/sample`) and hear its `host/progress`.
    pub async fn call_tool(
        self: &Arc<Self>,
        input: Value,
        context: CallContext,
        cancel: CancellationToken,
        services: CallServices,
    ) -> ToolResult {
        let tool = services.tool.clone();
        let request = HostRequest::ToolCall(Box::new(ToolCallParams { name: tool.clone(), input, context }));
        match self.request_serving(request, self.config.call_timeout, Some(cancel), true, Some(services)).await {
            Ok(value) => serde_json::from_value::<ToolResult>(value.clone()).unwrap_or_else(|e| {
                ToolResult::error(format!(
                    "plugin {} answered tool/call with something that is not a CallToolResult: {e}",
                    self.config.name
                ))
            }),
            Err(PluginError::Timeout { seconds, .. }) => {
                ToolResult::error(format!("tool {}.{tool} timed out after {seconds} s", self.config.name))
            }
            Err(e) => ToolResult::error(e.to_string()),
        }
    }

    /// Sends a request and waits for its answer, its timeout or its cancellation; `wait`
    /// says whether a start waits out the backoff.
    async fn request_with(
        self: &Arc<Self>,
        request: HostRequest,
        timeout: Duration,
        cancel: Option<CancellationToken>,
        wait: bool,
    ) -> Result<Value, PluginError> {
        self.request_serving(request, timeout, cancel, wait, None).await
    }

    /// [`ProcessPlugin::request_with`] for a `tool/call` whose `services` serve the
    /// plugin's own requests for it while it runs.
    async fn request_serving(
        self: &Arc<Self>,
        request: HostRequest,
        timeout: Duration,
        cancel: Option<CancellationToken>,
        wait: bool,
        services: Option<CallServices>,
    ) -> Result<Value, PluginError> {
        let method = request.method();
        let connection = self.connected(wait).await?;
        let id = connection.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        connection.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id, tx);
        let _serving = services.map(|services| {
            connection.calls.lock().unwrap_or_else(|p| p.into_inner()).insert(id, services);
            ForgetCall { calls: Arc::clone(&connection.calls), id }
        });
        if let Err(e) = self.write(&connection, &Outgoing::HostRequest(RequestId::Number(id), request)).await {
            connection.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            return Err(e);
        }
        // From here on, a call given up for any reason (timeout, cancellation, or the
        // caller dropping this future because its program ended) sends tool/cancel.
        let mut guard = CancelOnDrop { plugin: Arc::clone(self), connection: Arc::clone(&connection), id, armed: true };
        let cancelled = async {
            match &cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            answer = rx => answer.unwrap_or_else(|_| Err(PluginError::Gone { plugin: self.config.name.clone(), reason: "the connection closed".into() })),
            () = tokio::time::sleep(timeout) => Err(PluginError::Timeout { plugin: self.config.name.clone(), method: method.into(), seconds: timeout.as_secs_f64() }),
            () = cancelled => Err(PluginError::Cancelled),
        };
        guard.armed = matches!(outcome, Err(PluginError::Timeout { .. } | PluginError::Cancelled));
        drop(guard);
        match &outcome {
            Err(PluginError::Timeout { .. }) => {
                let silent = connection.silent_timeouts.fetch_add(1, Ordering::AcqRel) + 1;
                if silent >= HUNG_AFTER_TIMEOUTS && !connection.dead.is_cancelled() {
                    tracing::warn!("plugin {}: {silent} calls in a row timed out without any answer; it is taken for hung and restarted", self.config.name);
                    connection.dead.cancel();
                }
            }
            Ok(_) | Err(PluginError::Rpc { .. }) => connection.silent_timeouts.store(0, Ordering::Release),
            Err(_) => {}
        }
        outcome.map_err(|e| match e {
            PluginError::Rpc { plugin, message, .. } => PluginError::Rpc { plugin, method: method.into(), message },
            other => other,
        })
    }

    async fn write(&self, connection: &Connection, message: &Outgoing) -> Result<(), PluginError> {
        write_line(&connection.stdin, &connection.dead, message)
            .await
            .map_err(|reason| PluginError::Gone { plugin: self.config.name.clone(), reason })
    }

    /// The live connection, or a new one (after the backoff, if the last one failed:
    /// waited out when `wait`, refused at once otherwise).
    async fn connected(self: &Arc<Self>, wait: bool) -> Result<Arc<Connection>, PluginError> {
        let mut slot = self.connection.lock().await;
        if let Some(c) = slot.as_ref() {
            if !c.dead.is_cancelled() && !c.retired.is_cancelled() {
                return Ok(Arc::clone(c));
            }
            *slot = None;
        }
        self.restarts.before_start(&self.config.name, wait).await?;
        match self.start().await {
            Ok(c) => {
                *slot = Some(Arc::clone(&c));
                Ok(c)
            }
            Err(e) => {
                self.restarts.failed();
                // What the plugin said on its way out is the most useful part of why.
                self.stderr_tail.settle(Duration::from_millis(500)).await;
                Err(match e {
                    PluginError::Gone { plugin, reason } => {
                        PluginError::Gone { plugin, reason: self.stderr_tail.explain(reason) }
                    }
                    PluginError::Start { plugin, reason } => {
                        PluginError::Start { plugin, reason: self.stderr_tail.explain(reason) }
                    }
                    other => other,
                })
            }
        }
    }

    async fn start(self: &Arc<Self>) -> Result<Arc<Connection>, PluginError> {
        let name = self.config.name.clone();
        let unset = |e: SettingError| PluginError::Start { plugin: name.clone(), reason: e.to_string() };
        let env = resolve_env(&self.config.env, &host_environment).map_err(unset)?;
        let settings = resolve_settings(&self.config.settings, &host_environment).map_err(unset)?;
        let mut command = plugin_command(&self.config.command, &self.config.args, &env, self.config.cwd.as_deref());
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| PluginError::Start {
            plugin: name.clone(),
            reason: format!("{}: {e}", self.config.command.display()),
        })?;
        if self.started_once.swap(true, Ordering::Relaxed) {
            codemode_core::telemetry::plugin_restarted(&name);
        }
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(PluginError::Start { plugin: name, reason: "its standard streams are missing".into() });
        };
        let connection = Arc::new(Connection {
            stdin: Arc::new(Mutex::new(stdin)),
            pending: Arc::new(StdMutex::new(HashMap::new())),
            calls: Arc::default(),
            next_id: AtomicU64::new(1),
            dead: CancellationToken::new(),
            retired: CancellationToken::new(),
            silent_timeouts: AtomicU64::new(0),
            _child: child,
        });
        drain_stderr(name.clone(), stderr, self.stderr_tail.clone());
        tokio::spawn(read_answers(
            Arc::downgrade(self),
            name.clone(),
            FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_LINE_BYTES)),
            Arc::clone(&connection.pending),
            PluginRequests {
                stdin: Arc::clone(&connection.stdin),
                calls: Arc::clone(&connection.calls),
                permissions: self.config.permissions.clone(),
                file_requests: Arc::new(tokio::sync::Semaphore::new(MAX_FILE_REQUESTS)),
                net: self.config.net.clone(),
                running: Arc::default(),
                dead: connection.dead.clone(),
                retired: connection.retired.clone(),
            },
            Instant::now(),
        ));
        // Handshake on the new connection directly (not through `connected`, which holds the slot).
        let init = HostRequest::Initialize(InitializeParams {
            protocol_version: PROTOCOL_VERSION.into(),
            host: HostInfo { name: "codemode".into(), version: env!("CARGO_PKG_VERSION").into() },
            settings,
        });
        let id = connection.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        connection.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id, tx);
        self.write(&connection, &Outgoing::HostRequest(RequestId::Number(id), init)).await?;
        match tokio::time::timeout(SETUP_TIMEOUT, rx).await {
            Ok(Ok(Err(PluginError::Rpc { plugin, message, .. }))) => {
                Err(PluginError::Rpc { plugin, method: "initialize".into(), message })
            }
            Ok(Ok(Ok(answer))) => {
                // What the plugin's definitions ask for that it cannot honour.
                let notes = serde_json::from_value::<InitializeResult>(answer).map(|r| r.notes).unwrap_or_default();
                for note in &notes {
                    tracing::info!("plugin {name}: {note}");
                }
                if let Ok(mut kept) = self.notes.lock() {
                    *kept = notes;
                }
                Ok(connection)
            }
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(PluginError::Gone { plugin: name, reason: "it exited during initialize".into() }),
            Err(_) => Err(PluginError::Timeout {
                plugin: name,
                method: "initialize".into(),
                seconds: SETUP_TIMEOUT.as_secs_f64(),
            }),
        }
    }
}

impl PluginRuntime for ProcessPlugin {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn list(self: Arc<Self>) -> BoxFuture<'static, Result<Listed, String>> {
        Box::pin(async move {
            match self.list_tools(false).await {
                Ok(definitions) => {
                    let tools = remote_tools(Arc::clone(&self) as Arc<dyn RemoteCalls>, definitions);
                    Ok(Listed { tools, notes: self.notes() })
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

impl RemoteCalls for ProcessPlugin {
    fn call(
        self: Arc<Self>,
        tool: String,
        input: Value,
        context: codemode_core::tool::CallContext,
    ) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let services = CallServices::of(&tool, &context);
            self.call_tool(input, context.wire(), context.cancel.clone(), services).await
        })
    }
}

/// Forgets a call's services when the call is over.
struct ForgetCall {
    calls: RunningCalls,
    id: u64,
}

impl Drop for ForgetCall {
    fn drop(&mut self) {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}

/// Sends `tool/cancel` for a request that was given up, when dropped armed.
struct CancelOnDrop {
    plugin: Arc<ProcessPlugin>,
    connection: Arc<Connection>,
    id: u64,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.connection.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
        if self.connection.dead.is_cancelled() {
            return;
        }
        let (plugin, connection, id) = (Arc::clone(&self.plugin), Arc::clone(&self.connection), self.id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = plugin.write(&connection, &Outgoing::CancelCall(RequestId::Number(id))).await;
            });
        }
    }
}

/// Reads the plugin's output: answers complete calls; `host/tools.changed` notifies;
/// the plugin's own requests (`host/fetch`, `host/cancel`) are served on the side;
/// a line that is not JSON, or is too long, ends the connection and fails every call
/// in flight.
async fn read_answers(
    plugin: std::sync::Weak<ProcessPlugin>,
    name: String,
    mut lines: FramedRead<tokio::process::ChildStdout, LinesCodec>,
    pending: Pending,
    requests: PluginRequests,
    started: Instant,
) {
    let dead = requests.dead.clone();
    let reason = loop {
        let line = tokio::select! {
            line = lines.next() => line,
            () = dead.cancelled() => break "the connection was closed".to_string(),
        };
        let line = match line {
            None => break "it exited".to_string(),
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                break format!("it wrote a line longer than {MAX_LINE_BYTES} bytes")
            }
            Some(Err(e)) => break format!("reading its output failed: {e}"),
            Some(Ok(line)) if line.trim().is_empty() => continue,
            Some(Ok(line)) => line,
        };
        let cost = protocol::cost::json_cost(&line);
        if cost > MAX_LINE_COST {
            break format!(
                "it wrote a message too large to hold: {} once parsed (at most {})",
                protocol::cost::mib(cost),
                protocol::cost::mib(MAX_LINE_COST)
            );
        }
        let message = match PluginMessage::parse(&line) {
            Ok(m) => m,
            Err((Some(id), why)) => {
                requests.reply(id, Err(RpcError::new(why)));
                continue;
            }
            Err((None, _)) => {
                break format!(
                    "it wrote something that is not JSON-RPC: {:?}",
                    line.chars().take(80).collect::<String>()
                )
            }
        };
        match message {
            PluginMessage::Response(id, answer) => {
                let RequestId::Number(id) = id else { continue };
                let answer = answer.map_err(|error| PluginError::Rpc {
                    plugin: name.clone(),
                    method: String::new(),
                    message: error.message,
                });
                if let Some(waiter) = pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id) {
                    let _ = waiter.send(answer);
                }
            }
            PluginMessage::Notification(PluginNotification::ToolsChanged) => {
                if let Some(plugin) = plugin.upgrade() {
                    plugin.changed.send_modify(|n| *n += 1);
                }
            }
            PluginMessage::Notification(PluginNotification::Progress(params)) => requests.progressed(&name, params),
            PluginMessage::Notification(notification) => requests.notified(notification),
            PluginMessage::Request(id, request) => requests.serve(&name, id, request),
            PluginMessage::UnknownRequest(id, method) => {
                requests.reply(id, Err(RpcError::unknown_method(format!("the codemode host does not serve {method}"))))
            }
            PluginMessage::Other(method) => tracing::debug!("plugin {name}: ignored the notification {method}"),
        }
    };
    dead.cancel();
    // A plugin dropped by the host (shutting down) is expected to go away quietly.
    if plugin.strong_count() > 0 {
        tracing::warn!("plugin {name}: {reason}");
    }
    let waiters: Vec<_> = pending.lock().unwrap_or_else(|p| p.into_inner()).drain().collect();
    if !waiters.is_empty() {
        // What the plugin said on its way out helps whoever reads the failure.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let explained = plugin.upgrade().map_or_else(|| reason.clone(), |p| p.stderr_tail.explain(&reason));
    for (_, waiter) in waiters {
        let _ = waiter.send(Err(PluginError::Gone { plugin: name.clone(), reason: explained.clone() }));
    }
    if let Some(plugin) = plugin.upgrade() {
        plugin.restarts.failed_after(started.elapsed());
    }
}

/// Requests and notifications the plugin sends the host (`host/fetch`, `host/cancel`).
struct PluginRequests {
    stdin: Stdin,
    /// What serves the running calls' `host/approve`, `host/sample` and `host/progress`.
    calls: RunningCalls,
    /// The permissions the plugin holds (`host:workspace:*`).
    permissions: Vec<String>,
    /// Turns for file requests being served ([`MAX_FILE_REQUESTS`]).
    file_requests: Arc<tokio::sync::Semaphore>,
    net: Option<Arc<NetAccess>>,
    /// Requests being served, by id, so `host/cancel` can stop them.
    running: Arc<StdMutex<HashMap<RequestId, CancellationToken>>>,
    /// The connection's end.
    dead: CancellationToken,
    /// Set when the plugin announces it is stopping.
    retired: CancellationToken,
}

impl PluginRequests {
    /// A notification from the plugin (besides `host/tools.changed`).
    fn notified(&self, notification: PluginNotification) {
        match notification {
            PluginNotification::Stopping => self.retired.cancel(),
            PluginNotification::Cancel(id) => {
                if let Some(token) = self.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&id) {
                    token.cancel();
                }
            }
            PluginNotification::ToolsChanged | PluginNotification::Progress(_) => {}
        }
    }

    /// `host/progress`: what a running call says about itself, to that call's progress
    /// sink (the line cut to [`MAX_PROGRESS_MESSAGE_CHARS`]); a call that is not running,
    /// or that nobody watches, is ignored.
    fn progressed(&self, plugin: &str, params: ProgressParams) {
        let RequestId::Number(call) = params.call else { return };
        let running = self.running_call(&RequestId::Number(call));
        let Some((tool, sink)) = running.and_then(|c| Some((c.tool, c.reporter?))) else {
            tracing::debug!("plugin {plugin}: host/progress for tool/call {call}, which is not running");
            return;
        };
        let message = params.message.chars().take(MAX_PROGRESS_MESSAGE_CHARS).collect();
        sink.status(CallStatus { plugin: plugin.to_string(), tool, message, details: params.details });
    }

    /// Starts serving one request of the plugin's; never blocks the reader.
    fn serve(&self, plugin: &str, id: RequestId, request: PluginRequest) {
        match request {
            PluginRequest::Fetch(params) => {
                let Some(net) = self.net.clone() else {
                    return self.reply(
                        id,
                        Err(RpcError::new(format!("api.net.fetch: plugin {plugin} has no network permission"))),
                    );
                };
                let token = self.dead.child_token();
                self.running.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), token.clone());
                let (stdin, running, dead) = (Arc::clone(&self.stdin), Arc::clone(&self.running), self.dead.clone());
                tokio::spawn(async move {
                    let answer = tokio::select! {
                        answer = net.fetch(params) => answer,
                        () = token.cancelled() => return,
                    };
                    running.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                    // The budget is given back once the answer is written.
                    let (answer, _held) = match answer {
                        Ok((value, held)) => (Ok(serde_json::to_value(value).unwrap_or(Value::Null)), Some(held)),
                        Err(why) => (Err(RpcError::new(why)), None),
                    };
                    let _ = write_line(&stdin, &dead, &Outgoing::Answer(id, answer)).await;
                });
            }
            PluginRequest::Sample(params) => self.sample(plugin, id, params),
            PluginRequest::Approve(params) => {
                let running = self.running_call(&params.call).map(|c| (c.tool, c.approver));
                let refused = |reason: String| ApproveResult { approved: false, reason: Some(reason) };
                let (tool, approver) = match running {
                    None => {
                        let answer = refused(format!(
                            "tool/call {} is not running, so there is nothing to approve",
                            params.call
                        ));
                        return self.reply(id, Ok(serde_json::to_value(answer).unwrap_or(Value::Null)));
                    }
                    Some((_, None)) => {
                        let answer = refused("nobody can be asked here: a person approves through the MCP server's client (codemode mcp or codemode serve)".into());
                        return self.reply(id, Ok(serde_json::to_value(answer).unwrap_or(Value::Null)));
                    }
                    Some((tool, Some(approver))) => (tool, approver),
                };
                // What the person reads is the plugin's text: kept short enough to read.
                let message: String = params.message.chars().take(MAX_APPROVAL_MESSAGE_CHARS).collect();
                let question = ApprovalQuestion {
                    plugin: plugin.to_string(),
                    tool,
                    message,
                    details: params.details,
                    ..ApprovalQuestion::default()
                };
                let token = self.dead.child_token();
                self.running.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), token.clone());
                let (stdin, running, dead) = (Arc::clone(&self.stdin), Arc::clone(&self.running), self.dead.clone());
                tokio::spawn(async move {
                    let answer = tokio::select! {
                        answer = approver.ask(question) => answer,
                        () = token.cancelled() => return,
                    };
                    running.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                    let answer = Ok(serde_json::to_value(answer.wire()).unwrap_or(Value::Null));
                    let _ = write_line(&stdin, &dead, &Outgoing::Answer(id, answer)).await;
                });
            }
            PluginRequest::Workspace(params) => {
                let Some(turn) = self.file_turn(plugin, &id) else { return };
                let services = self.running_call(&params.call);
                let (plugin, permissions) = (plugin.to_string(), self.permissions.clone());
                self.reply_blocking(id, move || {
                    let _turn = turn;
                    let answer = serve_workspace(&plugin, &permissions, services, &params);
                    answer.map(|r| serde_json::to_value(r).unwrap_or(Value::Null)).map_err(RpcError::new)
                });
            }
            PluginRequest::Artifacts(params) => {
                let Some(turn) = self.file_turn(plugin, &id) else { return };
                let services = self.running_call(&params.call);
                self.reply_blocking(id, move || {
                    let _turn = turn;
                    let answer = serve_artifacts(services, params);
                    answer.map(|r| serde_json::to_value(r).unwrap_or(Value::Null)).map_err(RpcError::new)
                });
            }
        }
    }

    /// `host/sample`: the model call of the running `tool/call` it names, through that
    /// call's sampler (the MCP client's model); an error when the call is not running or
    /// its front end has no model.
    fn sample(&self, plugin: &str, id: RequestId, params: SampleParams) {
        let running = self.running_call(&params.call).map(|c| (c.tool, c.sampler));
        let api = params.api.clone().unwrap_or_else(|| protocol::plugin::method::SAMPLE.to_string());
        let (tool, sampler) = match running {
            None => {
                let why = format!("{api}: tool/call {} is not running, so there is no client to ask", params.call);
                return self.reply(id, Err(RpcError::new(why)));
            }
            Some((_, None)) => {
                let why = format!("{api} needs a model, and codemode has none of its own: it asks the model of the MCP client that runs the program (MCP sampling), and this program has no MCP client (codemode run); run it through codemode mcp or codemode serve");
                return self.reply(id, Err(RpcError::new(why)));
            }
            Some((tool, Some(sampler))) => (tool, sampler),
        };
        let request = SampleRequest { plugin: plugin.to_string(), tool, params };
        let token = self.dead.child_token();
        self.running.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), token.clone());
        let (stdin, running, dead) = (Arc::clone(&self.stdin), Arc::clone(&self.running), self.dead.clone());
        tokio::spawn(async move {
            let answer = tokio::select! {
                answer = sampler.sample(request) => answer,
                () = token.cancelled() => return,
            };
            running.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            let answer =
                answer.map(|result| serde_json::to_value(result).unwrap_or(Value::Null)).map_err(RpcError::new);
            let _ = write_line(&stdin, &dead, &Outgoing::Answer(id, answer)).await;
        });
    }

    /// A turn for one file request; `None` (the request answered with why) when the
    /// plugin has [`MAX_FILE_REQUESTS`] being served already.
    fn file_turn(&self, plugin: &str, id: &RequestId) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let turn = Arc::clone(&self.file_requests).try_acquire_owned().ok();
        if turn.is_none() {
            let why = format!("plugin {plugin} has {MAX_FILE_REQUESTS} file requests (host.workspace, ctx.artifacts) being served already: await each one before starting many more");
            self.reply(id.clone(), Err(RpcError::new(why)));
        }
        turn
    }

    /// The services of the running `tool/call` with request id `call`.
    fn running_call(&self, call: &RequestId) -> Option<CallServices> {
        match call {
            RequestId::Number(call) => self.calls.lock().unwrap_or_else(|p| p.into_inner()).get(call).cloned(),
            RequestId::Text(_) => None,
        }
    }

    /// Answers with what `work` gives, done on the blocking pool (file work).
    fn reply_blocking(&self, id: RequestId, work: impl FnOnce() -> Result<Value, RpcError> + Send + 'static) {
        let (stdin, dead) = (Arc::clone(&self.stdin), self.dead.clone());
        tokio::spawn(async move {
            let answer = tokio::task::spawn_blocking(work)
                .await
                .unwrap_or_else(|e| Err(RpcError::new(format!("the host failed while serving it: {e}"))));
            let _ = write_line(&stdin, &dead, &Outgoing::Answer(id, answer)).await;
        });
    }

    fn reply(&self, id: RequestId, answer: Result<Value, RpcError>) {
        let (stdin, dead) = (Arc::clone(&self.stdin), self.dead.clone());
        tokio::spawn(async move {
            let _ = write_line(&stdin, &dead, &Outgoing::Answer(id, answer)).await;
        });
    }
}

/// The load report's line for a permission the plugin holds.
fn permission_note(permission: &str) -> String {
    match permission {
        WORKSPACE_WRITE => format!("permission {permission}: can write the agent's files (host.workspace.write, beneath the session's workspace)"),
        WORKSPACE_READ => format!("permission {permission}: can read the agent's files (host.workspace.read and list, beneath the session's workspace)"),
        other => format!("permission {other}"),
    }
}

/// `host/workspace`: the file work of one request, beneath the call's workspace, when
/// the plugin holds the permission (`call`: `None` when the call is not running).
fn serve_workspace(
    plugin: &str,
    permissions: &[String],
    call: Option<CallServices>,
    params: &WorkspaceParams,
) -> Result<WorkspaceResult, String> {
    let (op, needs) = match params.op {
        FileOp::Read => ("read", WORKSPACE_READ),
        FileOp::Write => ("write", WORKSPACE_WRITE),
        FileOp::List => ("list", WORKSPACE_READ),
    };
    let member = format!("host.workspace.{op}");
    let Some(call) = call else {
        return Err(format!("{member}: tool/call {} is not running, so it has no workspace", params.call));
    };
    if !permissions.iter().any(|p| p == needs) {
        return Err(format!("{member}: plugin {plugin} does not hold the permission {needs}: codemode derives it from the plugin's own code (a call of {member} written in it) and shows it when the plugin is enabled"));
    }
    if let Some(why) = call.workspace_refused {
        return Err(format!("{member}: {why}"));
    }
    let root = call.workspace.ok_or_else(|| format!("{member}: {}", WorkspaceError::NoWorkspace))?;
    let failed = |e: WorkspaceError| format!("{member}: {e}");
    let root = std::path::Path::new(&root);
    let workspace = match &call.workspace_dir {
        Some(dir) => Workspace::opened(root, dir.fd()),
        None => Workspace::open(root),
    }
    .map_err(failed)?;
    Ok(match params.op {
        FileOp::Read => {
            WorkspaceResult { content: Some(workspace.read(&params.path).map_err(failed)?), ..Default::default() }
        }
        FileOp::Write => {
            let content = params.content.as_deref().unwrap_or_default();
            let written = workspace.write(&params.path, content.as_bytes()).map_err(failed)?;
            WorkspaceResult { bytes: Some(written as u64), ..Default::default() }
        }
        FileOp::List => {
            let entries = workspace.list(&params.path).map_err(failed)?;
            let entries = entries.into_iter().map(|e| WorkspaceEntry { name: e.name, kind: e.kind.into() }).collect();
            WorkspaceResult { entries: Some(entries), ..Default::default() }
        }
    })
}

/// `host/artifacts`: the session's artifacts, for a running call.
fn serve_artifacts(call: Option<CallServices>, mut params: ArtifactParams) -> Result<ArtifactResult, String> {
    use base64::Engine as _;
    let base64 = base64::engine::general_purpose::STANDARD;
    let member = match params.op {
        FileOp::Read => "ctx.artifacts.read",
        FileOp::Write => "ctx.artifacts.write",
        FileOp::List => "ctx.artifacts.list",
    };
    let Some(call) = call else {
        return Err(format!("{member}: tool/call {} is not running, so it has no session", params.call));
    };
    let Some(store) = call.artifacts else {
        return Err(format!("{member}: this front end keeps no artifacts: they are kept for an MCP session (codemode mcp or codemode serve), whose agent receives them as resources"));
    };
    let info = |a: &codemode_core::tool::artifacts::Artifact| ArtifactInfo {
        path: a.path.clone(),
        uri: a.uri.clone(),
        mime_type: a.mime_type.clone(),
        size: a.bytes.len() as u64,
    };
    let path = || params.path.clone().ok_or_else(|| format!("{member}: a path is required"));
    Ok(match params.op {
        FileOp::Write => {
            let path = path()?;
            // The content is moved, not copied, into the store.
            let (bytes, is_text) = match (params.text.take(), params.base64.take()) {
                (Some(text), _) => (text.into_bytes(), true),
                (None, Some(encoded)) => {
                    (base64.decode(encoded).map_err(|e| format!("{member}: the content is not base64: {e}"))?, false)
                }
                (None, None) => return Err(format!("{member}: content is required, a string or a Uint8Array")),
            };
            let written =
                store.write(&path, bytes, is_text, params.mime_type.clone()).map_err(|e| format!("{member}: {e}"))?;
            ArtifactResult { artifact: Some(info(&written)), ..Default::default() }
        }
        FileOp::Read => {
            let read = store.read(&path()?).map_err(|e| format!("{member}: {e}"))?;
            let text = read.is_text.then(|| String::from_utf8_lossy(&read.bytes).into_owned());
            let encoded = (!read.is_text).then(|| base64.encode(&read.bytes));
            ArtifactResult { artifact: Some(info(&read)), text, base64: encoded, ..Default::default() }
        }
        FileOp::List => {
            ArtifactResult { artifacts: Some(store.list().iter().map(info).collect()), ..Default::default() }
        }
    })
}

/// Writes one message line to the plugin. A plugin that stops reading (the write fails,
/// or does not finish in time, possibly after part of the line) ends the connection:
/// nothing written after a partial line could be read correctly. `Err` says why.
async fn write_line(stdin: &Stdin, dead: &CancellationToken, message: &Outgoing) -> Result<(), String> {
    let mut line = message.to_line();
    line.push('\n');
    let written =
        tokio::time::timeout(SETUP_TIMEOUT, async { stdin.lock().await.write_all(line.as_bytes()).await }).await;
    let failure = match written {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(e)) => format!("writing to it failed: {e}"),
        Err(_) => "it stopped reading its input".to_string(),
    };
    dead.cancel();
    Err(failure)
}
