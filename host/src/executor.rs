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
use std::time::Instant;

use protocol::channel::ToWorker;
use protocol::{ConsoleLevel, FrameError, HostChannel, HostToWorker, StartProgram, ToolAnswer, WorkerOutcome, WorkerToHost, MAX_FRAME_BYTES};
use tokio::sync::Mutex;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::catalog::{CallContext, Catalog};
use crate::launcher::{LaunchError, LaunchMode, Launcher};
use crate::limits::{LimitError, Limits};
use crate::outcome::{Outcome, OutcomeKind};
use crate::worker_process::{ExitStatus, WorkerProcess};

/// The worker's exit code when its step watchdog ended a program that ignored
/// termination (see `sandbox_worker::EXIT_CPU_LIMIT`).
pub const WORKER_EXIT_CPU_LIMIT: i32 = 72;

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
}

impl ExecutorBuilder {
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
        let launcher = Launcher::new(worker, self.mode).await?;
        Ok(Executor { launcher, limits: self.limits, catalog: RwLock::new(Arc::new(self.catalog)), next_program: AtomicU64::new(1) })
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
    catalog: RwLock<Arc<Catalog>>,
    next_program: AtomicU64,
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

    /// Replaces the catalog; programs that start later see the new one.
    pub fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(catalog);
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
        let started = Instant::now();
        let program = self.next_program.fetch_add(1, Ordering::Relaxed);
        let span = tracing::debug_span!("program", id = program);
        let _enter = span.enter();
        if let Err(e) = limits.validate() {
            return internal(started, e.to_string());
        }
        let catalog = self.catalog();
        let (host_end, worker_end) = match std::os::unix::net::UnixStream::pair() {
            Ok(pair) => pair,
            Err(e) => return internal(started, format!("cannot create the worker channel: {e}")),
        };
        let mut process = match self.launcher.launch(OwnedFd::from(worker_end)).await {
            Ok(p) => p,
            Err(e) => return internal(started, e.to_string()),
        };
        tracing::debug!(pid = process.pid(), "worker launched");
        let session = Session::new(catalog, limits, cancel.child_token());
        let ended = session.serve(OwnedFd::from(host_end), code, &mut process).await;
        session.cancel.cancel();
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
        let (console, console_dropped_bytes, tool_calls) = session.into_parts().await;
        let kind = match ended {
            Ended::Finished(outcome, dropped) => return Outcome { kind: from_worker(outcome, &limits), console, console_dropped_bytes: console_dropped_bytes + dropped, tool_calls, elapsed: started.elapsed() },
            Ended::WallClock => OutcomeKind::WallClockLimit { limit_ms: millis(limits.wall_clock) },
            Ended::Cancelled => OutcomeKind::Error { name: "Cancelled".into(), message: "the program was cancelled".into(), stack: None, line: None, column: None },
            Ended::Broken(reason) => OutcomeKind::WorkerCrash { reason },
            Ended::Disconnected(_) if matches!(status, Ok(ExitStatus::Code(WORKER_EXIT_CPU_LIMIT))) => OutcomeKind::CpuLimit { limit_ms: millis(limits.cpu_step) },
            Ended::Disconnected(detail) => OutcomeKind::WorkerCrash {
                reason: match status {
                    Ok(status) => format!("the worker ended with {status} before reporting an outcome ({detail})"),
                    Err(e) => format!("the worker vanished before reporting an outcome ({detail}; wait failed: {e})"),
                },
            },
        };
        Outcome { kind, console, console_dropped_bytes, tool_calls, elapsed: started.elapsed() }
    }
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn internal(started: Instant, reason: String) -> Outcome {
    Outcome { kind: OutcomeKind::Internal { reason }, console: String::new(), console_dropped_bytes: 0, tool_calls: 0, elapsed: started.elapsed() }
}

