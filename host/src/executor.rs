//! The executor: runs one program per call, each in its own worker.
//!
//! [`Executor::run`] is the whole flow for one program:
//! 1. open a channel (a socket pair) and launch a worker on it ([`crate::launcher`]);
//! 2. send the program with its limits and the catalog's tool names;
//! 3. serve the worker until it finishes: each tool call runs concurrently as its own
//!    task and is answered as soon as it is done; console output is kept up to the cap;
//! 4. stop at the outcome, the wall-clock limit, or the first protocol violation;
//! 5. cancel in-flight tool calls, kill and reap the worker, and build the [`Outcome`].
//!
//! Nothing a worker does can take the host down: a crash, a hang, a flood or garbage on
//! the channel ends that program with its own outcome, and the next program runs in a
//! new worker.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use protocol::cost::{json_cost, mib};
use protocol::worker::WorkerExit;
use protocol::{ConsoleLevel, HostChannel, HostToWorker, StartProgram, ToolAnswer, WorkerOutcome, WorkerToHost, MAX_FRAME_BYTES};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::catalog::{CallContext, Caller, Catalog, Tool};
use crate::launcher::{LaunchError, LaunchMode, Launcher, SandboxPolicy};
use crate::limits::{LimitError, Limits};
use crate::outcome::{Outcome, OutcomeKind};
use crate::worker_process::ExitStatus;


/// Why an executor could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// A default limit is out of range.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// Workers cannot be started.
    #[error(transparent)]
    Launch(#[from] LaunchError),
}

/// Builds an [`Executor`].
#[derive(Debug, Default)]
pub struct ExecutorBuilder {
    worker: Option<PathBuf>,
    mode: LaunchMode,
    limits: Limits,
    catalog: Catalog,
    busy_poll: Option<Duration>,
    sandbox: SandboxPolicy,
    tool_bytes_budget: Option<u64>,
}

/// The tool data all programs together may have in flight by default (each program also
/// has its own [`Limits::tool_bytes_in_flight`]): what bounds the host's memory when
/// many programs send large inputs at once.
pub const DEFAULT_TOOL_BYTES_BUDGET: u64 = 64 * 1024 * 1024;

/// Tool data in flight across every program of one executor.
#[derive(Debug)]
struct SharedToolBudget {
    limit: u64,
    used: AtomicU64,
}

impl SharedToolBudget {
    /// Takes `cost`, or says how much is in use.
    fn take(&self, cost: u64) -> Result<(), u64> {
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            if used.saturating_add(cost) > self.limit {
                return Err(used);
            }
            match self.used.compare_exchange_weak(used, used + cost, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(()),
                Err(now) => used = now,
            }
        }
    }

    fn give_back(&self, cost: u64) {
        self.used.fetch_sub(cost, Ordering::AcqRel);
    }
}

/// Default busy-poll budget: long enough to catch an in-process tool's answer, short
/// enough that a slow tool wastes little CPU.
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(60);

impl ExecutorBuilder {
    /// How long host and worker busy-poll for the other side's next message before they
    /// sleep (default [`DEFAULT_BUSY_POLL`]; zero turns it off). Waking a sleeping thread
    /// costs tens of microseconds on small VMs, which dominates a tool call's round trip.
    pub fn busy_poll(mut self, budget: Duration) -> Self {
        self.busy_poll = Some(budget);
        self
    }
    /// The `sandbox-worker` binary (default: [`default_worker_path`]).
    pub fn worker_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.worker = Some(path.into());
        self
    }
    /// How workers start (default: [`LaunchMode::Auto`]).
    pub fn launch_mode(mut self, mode: LaunchMode) -> Self {
        self.mode = mode;
        self
    }
    /// The tool data all programs together may have in flight (default
    /// [`DEFAULT_TOOL_BYTES_BUDGET`]), on top of each program's own limit.
    pub fn tool_bytes_budget(mut self, bytes: u64) -> Self {
        self.tool_bytes_budget = Some(bytes);
        self
    }
    /// Whether every sandbox layer must apply (default: [`SandboxPolicy::Required`]).
    pub fn sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = policy;
        self
    }
    /// The default limits of every program.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    /// The tools programs may call.
    pub fn catalog(mut self, catalog: Catalog) -> Self {
        self.catalog = catalog;
        self
    }
    /// Checks the limits, finds the worker and (in template mode) starts the template.
    pub async fn build(self) -> Result<Executor, ExecutorError> {
        self.limits.validate()?;
        let worker = self.worker.unwrap_or_else(default_worker_path);
        let launcher = Launcher::new(worker, self.mode, self.sandbox).await?;
        Ok(Executor {
            launcher,
            limits: self.limits,
            busy_poll: self.busy_poll.unwrap_or(DEFAULT_BUSY_POLL),
            catalog: Arc::new(RwLock::new(Arc::new(self.catalog))),
            catalog_version: tokio::sync::watch::channel(0).0,
            next_program: AtomicU64::new(1),
            tool_budget: Arc::new(SharedToolBudget { limit: self.tool_bytes_budget.unwrap_or(DEFAULT_TOOL_BYTES_BUDGET), used: AtomicU64::new(0) }),
        })
    }
}

