//! Starting workers: fork from the template, or spawn a fresh process.
//!
//! - [`LaunchMode::Template`]: the host keeps one pristine template process (see
//!   `sandbox_worker::template`) and asks it to fork a worker per program. The worker
//!   inherits an initialised engine, so start-up skips deno_core's bootstrap. QuickJS only.
//! - [`LaunchMode::Spawn`]: a new `sandbox-worker run` process per program, which
//!   initialises its own engine. Slower, and the only safe choice for V8.
//! - [`LaunchMode::Auto`] asks the worker binary which engine it has and picks.
//!
//! If the template dies, the next launch starts a new one.
//!
//! In template mode the launcher also keeps a **warm pool**: workers forked ahead of
//! demand and already prepared for the executor's default limits
//! ([`protocol::HostToWorker::Prepare`]: step clock and watchdog running, resource
//! limits set, seccomp filter installed), each waiting for its one program. A program
//! with those limits takes one, so its critical path is: send the program, compile,
//! run, report. A background task forks its replacement: at once while programs stream
//! in, and after the program's end when it arrived at a quiet host, so that it does not
//! compete with that program for a core (see [`refill_at_once`]). A program with other
//! limits gets a fresh fork set up for its own limits: no worker ever runs a program
//! with limits other than the ones it was locked down for. Warm workers are never
//! reused, live in the pool cgroup like every worker, and die with the host.

use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use protocol::template::{recv_control, send_control, TemplateReply, TemplateRequest};
use protocol::worker::{Engine, MissingLayer, SandboxMode, WorkerCommand};
use protocol::{FrameError, HostToWorker, WorkerLimits};
use tokio::io::unix::AsyncFd;
use tokio::sync::Mutex;

use crate::cgroups::{PoolCgroup, PoolLimits};
use crate::worker_process::WorkerProcess;

/// Whether every sandbox layer must apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxPolicy {
    /// Every layer must apply, or the executor refuses to run programs (the default).
    #[default]
    Required,
    /// Run with the layers this machine can apply; every outcome lists the missing ones.
    InsecureAllowWeaker,
    /// No sandbox at all. Only for measuring what the sandbox costs; every outcome says so.
    InsecureDisabled,
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

impl SandboxPolicy {
    /// The worker's sandbox mode for this policy.
    pub fn mode(self) -> SandboxMode {
        match self {
            SandboxPolicy::Required => SandboxMode::Required,
            SandboxPolicy::InsecureAllowWeaker => SandboxMode::AllowWeaker,
            SandboxPolicy::InsecureDisabled => SandboxMode::Disabled,
        }
    }
}

/// How workers are started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum LaunchMode {
    /// Template for QuickJS, spawn for V8.
    #[default]
    Auto,
    /// Fork each worker from a pristine template process.
    Template,
    /// Start a new worker process per program.
    Spawn,
}

