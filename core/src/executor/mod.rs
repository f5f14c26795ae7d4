//! The executor: runs one program per call, each in its own worker.
//!
//! [`Executor::run`] is the whole flow for one [`Program`] (its code and options):
//! 1. launch a worker with a channel of its own ([`crate::launcher`]);
//! 2. send the program with its limits and the catalog's tool names;
//! 3. serve the worker until it finishes ([`session`]): each tool call runs
//!    concurrently as its own future ([`crate::dispatch`]) and is answered as soon as it is done;
//!    console output is kept up to the cap;
//! 4. stop at the outcome, the wall-clock limit, a cancellation, or the first protocol
//!    violation;
//! 5. cancel in-flight tool calls, kill and reap the worker, and build the [`Outcome`]
//!    ([`ending`]).
//!
//! Nothing a worker does can take the host down: a crash, a hang, a flood or garbage on
//! the channel ends that program with its own outcome, and the next program runs in a
//! new worker.

mod ending;
mod session;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::dispatch::{Builtins, CallHooks, CallScope};
use ending::Ended;
use session::{Session, SharedToolBudget};

pub use crate::launcher::default_worker_path;
use crate::launcher::{
    default_warm_workers, LaunchError, LaunchMode, Launched, Launcher, SandboxPolicy, WarmPoolConfig,
};
use crate::limits::{LimitError, Limits};
use crate::outcome::{Outcome, OutcomeKind, Phases};
use crate::tool::semantic::Semantic;
use crate::tool::skills::SkillSession;
use crate::tool::{Caller, Catalog};

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
    warm_workers: Option<usize>,
    semantic: Option<Arc<Semantic>>,
}

/// The tool data all programs together may have in flight by default (each program also
/// has its own [`Limits::tool_bytes_in_flight`]): what bounds the host's memory when
/// many programs send large inputs at once.
pub const DEFAULT_TOOL_BYTES_BUDGET: u64 = 64 * 1024 * 1024;

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
    /// Workers kept forked and prepared for the default limits ahead of demand, in
    /// template mode (default [`default_warm_workers`]: two per core, between two and eight; 0
    /// turns the pool off). Programs with other limits never use them.
    pub fn warm_workers(mut self, count: usize) -> Self {
        self.warm_workers = Some(count);
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
    /// The search model (`tools.$search` then ranks by meaning too: every catalog's
    /// tools are embedded in the background; see [`crate::tool::semantic`]).
    pub fn semantic(mut self, semantic: Option<Arc<Semantic>>) -> Self {
        self.semantic = semantic;
        self
    }
    /// Checks the limits, finds the worker and (in template mode) starts the template.
    pub async fn build(self) -> Result<Executor, ExecutorError> {
        self.limits.validate()?;
        let worker = self.worker.unwrap_or_else(default_worker_path);
        let warm = WarmPoolConfig {
            size: self.warm_workers.unwrap_or_else(default_warm_workers),
            limits: self.limits.worker_limits(),
        };
        let launcher = Launcher::new(worker, self.mode, self.sandbox, warm).await?;
        let catalog = Arc::new(self.catalog);
        embed_in_background(self.semantic.as_ref(), &catalog);
        let semantic = std::sync::OnceLock::new();
        if let Some(given) = self.semantic {
            let _ = semantic.set(given);
        }
        Ok(Executor {
            launcher,
            limits: self.limits,
            busy_poll: self.busy_poll.unwrap_or(DEFAULT_BUSY_POLL),
            catalog: Arc::new(RwLock::new(catalog)),
            semantic,
            catalog_version: tokio::sync::watch::channel(0).0,
            next_program: AtomicU64::new(1),
            running: Arc::new(AtomicUsize::new(0)),
            tool_budget: Arc::new(SharedToolBudget {
                limit: self.tool_bytes_budget.unwrap_or(DEFAULT_TOOL_BYTES_BUDGET),
                used: AtomicU64::new(0),
            }),
            builtins: Arc::new(Builtins::default()),
            builtin_slots: Arc::new(tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map(std::num::NonZeroUsize::get).unwrap_or(2),
            )),
        })
    }
}

/// Runs programs. Cheap to share behind an `Arc`; programs may run concurrently.
pub struct Executor {
    launcher: Launcher,
    limits: Limits,
    busy_poll: Duration,
    catalog: Arc<RwLock<Arc<Catalog>>>,
    catalog_version: tokio::sync::watch::Sender<u64>,
    next_program: AtomicU64,
    /// Programs running now.
    running: Arc<AtomicUsize>,
    tool_budget: Arc<SharedToolBudget>,
    /// codemode's own calls (`tools.$search`).
    builtins: Arc<Builtins>,
    /// Built-in calls (`tools.$search`) of all programs at once: one per core.
    builtin_slots: Arc<tokio::sync::Semaphore>,
    /// The search model, when one is installed: given to the builder, or set once it
    /// has loaded ([`Executor::set_semantic`]).
    semantic: std::sync::OnceLock<Arc<Semantic>>,
}