/// The `sandbox-worker` binary: `$CODEMODE_WORKER`, else next to the current executable
/// (or one level up, for test binaries under `target/*/deps`).
pub fn default_worker_path() -> PathBuf {
    if let Some(p) = std::env::var_os("CODEMODE_WORKER") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let beside = dir.join("sandbox-worker");
    if beside.exists() {
        return beside;
    }
    dir.parent().map(|p| p.join("sandbox-worker")).filter(|p| p.exists()).unwrap_or(beside)
}

/// Runs programs. Cheap to share behind an `Arc`; programs may run concurrently.
pub struct Executor {
    launcher: Launcher,
    limits: Limits,
    busy_poll: Duration,
    catalog: Arc<RwLock<Arc<Catalog>>>,
    catalog_version: tokio::sync::watch::Sender<u64>,
    next_program: AtomicU64,
    tool_budget: Arc<SharedToolBudget>,
}

/// What a caller may add around each tool call of a program: a check before it (for
/// approvals) and a report after it (for progress).
pub trait CallHooks: Send + Sync + 'static {
    /// Runs before the call; an `Err` rejects it in the program with that message, and
    /// the tool never runs.
    fn before(&self, plugin: &str, tool: &Tool, input: &Value) -> BoxFuture<'static, Result<(), String>>;
    /// Runs when the call finished; `ok` is false for a failed or rejected call.
    fn after(&self, plugin: &str, tool: &str, ok: bool);
}

impl Executor {
    /// Starts building an executor.
    pub fn builder() -> ExecutorBuilder {
        ExecutorBuilder::default()
    }

    /// The default limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// How workers are started (resolved, never `Auto`).
    pub fn launch_mode(&self) -> LaunchMode {
        self.launcher.mode()
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Replaces the catalog; programs that start later see the new one, and every
    /// [`Executor::watch_catalog`] receiver is told.
    pub fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(catalog);
        self.catalog_version.send_modify(|v| *v += 1);
    }

    /// A receiver that changes whenever the catalog is replaced.
    pub fn watch_catalog(&self) -> tokio::sync::watch::Receiver<u64> {
        self.catalog_version.subscribe()
    }

    /// The template's pid, in template mode.
    pub async fn template_pid(&self) -> Option<i32> {
        self.launcher.template_pid().await
    }

    /// Runs a program under the default limits.
    pub async fn run(&self, code: &str) -> Outcome {
        self.run_with_limits(code, self.limits).await
    }

    /// Runs a program under `limits`.
    pub async fn run_with_limits(&self, code: &str, limits: Limits) -> Outcome {
        self.run_cancellable(code, limits, CancellationToken::new()).await
    }

    /// Runs a program under `limits`; cancelling `cancel` stops it at once (the worker is
    /// killed and in-flight tool calls are cancelled).
    pub async fn run_cancellable(&self, code: &str, limits: Limits, cancel: CancellationToken) -> Outcome {
        self.run_as(code, limits, cancel, Caller::default()).await
    }