/// Why a worker could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The worker binary is missing or could not be executed.
    #[error("cannot start the worker {path}: {source}. Build it with `cargo build -p sandbox-worker` or set CODEMODE_WORKER to its path")]
    Exec {
        /// The binary.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The template process did not come up, or broke its protocol.
    #[error("the template process failed: {0}")]
    Template(String),
    /// The sandbox could not be set up; the host refuses to run programs.
    #[error("refusing to run programs: {0}. Run `codemode sandbox-check` to see every layer; `--insecure-allow-weaker-sandbox` runs without the missing ones")]
    Sandbox(String),
    /// Template mode was asked for with an engine that cannot be forked.
    #[error("the worker was built with the {0} engine, which cannot be forked after initialisation; use the spawn launch mode")]
    EngineCannotFork(String),
    /// A system call failed.
    #[error("{what} failed: {source}")]
    Os {
        /// What was attempted.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

fn os(what: &'static str) -> impl FnOnce(std::io::Error) -> LaunchError {
    move |source| LaunchError::Os { what, source }
}

fn nix_os(what: &'static str) -> impl FnOnce(nix::Error) -> LaunchError {
    move |e| LaunchError::Os { what, source: std::io::Error::from_raw_os_error(e as i32) }
}

/// The pool cgroup's ceilings: a backstop behind each program's own limits.
const POOL_LIMITS: PoolLimits = PoolLimits { memory_bytes: 16 * 1024 * 1024 * 1024, pids: 4096 };

fn join_cgroup(cgroup: Option<&PoolCgroup>, pid: i32) {
    if let Some(group) = cgroup {
        if let Err(why) = group.add(pid) {
            tracing::warn!("worker {pid} stays outside the pool cgroup: {why}");
        }
    }
}

/// How long the template may take to initialise.
const TEMPLATE_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts workers in the configured mode.
pub struct Launcher {
    shared: Arc<Shared>,
}

/// What the launcher and its refill task share.
struct Shared {
    // Dropped in this order: killing and reaping the template and the warm workers
    // empties the pool cgroup, which can then be removed.
    template: Mutex<Option<Template>>,
    warm: WarmPool,
    worker: PathBuf,
    mode: LaunchMode,
    sandbox: SandboxPolicy,
    missing_layers: std::sync::Mutex<Vec<MissingLayer>>,
    cgroup: Result<PoolCgroup, String>,
    /// The template's pid (0: none), readable without waiting for a fork in progress.
    template_pid: std::sync::atomic::AtomicI32,
    /// Workers handed out for programs and not yet given back ([`Busy`]).
    busy: std::sync::atomic::AtomicUsize,
    /// When the last of them was given back (`protocol::monotonic_ns`; 0: never).
    last_end_ns: std::sync::atomic::AtomicU64,
    /// The machine's cores.
    cores: usize,
}

/// A started worker and the host's end of its channel.
pub struct Launched {
    /// The worker process.
    pub process: WorkerProcess,
    /// The host's end of its channel.
    pub channel: OwnedFd,
    /// True when it came from the warm pool (prepared before its program existed).
    pub warm: bool,
    /// Counts the worker as busy until dropped (see [`worth_rehearsing`]).
    pub busy: Busy,
}

/// One worker handed out for a program: the launcher counts it until this is dropped,
/// and then tops the warm pool up if taking it did not (see [`refill_at_once`]).
pub struct Busy {
    shared: Weak<Shared>,
    refill_at_end: bool,
}

impl Busy {
    fn new(shared: &Arc<Shared>, refill_at_end: bool) -> Self {
        shared.busy.fetch_add(1, Ordering::AcqRel);
        Self { shared: Arc::downgrade(shared), refill_at_end }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.last_end_ns.store(protocol::monotonic_ns(), Ordering::Release);
            shared.busy.fetch_sub(1, Ordering::AcqRel);
            if self.refill_at_end {
                start_refill(&shared);
            }
        }
    }
}

/// The warm pool's size and limits (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmPoolConfig {
    /// Workers kept ready (0: no pool).
    pub size: usize,
    /// The limits they are prepared with.
    pub limits: WorkerLimits,
}

/// The default pool size: two warm workers per core, between two and eight. A worker
/// needs about 2 ms of CPU to fork, prepare and rehearse; with one per core, programs
/// arriving back to back found workers still preparing (measured on 2 cores: trivial
/// execute p50 1.4 ms with 2, 1.1 ms with 4). Each waiting worker costs about 1 MiB.
pub fn default_warm_workers() -> usize {
    (std::thread::available_parallelism().map_or(1, |n| n.get()) * 2).clamp(2, 8)
}

/// Workers forked and prepared for [`WarmPoolConfig::limits`], each waiting for its program.
struct WarmPool {
    config: WarmPoolConfig,
    ready: std::sync::Mutex<VecDeque<(WorkerProcess, OwnedFd)>>,
    /// True while a refill task runs (there is at most one).
    refilling: AtomicBool,
}