/// Embeds `catalog`'s tools with `semantic` on a thread of its own (searches meanwhile
/// rank by words alone); nothing without a model.
fn embed_in_background(semantic: Option<&Arc<Semantic>>, catalog: &Arc<Catalog>) {
    let Some(semantic) = semantic.cloned() else { return };
    let catalog = Arc::clone(catalog);
    let spawned = std::thread::Builder::new().name("codemode-embed".into()).spawn(move || {
        catalog.search_index().build_dense(&semantic);
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot embed the tools for search: {e}; searches rank by words alone");
    }
}

/// One program to run, and how: its code, and optionally its limits (the executor's by
/// default), a token that cancels it, who runs it (passed to every tool call's
/// context) and hooks around each tool call (approvals before, progress after).
///
/// `executor.run("return 1")` runs code with every default; the builder methods set
/// the rest: `executor.run(Program::new(code).limits(l).cancel(token))`.
#[derive(Clone, Default)]
pub struct Program {
    code: String,
    limits: Option<Limits>,
    cancel: Option<CancellationToken>,
    caller: Caller,
    hooks: Option<Arc<dyn CallHooks>>,
    skills: Option<Arc<SkillSession>>,
}

impl Program {
    /// A program with every option at its default.
    pub fn new(code: impl Into<String>) -> Self {
        Self { code: code.into(), ..Self::default() }
    }

    /// Runs it under `limits` instead of the executor's.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Cancelling `token` stops it at once: the worker is killed and its tool calls are
    /// cancelled at their plugins.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Who runs it (workspace, agent, chat, call id), passed to every tool call.
    pub fn caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// Hooks around each of its tool calls.
    pub fn hooks(mut self, hooks: Arc<dyn CallHooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// The session's loaded skills and tools and selected agents, shared with its other
    /// programs (without it, the program is a session of its own).
    pub fn skills(mut self, skills: Arc<SkillSession>) -> Self {
        self.skills = Some(skills);
        self
    }

    /// The program's text.
    pub fn code(&self) -> &str {
        &self.code
    }
}

impl From<&str> for Program {
    fn from(code: &str) -> Self {
        Program::new(code)
    }
}

impl From<String> for Program {
    fn from(code: String) -> Self {
        Program::new(code)
    }
}

impl From<&String> for Program {
    fn from(code: &String) -> Self {
        Program::new(code.as_str())
    }
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

    /// Pids of the workers waiting in the warm pool now, the next to be taken first (for
    /// tests and diagnostics).
    pub fn warm_workers(&self) -> Vec<i32> {
        self.launcher.warm_workers()
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// What the tool calls of one program, or of one direct request (separate-tools
    /// mode), share: `catalog` as they started, the feed of the current one, who calls,
    /// the front end's hooks, and the built-ins within `limits.host_cpu`.
    fn scope(
        &self,
        catalog: Arc<Catalog>,
        caller: Arc<Caller>,
        hooks: Option<Arc<dyn CallHooks>>,
        limits: &Limits,
        skills: Arc<SkillSession>,
    ) -> CallScope {
        CallScope {
            catalog,
            current: Arc::clone(&self.catalog),
            caller,
            hooks,
            builtins: Arc::clone(&self.builtins),
            host_cpu_limit: limits.host_cpu,
            host_cpu_used: AtomicU64::new(0),
            builtin_turn: tokio::sync::Semaphore::new(1),
            builtin_slots: Arc::clone(&self.builtin_slots),
            semantic: self.semantic.get().cloned(),
            changes: std::sync::Mutex::new(crate::outcome::ChangeJournal::new(limits.tool_bytes_in_flight)),
            skills,
        }
    }

    /// Calls one tool directly, as an MCP client does in separate-tools mode: the same
    /// path as a program's call ([`crate::dispatch::call`]: find, retry an unavailable
    /// plugin, check, approve, run, report), from the current catalog.
    pub async fn call_tool(
        &self,
        name: &dyn crate::dispatch::Resolve,
        input: serde_json::Value,
        caller: Caller,
        hooks: Option<Arc<dyn CallHooks>>,
        cancel: CancellationToken,
    ) -> Result<crate::dispatch::Called, crate::dispatch::CallError> {
        self.call_tool_in(name, input, caller, hooks, cancel, Arc::default()).await
    }

    /// [`Executor::call_tool`] for a session that loaded skills or tools, or selected
    /// agents ([`SkillSession`]): a private tool it unlocked runs too.
    pub async fn call_tool_in(
        &self,
        name: &dyn crate::dispatch::Resolve,
        input: serde_json::Value,
        caller: Caller,
        hooks: Option<Arc<dyn CallHooks>>,
        cancel: CancellationToken,
        skills: Arc<SkillSession>,
    ) -> Result<crate::dispatch::Called, crate::dispatch::CallError> {
        let scope = self.scope(self.catalog(), Arc::new(caller), hooks, &self.limits, skills);
        crate::dispatch::call(&scope, name, crate::dispatch::Input::Value(input), 0, cancel).await
    }

    /// Runs the built-in `name` (`skills.load`, `search`, ...) for a front end, with
    /// `input` (JSON text), on `skills` (the calling session's), within the default
    /// limits' host-CPU budget: separate-tools mode offers the deferred catalog's
    /// built-ins as tools of their own.
    pub async fn call_builtin(
        &self,
        name: &str,
        input: Box<serde_json::value::RawValue>,
        caller: Caller,
        skills: Arc<SkillSession>,
    ) -> protocol::ToolAnswer {
        let scope = self.scope(self.catalog(), Arc::new(caller), None, &self.limits, skills);
        crate::dispatch::builtin_for(&scope, name, input).await
    }

    /// Replaces the catalog; programs that start later see the new one, and every
    /// [`Executor::watch_catalog`] receiver is told.
    pub fn set_catalog(&self, catalog: Catalog) {
        let catalog = Arc::new(catalog);
        {
            // Under the catalog's lock: a model set meanwhile ([`Executor::set_semantic`])
            // embeds either this catalog or the one before, never neither.
            let mut current = self.catalog.write().unwrap_or_else(|p| p.into_inner());
            embed_in_background(self.semantic.get(), &catalog);
            *current = catalog;
        }
        self.catalog_version.send_modify(|v| *v += 1);
    }

    /// The search model, when one is installed (and has loaded).
    pub fn semantic(&self) -> Option<&Arc<Semantic>> {
        self.semantic.get()
    }

    /// Sets the search model once it has loaded (`codemode serve` loads it after it
    /// starts listening): the current catalog's tools are embedded in the background,
    /// programs that start later rank by meaning too, and every
    /// [`Executor::watch_catalog`] receiver is told (the execute tool's description
    /// names the ranker). A second model is ignored.
    pub fn set_semantic(&self, semantic: Arc<Semantic>) {
        let set = {
            let current = self.catalog.write().unwrap_or_else(|p| p.into_inner());
            let set = self.semantic.set(Arc::clone(&semantic)).is_ok();
            if set {
                embed_in_background(Some(&semantic), &current);
            }
            set
        };
        if set {
            self.catalog_version.send_modify(|v| *v += 1);
        }
    }

    /// A receiver that changes whenever the catalog is replaced.
    pub fn watch_catalog(&self) -> tokio::sync::watch::Receiver<u64> {
        self.catalog_version.subscribe()
    }

    /// The template's pid, in template mode.
    pub async fn template_pid(&self) -> Option<i32> {
        self.launcher.template_pid().await
    }

    /// Runs one program (code, or a [`Program`] with options) to its outcome.
    pub async fn run(&self, program: impl Into<Program>) -> Outcome {
        let program = program.into();
        let caller = program.caller.clone();
        let code_bytes = program.code.len();
        let logged_code = crate::telemetry::logs_program_text().then(|| program.code.clone());
        let id = self.next_program.fetch_add(1, Ordering::Relaxed);
        let counted = RunningGuard::enter(&self.running);
        let outcome = self.run_program(program, id).await;
        drop(counted);
        crate::telemetry::program_ended(id, &caller, code_bytes, logged_code.as_deref(), &outcome);
        outcome
    }

    /// [`Executor::run`] without the accounting.
    async fn run_program(&self, program: Program, id: u64) -> Outcome {
        let Program { code, limits, cancel, caller, hooks, skills } = program;
        let skills = skills.unwrap_or_default();
        let limits = limits.unwrap_or(self.limits);
        let cancel = cancel.unwrap_or_default();
        let started = Instant::now();
        let called_ns = protocol::monotonic_ns();
        let span = tracing::debug_span!("program", id);
        let _enter = span.enter();
        if let Err(e) = limits.validate() {
            return ending::without_worker(started, OutcomeKind::Internal { reason: e.to_string() });
        }
        if code.trim().is_empty() {
            let why = "the program is empty: write the body of an async function (statements, with `return` for the value) or one expression such as `async (tools) => ...`";
            return ending::without_worker(started, ending::error("SyntaxError", why));
        }
        let catalog = self.catalog();
        let caller = Arc::new(caller);
        let mut take_warm = true;
        let (session, ended, mut process, _busy) = loop {
            let launched = match self.launcher.launch(&limits.worker_limits(), take_warm).await {
                Ok(launched) => launched,
                Err(e) => return ending::without_worker(started, OutcomeKind::Internal { reason: e.to_string() }),
            };
            let Launched { mut process, channel, warm, busy } = launched;
            tracing::debug!(pid = process.pid(), warm, "worker launched");
            let scope =
                self.scope(Arc::clone(&catalog), Arc::clone(&caller), hooks.clone(), &limits, Arc::clone(&skills));
            let mut session =
                Session::new(scope, limits, self.busy_poll, cancel.child_token(), Arc::clone(&self.tool_budget));
            // Serve on a runtime worker thread: that thread also polls the socket, so a
            // message wakes the session directly instead of through a second thread.
            // Dropping the serve future drops every in-flight tool call; the token tells
            // the tools that their calls were given up.
            let code = code.clone();
            let attempt = Instant::now();
            let served = tokio::spawn(async move {
                let ended = session.serve(channel, &code).await;
                session.cancel.cancel();
                (session, ended)
            })
            .await;
            let (session, ended) = match served {
                Ok(done) => done,
                Err(e) => {
                    process.kill();
                    let _ = process.wait().await;
                    return ending::without_worker(
                        started,
                        OutcomeKind::Internal { reason: format!("serving the program failed: {e}") },
                    );
                }
            };
            let gone_at_once = attempt.elapsed() < std::time::Duration::from_secs(1);
            if warm && gone_at_once && matches!(ended, Ended::Disconnected(_)) && !session.heard_from_worker {
                // A warm worker that was gone before it said anything (killed from
                // outside while it waited): nothing of the program was seen, so it runs
                // in a fresh worker instead.
                tracing::debug!(pid = process.pid(), "the warm worker was gone; starting the program in a fresh one");
                process.end_in_background();
                take_warm = false;
                continue;
            }
            break (session, ended, process, busy);
        };
        let status = if matches!(ended, Ended::Disconnected(_)) {
            // A worker that closed its channel is dying on its own: give it a moment so
            // the outcome can name the real cause, then make sure.
            let status = match tokio::time::timeout(std::time::Duration::from_millis(500), process.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    process.kill();
                    process.wait().await
                }
            };
            tracing::debug!(?status, "worker reaped");
            if let Some(peak) = process.peak_rss_bytes() {
                crate::telemetry::worker_reaped(peak);
            }
            Some(status)
        } else {
            // The outcome is known: the worker ends off the program's path.
            process.end_in_background();
            None
        };
        let (kind, worker_dropped) = ending::outcome_kind(ended, status.as_ref(), &limits);
        let (changes, changes_left_out) = session.calls.take_changes();
        Outcome {
            kind,
            console: session.console.text,
            console_dropped_bytes: session.console.dropped + worker_dropped,
            tool_calls: session.tool_calls,
            elapsed: started.elapsed(),
            sandbox_missing: self.launcher.missing_layers(),
            unawaited_calls: session.unawaited,
            phases: session.worker_times.map(|(worker, arrived)| Phases::from_clock(called_ns, worker, arrived)),
            changes,
            changes_left_out,
        }
    }

    /// Programs running now (for the metrics, and for draining before a shutdown).
    pub fn running_programs(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// Sandbox layers missing on this machine (empty unless the executor was built with
    /// [`SandboxPolicy::InsecureAllowWeaker`]).
    pub fn sandbox_missing(&self) -> Vec<protocol::worker::MissingLayer> {
        self.launcher.missing_layers()
    }
}

/// Counts a program in [`Executor::running_programs`] until dropped (also when the
/// caller gives up on the program's future).
struct RunningGuard(Arc<AtomicUsize>);

impl RunningGuard {
    fn enter(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(count))
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The plugin host hands the executor the catalogs it rebuilds.
impl crate::tool::catalog::CatalogFeed for Executor {
    fn current(&self) -> Arc<Catalog> {
        self.catalog()
    }

    fn replace(&self, catalog: Catalog) {
        self.set_catalog(catalog);
    }
}