    /// Runs a program on behalf of `caller` (passed to every tool call's context), under
    /// `limits`; cancelling `cancel` stops it at once.
    pub async fn run_as(&self, code: &str, limits: Limits, cancel: CancellationToken, caller: Caller) -> Outcome {
        self.run_hooked(code, limits, cancel, caller, None).await
    }

    /// [`Executor::run_as`], with `hooks` around each of the program's tool calls
    /// (approvals before, progress after).
    pub async fn run_hooked(&self, code: &str, limits: Limits, cancel: CancellationToken, caller: Caller, hooks: Option<Arc<dyn CallHooks>>) -> Outcome {
        let started = Instant::now();
        let program = self.next_program.fetch_add(1, Ordering::Relaxed);
        let span = tracing::debug_span!("program", id = program);
        let _enter = span.enter();
        if let Err(e) = limits.validate() {
            return internal(started, e.to_string());
        }
        if code.trim().is_empty() {
            return failed(started, "SyntaxError", "the program is empty: write the body of an async function (statements, with `return` for the value) or one expression such as `async (tools) => ...`");
        }
        let catalog = self.catalog();
        let (mut process, host_end) = match self.launcher.launch().await {
            Ok(launched) => launched,
            Err(e) => return internal(started, e.to_string()),
        };
        tracing::debug!(pid = process.pid(), "worker launched");
        let scope = CallScope { catalog, current: Arc::clone(&self.catalog), caller: Arc::new(caller), hooks };
        let mut session = Session::new(scope, limits, self.busy_poll, cancel.child_token(), Arc::clone(&self.tool_budget));
        // Serve on a runtime worker thread: that thread also polls the socket, so a
        // message wakes the session directly instead of through a second thread.
        // Dropping the serve future drops every in-flight tool call; the token tells
        // the tools that their calls were given up.
        let code = code.to_string();
        let served = tokio::spawn(async move {
            let ended = session.serve(host_end, &code).await;
            session.cancel.cancel();
            (session, ended)
        })
        .await;
        let (session, ended) = match served {
            Ok(done) => done,
            Err(e) => {
                process.kill();
                let _ = process.wait().await;
                return internal(started, format!("serving the program failed: {e}"));
            }
        };
        if !matches!(ended, Ended::Disconnected(_)) {
            process.kill();
        }
        // A worker that closed its channel is dying on its own: give it a moment so the
        // outcome can name the real cause, then make sure.
        let status = match tokio::time::timeout(std::time::Duration::from_millis(500), process.wait()).await {
            Ok(status) => status,
            Err(_) => {
                process.kill();
                process.wait().await
            }
        };
        tracing::debug!(?status, "worker reaped");
        let (kind, worker_dropped) = match ended {
            Ended::Finished(outcome, dropped) => (from_worker(outcome, &limits), dropped),
            Ended::WallClock => (OutcomeKind::WallClockLimit { limit_ms: millis(limits.wall_clock) }, 0),
            Ended::Cancelled => (
                OutcomeKind::Error { name: "Cancelled".into(), message: "the program was cancelled".into(), stack: None, line: None, column: None, unhandled_rejection: false },
                0,
            ),
            Ended::Broken(reason) => (OutcomeKind::WorkerCrash { reason }, 0),
            Ended::Disconnected(_) if exited_as(&status, WorkerExit::CpuLimit) => (OutcomeKind::CpuLimit { limit_ms: millis(limits.cpu_step) }, 0),
            Ended::Disconnected(_) if exited_as(&status, WorkerExit::SetupFailed) => (
                OutcomeKind::Internal { reason: "the worker could not set up its sandbox or engine; run `codemode sandbox-check`, and see the worker's message above".into() },
                0,
            ),
            Ended::Disconnected(_) if exited_as(&status, WorkerExit::Aborted) => (OutcomeKind::MemoryLimit { limit_bytes: limits.memory_bytes }, 0),
            Ended::Disconnected(_) if exited_as(&status, WorkerExit::Panicked) => (
                OutcomeKind::Internal { reason: "the worker failed (a bug in codemode, not in the program) before it could report; its message is in codemode's log".into() },
                0,
            ),
            Ended::Disconnected(detail) => (
                OutcomeKind::WorkerCrash {
                    reason: match status {
                        Ok(status) => format!("the worker ended with {status} before reporting an outcome ({detail})"),
                        Err(e) => format!("the worker vanished before reporting an outcome ({detail}; wait failed: {e})"),
                    },
                },
                0,
            ),
        };
        Outcome {
            kind,
            console: session.console.text,
            console_dropped_bytes: session.console.dropped + worker_dropped,
            tool_calls: session.tool_calls,
            elapsed: started.elapsed(),
            sandbox_missing: self.launcher.missing_layers(),
        }
    }