impl WarmPool {
    fn ready(&self) -> std::sync::MutexGuard<'_, VecDeque<(WorkerProcess, OwnedFd)>> {
        self.ready.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A live warm worker prepared for exactly `limits`, if there is one. Workers that
    /// died while they waited (killed from outside) are reaped on the way.
    /// Also says how many are left waiting.
    fn take(&self, limits: &WorkerLimits) -> Option<(WorkerProcess, OwnedFd, usize)> {
        if self.config.size == 0 || *limits != self.config.limits {
            return None;
        }
        let mut ready = self.ready();
        while let Some((process, channel)) = ready.pop_front() {
            if !process.has_exited() {
                return Some((process, channel, ready.len()));
            }
        }
        None
    }

    fn wants_more(&self) -> bool {
        self.ready().len() < self.config.size
    }
}

impl Launcher {
    /// Resolves `Auto` and, in template mode, starts the template (and the warm pool,
    /// when `warm` asks for one).
    pub async fn new(
        worker: PathBuf,
        mode: LaunchMode,
        sandbox: SandboxPolicy,
        warm: WarmPoolConfig,
    ) -> Result<Self, LaunchError> {
        let mode = match mode {
            LaunchMode::Auto if worker_engine(&worker)?.can_fork() => LaunchMode::Template,
            LaunchMode::Auto => LaunchMode::Spawn,
            other => other,
        };
        let cgroup = match sandbox {
            SandboxPolicy::InsecureDisabled => Err("disabled by the host".to_string()),
            _ => PoolCgroup::create(&format!("codemode-{}", std::process::id()), POOL_LIMITS),
        };
        if let Err(why) = &cgroup {
            tracing::info!("no pool cgroup: {why}");
        }
        let template = match mode {
            LaunchMode::Template => Some(Template::start(&worker, sandbox, cgroup.as_ref().ok()).await?),
            _ => None,
        };
        let missing = template.as_ref().map(|t| t.missing_layers.clone()).unwrap_or_default();
        let template_pid = template.as_ref().map_or(0, |t| t.process.pid());
        let warm = WarmPoolConfig { size: if mode == LaunchMode::Template { warm.size } else { 0 }, ..warm };
        let launcher = Self {
            shared: Arc::new(Shared {
                template: Mutex::new(template),
                warm: WarmPool {
                    config: warm,
                    ready: std::sync::Mutex::new(VecDeque::new()),
                    refilling: AtomicBool::new(false),
                },
                worker,
                mode,
                sandbox,
                missing_layers: std::sync::Mutex::new(missing),
                cgroup,
                template_pid: std::sync::atomic::AtomicI32::new(template_pid),
                busy: std::sync::atomic::AtomicUsize::new(0),
                last_end_ns: std::sync::atomic::AtomicU64::new(0),
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            }),
        };
        start_refill(&launcher.shared);
        Ok(launcher)
    }