fn from_worker(outcome: WorkerOutcome, limits: &Limits) -> OutcomeKind {
    match outcome {
        WorkerOutcome::Returned(value) => OutcomeKind::Ok { value: value.map(|v| v.get().to_string()) },
        WorkerOutcome::Threw(f) => OutcomeKind::Error { name: f.name, message: f.message, stack: f.stack, line: f.line, column: f.column },
        WorkerOutcome::Unserializable(message) => OutcomeKind::Error { name: "TypeError".into(), message, stack: None, line: None, column: None },
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
struct Session {
    catalog: Arc<Catalog>,
    limits: Limits,
    cancel: CancellationToken,
    console: std::sync::Mutex<ConsoleBuffer>,
    calls: Mutex<JoinSet<()>>,
    tool_calls: AtomicU64,
}

impl Session {
    fn new(catalog: Arc<Catalog>, limits: Limits, cancel: CancellationToken) -> Self {
        Self {
            catalog,
            limits,
            cancel,
            console: std::sync::Mutex::new(ConsoleBuffer { text: String::new(), cap: limits.console_bytes, dropped: 0 }),
            calls: Mutex::new(JoinSet::new()),
            tool_calls: AtomicU64::new(0),
        }
    }

    async fn into_parts(self) -> (String, u64, u64) {
        let mut calls = self.calls.into_inner();
        calls.abort_all();
        while calls.join_next().await.is_some() {}
        let console = self.console.into_inner().unwrap_or_else(|p| p.into_inner());
        (console.text, console.dropped, self.tool_calls.into_inner())
    }

    /// Sends the program and serves the worker until it stops (see [`Ended`]).
    async fn serve(&self, channel: OwnedFd, code: &str, process: &mut WorkerProcess) -> Ended {
        let _ = process;
        let (mut from_worker, to_worker) = match HostChannel::new(channel, MAX_FRAME_BYTES) {
            Ok(c) => c.split(),
            Err(e) => return Ended::Broken(format!("cannot use the worker channel: {e}")),
        };
        let to_worker = Arc::new(Mutex::new(to_worker));
        let start = StartProgram { code: code.to_string(), limits: self.limits.worker_limits(), catalog: self.catalog.worker_view() };
        if let Err(e) = to_worker.lock().await.send_to_worker(&HostToWorker::Start(start)).await {
            return Ended::Disconnected(format!("sending the program failed: {e}"));
        }
        let deadline = tokio::time::sleep(self.limits.wall_clock);
        tokio::pin!(deadline);
        let mut in_flight = 0usize;
        loop {
            let message = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Ended::Cancelled,
                () = &mut deadline => return Ended::WallClock,
                message = from_worker.recv_from_worker() => message,
            };
            match message {
                Ok(WorkerToHost::ToolCall { call_id, plugin, tool, input }) => {
                    self.tool_calls.fetch_add(1, Ordering::Relaxed);
                    let mut calls = self.calls.lock().await;
                    while calls.try_join_next().is_some() {}
                    in_flight = calls.len();
                    if in_flight >= self.limits.tool_calls_in_flight {
                        let answer = ToolAnswer::Reject(format!(
                            "too many tool calls in flight: the limit is {}; await some before starting more",
                            self.limits.tool_calls_in_flight
                        ));
                        drop(calls);
                        if let Err(e) = to_worker.lock().await.send_to_worker(&HostToWorker::ToolAnswer { call_id, answer }).await {
                            return Ended::Disconnected(format!("answering a tool call failed: {e}"));
                        }
                        continue;
                    }
                    calls.spawn(serve_call(Arc::clone(&self.catalog), Arc::clone(&to_worker), self.cancel.child_token(), call_id, plugin, tool, input));
                }
                Ok(WorkerToHost::Console { level, text }) => self.console.lock().unwrap_or_else(|p| p.into_inner()).push(level, &text),
                Ok(WorkerToHost::Finished { outcome, console_dropped_bytes }) => return Ended::Finished(outcome, console_dropped_bytes),
                Err(e @ (FrameError::Closed | FrameError::Truncated { .. })) => return Ended::Disconnected(e.to_string()),
                Err(e) if e.is_disconnect() => return Ended::Disconnected(e.to_string()),
                Err(e) => return Ended::Broken(format!("the worker sent an invalid message: {e}")),
            }
            let _ = in_flight;
        }
    }
}

/// Runs one tool call and sends its answer.
async fn serve_call(
    catalog: Arc<Catalog>,
    to_worker: Arc<Mutex<ToWorker>>,
    cancel: CancellationToken,
    call_id: u64,
    plugin: String,
    tool: String,
    input: Box<serde_json::value::RawValue>,
) {
    let answer = match catalog.get(&plugin, &tool) {
        None => ToolAnswer::Reject(format!("unknown tool {plugin}.{tool}")),
        Some(t) => match serde_json::from_str(input.get()) {
            Err(e) => ToolAnswer::Reject(format!("the input of {plugin}.{tool} is not JSON: {e}")),
            Ok(input) => {
                let context = CallContext { plugin: plugin.clone(), tool: tool.clone(), call_id, cancel };
                let handler = Arc::clone(&t.handler);
                // A panicking tool must not take the program (or the host) down with it.
                match tokio::spawn(async move { handler.call(input, context).await }).await {
                    Ok(result) => t.answer(&result),
                    Err(e) if e.is_panic() => ToolAnswer::Reject(format!("tool {plugin}.{tool} crashed")),
                    Err(_) => return,
                }
            }
        },
    };
    let _ = to_worker.lock().await.send_to_worker(&HostToWorker::ToolAnswer { call_id, answer }).await;
}