    /// Sandbox layers missing on this machine (empty unless the executor was built with
    /// [`SandboxPolicy::InsecureAllowWeaker`]).
    pub fn sandbox_missing(&self) -> Vec<protocol::worker::MissingLayer> {
        self.launcher.missing_layers()
    }
}

/// True when the worker exited with the code that stands for `reason`.
fn exited_as(status: &std::io::Result<ExitStatus>, reason: WorkerExit) -> bool {
    matches!(status, Ok(ExitStatus::Code(code)) if WorkerExit::from_code(*code) == Some(reason))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn internal(started: Instant, reason: String) -> Outcome {
    outcome_without_worker(started, OutcomeKind::Internal { reason })
}

/// The outcome of a program that failed before it reached a worker.
fn failed(started: Instant, name: &str, message: &str) -> Outcome {
    outcome_without_worker(
        started,
        OutcomeKind::Error { name: name.into(), message: message.into(), stack: None, line: None, column: None, unhandled_rejection: false },
    )
}

fn outcome_without_worker(started: Instant, kind: OutcomeKind) -> Outcome {
    Outcome {
        kind,
        console: String::new(),
        console_dropped_bytes: 0,
        tool_calls: 0,
        elapsed: started.elapsed(),
        sandbox_missing: Vec::new(),
    }
}

fn from_worker(outcome: WorkerOutcome, limits: &Limits) -> OutcomeKind {
    match outcome {
        WorkerOutcome::Returned(value) => OutcomeKind::Ok { value: Some(value.get().to_string()) },
        WorkerOutcome::ReturnedUndefined => OutcomeKind::Ok { value: None },
        WorkerOutcome::Threw(f) => {
            OutcomeKind::Error { name: f.name, message: f.message, stack: f.stack, line: f.line, column: f.column, unhandled_rejection: f.unhandled_rejection }
        }
        WorkerOutcome::Unserializable(message) => OutcomeKind::Error { name: "TypeError".into(), message, stack: None, line: None, column: None, unhandled_rejection: false },
        WorkerOutcome::Internal(reason) => OutcomeKind::Internal { reason },
        WorkerOutcome::ResultTooLarge { bytes } => OutcomeKind::ResultTooLarge { limit_bytes: limits.result_bytes, bytes },
        WorkerOutcome::MemoryLimit => OutcomeKind::MemoryLimit { limit_bytes: limits.memory_bytes },
        WorkerOutcome::CpuLimit => OutcomeKind::CpuLimit { limit_ms: millis(limits.cpu_step) },
        WorkerOutcome::Stuck => OutcomeKind::Stuck,
    }
}

/// How serving a worker stopped.
enum Ended {
    /// The worker reported its outcome (and dropped this many console bytes).
    Finished(WorkerOutcome, u64),
    /// The wall-clock limit passed.
    WallClock,
    /// The caller cancelled.
    Cancelled,
    /// The worker broke the protocol (garbage, oversized frame, wrong message).
    Broken(String),
    /// The channel closed without an outcome.
    Disconnected(String),
}

/// Console output kept for the outcome, cut at the cap.
struct ConsoleBuffer {
    text: String,
    cap: u64,
    dropped: u64,
}

impl ConsoleBuffer {
    fn push(&mut self, level: ConsoleLevel, line: &str) {
        let prefix = match level {
            ConsoleLevel::Warn => "[warn] ",
            ConsoleLevel::Error => "[error] ",
            ConsoleLevel::Log | ConsoleLevel::Debug => "",
        };
        let needed = (prefix.len() + line.len() + 1) as u64;
        let room = self.cap.saturating_sub(self.text.len() as u64);
        if needed <= room {
            self.text.push_str(prefix);
            self.text.push_str(line);
            self.text.push('\n');
            return;
        }
        // Keep what fits, on a character boundary; count the rest.
        let whole = format!("{prefix}{line}\n");
        let mut cut = usize::try_from(room).unwrap_or(usize::MAX).min(whole.len());
        while !whole.is_char_boundary(cut) {
            cut -= 1;
        }
        self.text.push_str(&whole[..cut]);
        self.dropped += (whole.len() - cut) as u64;
    }
}

/// The host's side of one running program.
///
/// One task serves the whole program: it reads the worker's messages, polls every
/// in-flight tool call, and writes answers as they complete. Keeping everything on one
/// task avoids a cross-thread wake-up per call.
struct Session {
    calls: Arc<CallScope>,
    limits: Limits,
    busy_poll: Duration,
    cancel: CancellationToken,
    console: ConsoleBuffer,
    tool_calls: u64,
    shared_budget: Arc<SharedToolBudget>,
}

/// What one call holds of the shared budget, given back when the call ends (or is
/// dropped with its program).
struct SharedHold {
    budget: Arc<SharedToolBudget>,
    cost: u64,
}

impl Drop for SharedHold {
    fn drop(&mut self) {
        self.budget.give_back(self.cost);
    }
}

impl Session {
    fn new(calls: CallScope, limits: Limits, busy_poll: Duration, cancel: CancellationToken, shared_budget: Arc<SharedToolBudget>) -> Self {
        let console = ConsoleBuffer { text: String::new(), cap: limits.console_bytes, dropped: 0 };
        Self { calls: Arc::new(calls), limits, busy_poll, cancel, console, tool_calls: 0, shared_budget }
    }

    /// Sends the program and serves the worker until it stops (see [`Ended`]).
    async fn serve(&mut self, channel: OwnedFd, code: &str) -> Ended {
        let (mut from_worker, mut to_worker) = match HostChannel::open(channel, MAX_FRAME_BYTES) {
            Ok(halves) => halves,
            Err(e) => return Ended::Broken(format!("cannot use the worker channel: {e}")),
        };
        let start = StartProgram {
            code: code.to_string(),
            limits: self.limits.worker_limits(),
            catalog: self.calls.catalog.worker_view(),
            busy_poll_us: u64::try_from(self.busy_poll.as_micros()).unwrap_or(u64::MAX),
        };
        if let Err(e) = to_worker.queue_to_worker(&HostToWorker::Start(start)) {
            return Ended::Disconnected(format!("sending the program failed: {e}"));
        }
        let deadline = tokio::time::sleep(self.limits.wall_clock);
        tokio::pin!(deadline);
        let mut calls: FuturesUnordered<BoxFuture<'static, (u64, ToolAnswer, u64)>> = FuturesUnordered::new();
        // The budget of tool data in flight: inputs of the calls in flight (as
        // `json_cost` counts them) plus answers queued for the worker and not written yet.
        let budget = self.limits.tool_bytes_in_flight;
        let mut inputs_in_flight: u64 = 0;
        // Right after an answer, the worker's next message is usually microseconds away.
        let mut just_answered = false;
        loop {
            let poll_budget = if just_answered { self.busy_poll } else { Duration::ZERO };
            just_answered = false;
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Ended::Cancelled,
                () = &mut deadline => return Ended::WallClock,
                flushed = to_worker.flush_to_worker(), if to_worker.has_pending() => {
                    if let Err(e) = flushed {
                        return self.drain(&mut from_worker, format!("writing to the worker failed: {e}")).await;
                    }
                }
                Some((call_id, answer, cost)) = calls.next(), if !calls.is_empty() => {
                    inputs_in_flight = inputs_in_flight.saturating_sub(cost);
                    let answer = within_budget(answer, budget);
                    if let Err(e) = to_worker.queue_to_worker(&HostToWorker::ToolAnswer { call_id, answer }) {
                        return self.drain(&mut from_worker, format!("answering a tool call failed: {e}")).await;
                    }
                    just_answered = calls.is_empty();
                }
                message = from_worker.recv_from_worker_busy_poll(poll_budget) => match message {
                    Ok(WorkerToHost::ToolCall { call_id, plugin, tool, input }) => {
                        self.tool_calls += 1;
                        let cost = json_cost(input.get());
                        let unread = to_worker.pending_bytes() as u64;
                        let refusal = if calls.len() >= self.limits.tool_calls_in_flight {
                            Some(format!("too many tool calls in flight: the limit is {}; await some before starting more", self.limits.tool_calls_in_flight))
                        } else if inputs_in_flight.saturating_add(unread).saturating_add(cost) > budget {
                            Some(format!(
                                "tools.{plugin}.{tool}: too much tool data in flight: {} of inputs and unread answers plus this input's {} is more than the {} a program may have in flight; await some calls before starting more, or send less",
                                mib(inputs_in_flight + unread),
                                mib(cost),
                                mib(budget)
                            ))
                        } else if let Err(used) = self.shared_budget.take(cost) {
                            Some(format!(
                                "tools.{plugin}.{tool}: the host already holds {} of tool data for all running programs, and this input's {} would pass its {}; try again when calls have finished, or send less",
                                mib(used),
                                mib(cost),
                                mib(self.shared_budget.limit)
                            ))
                        } else {
                            None
                        };
                        match refusal {
                            Some(why) => {
                                drop(input);
                                if let Err(e) = to_worker.queue_to_worker(&HostToWorker::ToolAnswer { call_id, answer: ToolAnswer::Reject(why) }) {
                                    return self.drain(&mut from_worker, format!("answering a tool call failed: {e}")).await;
                                }
                            }
                            None => {
                                inputs_in_flight += cost;
                                let hold = SharedHold { budget: Arc::clone(&self.shared_budget), cost };
                                let call = serve_call(Arc::clone(&self.calls), self.cancel.child_token(), call_id, plugin, tool, input);
                                calls.push(call.map(move |(id, answer)| {
                                    drop(hold);
                                    (id, answer, cost)
                                }).boxed());
                            }
                        }
                    }
                    Ok(WorkerToHost::Console { level, text }) => self.console.push(level, &text),
                    Ok(WorkerToHost::Finished { outcome, console_dropped_bytes }) => return Ended::Finished(outcome, console_dropped_bytes),
                    Err(e) if e.is_disconnect() => return Ended::Disconnected(e.to_string()),
                    Err(e) => return Ended::Broken(format!("the worker sent an invalid message: {e}")),
                },
            }
        }
    }
}