    /// Sandbox layers the template reported missing (empty under [`SandboxPolicy::Required`]).
    pub fn missing_layers(&self) -> Vec<MissingLayer> {
        self.shared.missing_layers.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The resolved mode (never `Auto`).
    pub fn mode(&self) -> LaunchMode {
        self.shared.mode
    }

    /// Workers waiting in the warm pool now, the next to be taken first (for tests and
    /// diagnostics).
    pub fn warm_workers(&self) -> Vec<i32> {
        self.shared.warm.ready().iter().map(|(process, _)| process.pid()).collect()
    }

    /// Starts one worker for a program with `limits`. A warm worker prepared for the
    /// same limits is taken when there is one and `take_warm` allows it; otherwise a
    /// fresh one is forked (or spawned), which sets itself up for the limits its program
    /// carries.
    pub async fn launch(&self, limits: &WorkerLimits, take_warm: bool) -> Result<Launched, LaunchError> {
        if take_warm {
            if let Some((process, channel, left)) = self.shared.warm.take(limits) {
                let running = self.shared.busy.load(Ordering::Acquire);
                let last_end = self.shared.last_end_ns.load(Ordering::Acquire);
                let idle_for = Duration::from_nanos(protocol::monotonic_ns().saturating_sub(last_end));
                let at_once = refill_at_once(left, self.shared.warm.config.size, running, idle_for);
                if at_once {
                    start_refill(&self.shared);
                }
                return Ok(Launched { process, channel, warm: true, busy: Busy::new(&self.shared, !at_once) });
            }
        }
        let launched = self.shared.launch_fresh().await;
        start_refill(&self.shared);
        launched.map(|(process, channel)| Launched {
            process,
            channel,
            warm: false,
            busy: Busy::new(&self.shared, false),
        })
    }

    /// The template's pid, when there is one (for the health endpoint, tests and
    /// diagnostics); never waits for a fork in progress.
    pub async fn template_pid(&self) -> Option<i32> {
        Some(self.shared.template_pid.load(Ordering::Acquire)).filter(|&pid| pid > 0)
    }
}

/// Starts the refill task unless one runs or the pool is full: it forks and prepares
/// workers until the pool holds its size, and ends when the launcher is gone.
fn start_refill(shared: &Arc<Shared>) {
    let warm = &shared.warm;
    if warm.config.size == 0 || !warm.wants_more() || warm.refilling.swap(true, Ordering::AcqRel) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        warm.refilling.store(false, Ordering::Release);
        return;
    };
    runtime.spawn(refill(Arc::downgrade(shared)));
}

/// How long the host must have run no program for the next one to count as arriving at
/// a quiet host ([`refill_at_once`]). Programs streamed back to back arrive within a
/// millisecond of the last one's end; an agent's next program comes after its model's
/// turn, hundreds of milliseconds later.
const QUIET_AFTER: Duration = Duration::from_millis(1);

/// Whether taking a warm worker that leaves `left` of a pool of `size`, with `running`
/// other programs running and none ended for `idle_for`, should start the refill now
/// rather than when the program ends ([`Busy`]'s drop).
///
/// A program that arrives at a quiet host gets the machine to itself: its replacement,
/// forked and prepared while it runs (the template's fork, the new worker's lockdown and
/// rehearsal), would take a core from it and its host, which poll each other for the
/// program's messages. Measured on 2 cores, four runs interleaved with the refill at
/// once (`cargo bench -p codemode --bench execute -- startup`, programs arriving at a
/// quiet host): trivial p50 554–706 µs against 653–950 µs, the two-call program
/// 0.91–1.1 ms against 1.2–1.4 ms. Under a stream of programs the refill starts at
/// once, as before: deferring it there too moved it onto the next program's start and
/// cost 3–17% of one-at-a-time throughput. It also starts at once when fewer than half
/// the pool are left.
fn refill_at_once(left: usize, size: usize, running: usize, idle_for: Duration) -> bool {
    let quiet = running == 0 && idle_for >= QUIET_AFTER;
    !quiet || left < size.div_ceil(2)
}

/// The refill task (see [`start_refill`]). Holds the launcher only while it forks,
/// so dropping the executor ends it.
async fn refill(shared: Weak<Shared>) {
    loop {
        let Some(shared) = shared.upgrade() else { return };
        let warm = &shared.warm;
        if !warm.wants_more() {
            warm.refilling.store(false, Ordering::Release);
            // A worker taken between the check and the store would otherwise wait for
            // the next launch to be replaced.
            if warm.wants_more() && !warm.refilling.swap(true, Ordering::AcqRel) {
                continue;
            }
            return;
        }
        let launched = shared.launch_fresh().await;
        let rehearse = worth_rehearsing(shared.busy.load(Ordering::Acquire), shared.cores);
        match launched
            .and_then(|(process, channel)| prepare(&channel, warm.config.limits, rehearse).map(|()| (process, channel)))
        {
            Ok(ready) => warm.ready().push_back(ready),
            Err(e) => {
                // The next launch forks on demand (and restarts the template if it must).
                tracing::warn!("the warm pool cannot refill: {e}");
                warm.refilling.store(false, Ordering::Release);
                return;
            }
        }
    }
}