impl Session {
    /// The worker stopped reading (it may have finished while an answer was on its way):
    /// reads what it still sent, which may be its outcome, before calling it gone.
    async fn drain(&mut self, from_worker: &mut protocol::FromWorker, why: String) -> Ended {
        let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
            loop {
                match from_worker.recv_from_worker().await {
                    Ok(WorkerToHost::Finished { outcome, console_dropped_bytes }) => return Some(Ended::Finished(outcome, console_dropped_bytes)),
                    Ok(WorkerToHost::Console { level, text }) => self.console.push(level, &text),
                    Ok(WorkerToHost::ToolCall { .. }) => {}
                    Err(_) => return None,
                }
            }
        })
        .await;
        drained.ok().flatten().unwrap_or(Ended::Disconnected(why))
    }
}

/// How long the host reads what a worker that stopped reading still sent.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// Longest rejection message a program receives (a tool's error text can be anything).
const MAX_REJECTION_CHARS: usize = 16 * 1024;

/// `answer`, or a rejection saying why it cannot be delivered: an answer larger than
/// the whole budget of tool data, or a rejection text cut to a readable length.
fn within_budget(answer: ToolAnswer, budget: u64) -> ToolAnswer {
    match answer {
        ToolAnswer::Resolve(value) if value.get().len() as u64 > budget => ToolAnswer::Reject(format!(
            "the tool's answer is {} of JSON, more than the {} of tool data a program may have in flight; ask the tool for less (filter, page or summarise)",
            mib(value.get().len() as u64),
            mib(budget)
        )),
        ToolAnswer::Reject(text) if text.chars().count() > MAX_REJECTION_CHARS => {
            let kept: String = text.chars().take(MAX_REJECTION_CHARS).collect();
            let dropped = text.chars().count() - MAX_REJECTION_CHARS;
            ToolAnswer::Reject(format!("{kept}… [cut: {dropped} more characters]"))
        }
        other => other,
    }
}

/// What every tool call of one program shares: the catalog it was started with (and
/// the executor's current one, for plugins that recover while it runs), who runs it,
/// and the caller's hooks.
struct CallScope {
    catalog: Arc<Catalog>,
    current: Arc<RwLock<Arc<Catalog>>>,
    caller: Arc<Caller>,
    hooks: Option<Arc<dyn CallHooks>>,
}

impl CallScope {
    /// The tool `plugin.tool`, trying an unavailable plugin again first; `Err` is the
    /// rejection the program reads.
    async fn find(&self, plugin: &str, tool: &str) -> Result<Tool, String> {
        if let Some(t) = self.catalog.get(plugin, tool) {
            return Ok(t.clone());
        }
        let Some(unavailable) = self.catalog.unavailable(plugin) else {
            return Err(format!("unknown tool {plugin}.{tool}"));
        };
        if let Some(recover) = &unavailable.recover {
            recover.recover().await;
        }
        let current = Arc::clone(&self.current.read().unwrap_or_else(|p| p.into_inner()));
        match (current.get(plugin, tool), current.unavailable(plugin)) {
            (Some(t), _) => Ok(t.clone()),
            (None, Some(still)) => Err(format!("plugin {plugin} is unavailable: {}", still.reason)),
            (None, None) if current.plugins().any(|(p, _)| p == plugin) => Err(format!("plugin {plugin} has no tool named {tool}")),
            (None, None) => Err(format!("plugin {plugin} is unavailable: {}", unavailable.reason)),
        }
    }
}