/// Whether a warm worker made while `busy` workers run programs on a machine of `cores`
/// should rehearse ([`HostToWorker::Prepare`]): only while a core is left over, so that
/// the rehearsal uses time nobody else wants. Measured on 2 cores (`cargo bench -p
/// codemode --bench execute -- cpu`): rehearsing cuts an idle host's trivial execute
/// p50 from 1.3 to 0.8 ms and costs 0.64 ms of CPU a program; under load, skipping it
/// takes 16-in-flight throughput from 763 to 893 programs/s.
fn worth_rehearsing(busy: usize, cores: usize) -> bool {
    busy < cores
}

/// Sends a fresh worker its [`HostToWorker::Prepare`]: it locks itself down for
/// `limits`, rehearses when asked, and waits for its program. (The channel is new and
/// empty, so the write of one small frame never blocks.)
fn prepare(channel: &OwnedFd, limits: WorkerLimits, rehearse: bool) -> Result<(), LaunchError> {
    let frame = protocol::frame::encode(&HostToWorker::Prepare { limits, rehearse })
        .map_err(|e| LaunchError::Template(format!("cannot encode the prepare message: {e}")))?;
    protocol::channel::write_all_blocking(channel.as_fd(), &frame).map_err(os("preparing a warm worker"))
}

impl Shared {
    /// Forks (or spawns) a worker that has not been prepared; it sets itself up for
    /// the limits its program carries.
    ///
    /// Each attempt gets a channel of its own: when the template dies while it forks,
    /// the worker it may have made keeps a channel nobody else uses, sees the host's end
    /// closed and exits, and is reaped as an orphan ([`crate::worker_process::reap_orphans`]).
    async fn launch_fresh(&self) -> Result<(WorkerProcess, OwnedFd), LaunchError> {
        let channel = || {
            std::os::unix::net::UnixStream::pair()
                .map(|(host, worker)| (OwnedFd::from(host), OwnedFd::from(worker)))
                .map_err(os("socketpair"))
        };
        if self.mode == LaunchMode::Spawn {
            let (host, worker) = channel()?;
            return Ok((spawn_worker(&self.worker, worker, self.sandbox, self.cgroup.as_ref().ok())?, host));
        }
        let mut guard = self.template.lock().await;
        if let Some(template) = guard.as_mut() {
            let (host, worker) = channel()?;
            match template.fork(worker.as_fd()).await {
                Ok(pid) => return Ok((WorkerProcess::adopt(pid).map_err(os("pidfd_open"))?, host)),
                Err(e) => {
                    tracing::warn!("template failed ({e}); starting a new one");
                    crate::worker_process::reap_orphans_soon();
                }
            }
        }
        *guard = None;
        // The old pid stays readable while the new template starts (health probes see
        // a template being replaced, not none); a failed start leaves none.
        let started = Template::start(&self.worker, self.sandbox, self.cgroup.as_ref().ok()).await;
        let mut template = started.inspect_err(|_| self.template_pid.store(0, Ordering::Release))?;
        let (host, worker) = channel()?;
        let pid = template.fork(worker.as_fd()).await.inspect_err(|_| self.template_pid.store(0, Ordering::Release))?;
        self.template_pid.store(template.process.pid(), Ordering::Release);
        if let Ok(mut m) = self.missing_layers.lock() {
            m.clone_from(&template.missing_layers);
        }
        *guard = Some(template);
        Ok((WorkerProcess::adopt(pid).map_err(os("pidfd_open"))?, host))
    }
}