/// Runs one tool call; resolves with the answer for the worker.
async fn serve_call(
    scope: Arc<CallScope>,
    cancel: CancellationToken,
    call_id: u64,
    plugin: String,
    tool: String,
    input: Box<RawValue>,
) -> (u64, ToolAnswer) {
    let found = scope.find(&plugin, &tool).await;
    let CallScope { caller, hooks, .. } = &*scope;
    let caller = Arc::clone(caller);
    let parsed = serde_json::from_str::<Value>(input.get());
    // The JSON text is not needed once parsed: it may be tens of MiB.
    drop(input);
    let answer = match &found {
        Err(why) => ToolAnswer::Reject(why.clone()),
        Ok(t) => match parsed {
            Err(e) => ToolAnswer::Reject(format!("the input of {plugin}.{tool} is not JSON: {e}")),
            Ok(input) => {
                // Checked before anyone is asked to approve it.
                let checked = t.check_input(&format!("{plugin}.{tool}"), &input);
                let approved = match (checked, hooks) {
                    (Err(why), _) => Err(why),
                    (Ok(()), Some(h)) => h.before(&plugin, t, &input).await,
                    (Ok(()), None) if t.definition.requires_approval => Err(format!(
                        "tools.{plugin}.{tool} needs a person's approval for each call, and nobody can be asked here: run the program through the MCP server (codemode mcp or codemode serve), whose client asks the person"
                    )),
                    (Ok(()), None) => Ok(()),
                };
                let outcome = match approved {
                    Ok(()) => t.run_validated(input, CallContext { plugin: plugin.clone(), tool: tool.clone(), call_id, caller, cancel }).await,
                    Err(why) => Err(why),
                };
                if let Some(h) = hooks {
                    h.after(&plugin, &tool, outcome.as_ref().is_ok_and(|r| !r.is_error));
                }
                match outcome {
                    Ok(result) => t.answer(&result),
                    Err(why) => ToolAnswer::Reject(why),
                }
            }
        },
    };
    (call_id, answer)
}