/// Asks the worker binary which engine it was built with.
fn worker_engine(worker: &Path) -> Result<Engine, LaunchError> {
    let out = Command::new(worker)
        .args(WorkerCommand::Info.to_args())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| LaunchError::Exec { path: worker.into(), source })?;
    let info: protocol::worker::WorkerInfo = serde_json::from_slice(&out.stdout)
        .map_err(|e| LaunchError::Template(format!("`{} info` printed no engine: {e}", worker.display())))?;
    Ok(info.engine)
}

/// The descriptor a worker finds its channel (or control channel) at.
const WORKER_FD: i32 = 3;

/// A command for the worker with `fd` placed at descriptor [`WORKER_FD`] and an empty
/// environment.
fn worker_command(worker: &Path, fd: &OwnedFd, command: &WorkerCommand) -> Command {
    let mut cmd = Command::new(worker);
    cmd.args(command.to_args()).env_clear().stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit());
    let raw = fd.as_raw_fd();
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // dup2/fcntl, which are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if raw == WORKER_FD {
                // Already in place: just clear close-on-exec.
                if libc::fcntl(WORKER_FD, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(raw, WORKER_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

fn spawn_worker(
    worker: &Path,
    channel: OwnedFd,
    sandbox: SandboxPolicy,
    cgroup: Option<&PoolCgroup>,
) -> Result<WorkerProcess, LaunchError> {
    let command =
        WorkerCommand::Run { channel_fd: WORKER_FD, host_pid: std::process::id() as i32, sandbox: sandbox.mode() };
    let child = worker_command(worker, &channel, &command)
        .spawn()
        .map_err(|source| LaunchError::Exec { path: worker.into(), source })?;
    let pid = child.id() as i32;
    join_cgroup(cgroup, pid);
    // `std::process::Child` neither kills nor reaps on drop; the WorkerProcess does both.
    drop(child);
    WorkerProcess::adopt(pid).map_err(os("pidfd_open"))
}

/// The host's end of a running template process.
struct Template {
    process: WorkerProcess,
    control: AsyncFd<OwnedFd>,
    missing_layers: Vec<MissingLayer>,
}

impl Template {
    async fn start(worker: &Path, sandbox: SandboxPolicy, cgroup: Option<&PoolCgroup>) -> Result<Self, LaunchError> {
        let (ours, theirs) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)
            .map_err(nix_os("socketpair"))?;
        // Only the host's end is non-blocking; the template reads its end blocking.
        let flags = nix::fcntl::fcntl(&ours, nix::fcntl::FcntlArg::F_GETFL).map_err(nix_os("fcntl"))?;
        nix::fcntl::fcntl(
            &ours,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::from_bits_retain(flags) | nix::fcntl::OFlag::O_NONBLOCK),
        )
        .map_err(nix_os("fcntl"))?;
        let command = WorkerCommand::Template {
            control_fd: WORKER_FD,
            host_pid: std::process::id() as i32,
            sandbox: sandbox.mode(),
        };
        let child = worker_command(worker, &theirs, &command)
            .spawn()
            .map_err(|source| LaunchError::Exec { path: worker.into(), source })?;
        drop(theirs);
        // Into the pool cgroup before it forks anything: every worker inherits it.
        join_cgroup(cgroup, child.id() as i32);
        let process = WorkerProcess::adopt(child.id() as i32).map_err(os("pidfd_open"))?;
        drop(child);
        // SAFETY: the AsyncFd owns the descriptor and nothing replaces or closes it while registered.
        let control = unsafe { AsyncFd::register(ours) }
            .map_err(|e| LaunchError::Os { what: "registering the template channel", source: e.into() })?;
        let mut template = Self { process, control, missing_layers: Vec::new() };
        match tokio::time::timeout(TEMPLATE_READY_TIMEOUT, template.recv()).await {
            Ok(Ok(TemplateReply::Ready { engine, missing_layers })) if engine.can_fork() => {
                for layer in &missing_layers {
                    tracing::warn!("sandbox layer missing (running anyway, as configured): {layer}");
                }
                template.missing_layers = missing_layers;
                Ok(template)
            }
            Ok(Ok(TemplateReply::Ready { engine, .. })) => Err(LaunchError::EngineCannotFork(engine.to_string())),
            Ok(Ok(TemplateReply::Failed { reason })) => Err(LaunchError::Sandbox(reason)),
            Ok(Ok(other)) => Err(LaunchError::Template(format!("expected Ready, got {other:?}"))),
            Ok(Err(e)) => {
                Err(LaunchError::Template(format!("it exited before it was ready ({e}); its stderr says why")))
            }
            Err(_) => Err(LaunchError::Template(format!("not ready after {TEMPLATE_READY_TIMEOUT:?}"))),
        }
    }

    async fn fork(&mut self, channel: std::os::fd::BorrowedFd<'_>) -> Result<i32, LaunchError> {
        self.send(&TemplateRequest::Fork, Some(channel)).await?;
        match self.recv().await {
            Ok(TemplateReply::Forked { pid }) => Ok(pid),
            Ok(TemplateReply::Refused { reason }) => Err(LaunchError::Template(format!("fork refused: {reason}"))),
            Ok(other) => Err(LaunchError::Template(format!("expected Forked, got {other:?}"))),
            Err(e) => Err(LaunchError::Template(e.to_string())),
        }
    }

    async fn send(
        &self,
        request: &TemplateRequest,
        fd: Option<std::os::fd::BorrowedFd<'_>>,
    ) -> Result<(), LaunchError> {
        loop {
            let mut guard = self.control.writable().await.map_err(os("waiting on the template channel"))?;
            match send_control(self.control.get_ref().as_fd(), request, fd) {
                Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) => return Err(LaunchError::Template(e.to_string())),
                Ok(()) => return Ok(()),
            }
        }
    }

    async fn recv(&self) -> Result<TemplateReply, FrameError> {
        loop {
            let mut guard = self.control.readable().await?;
            match recv_control::<TemplateReply>(self.control.get_ref().as_fd()) {
                Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) => return Err(e),
                Ok((reply, _fd)) => return Ok(reply),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker rehearses while a core is left over, and not when programs keep
    /// every core busy.
    #[test]
    fn rehearsals_only_with_a_core_to_spare() {
        assert!(worth_rehearsing(0, 2), "an idle host");
        assert!(worth_rehearsing(1, 2), "one program on two cores");
        assert!(!worth_rehearsing(2, 2), "every core has a program");
        assert!(!worth_rehearsing(16, 2), "programs queue");
    }

    /// A program arriving at a quiet host defers the refill to its end unless the pool
    /// runs low; programs streamed back to back, or arriving while others run, refill at
    /// once.
    #[test]
    fn refills_wait_for_the_end_of_a_program_that_arrived_at_a_quiet_host() {
        let quiet = QUIET_AFTER;
        let streamed = Duration::from_micros(200);
        assert!(!refill_at_once(3, 4, 0, quiet), "a quiet host, three of four still wait");
        assert!(!refill_at_once(2, 4, 0, Duration::from_secs(30)), "a quiet host, half the pool still waits");
        assert!(refill_at_once(1, 4, 0, quiet), "a quiet host, but one of four left");
        assert!(refill_at_once(0, 4, 0, quiet), "a quiet host, none left");
        assert!(!refill_at_once(1, 2, 0, quiet) && refill_at_once(0, 2, 0, quiet), "half of two is one");
        assert!(refill_at_once(0, 1, 0, quiet), "the only warm worker taken");
        assert!(!refill_at_once(4, 8, 0, quiet) && refill_at_once(3, 8, 0, quiet), "half of eight is four");
        assert!(refill_at_once(3, 4, 0, streamed), "the last program ended a moment ago");
        assert!(refill_at_once(3, 4, 1, quiet), "another program runs");
        assert!(refill_at_once(3, 4, 0, Duration::ZERO), "a program ended just now");
    }
}
