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

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use protocol::template::{recv_control, send_control, TemplateReply, TemplateRequest};
use protocol::worker::{Engine, MissingLayer, SandboxMode, WorkerCommand};
use protocol::FrameError;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
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
    // Dropped first: killing and reaping the template empties the pool cgroup,
    // which can then be removed.
    template: Mutex<Option<Template>>,
    worker: PathBuf,
    mode: LaunchMode,
    sandbox: SandboxPolicy,
    missing_layers: std::sync::Mutex<Vec<MissingLayer>>,
    cgroup: Result<PoolCgroup, String>,
}

impl Launcher {
    /// Resolves `Auto` and, in template mode, starts the template.
    pub async fn new(worker: PathBuf, mode: LaunchMode, sandbox: SandboxPolicy) -> Result<Self, LaunchError> {
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
        Ok(Self {
            worker,
            mode,
            sandbox,
            cgroup,
            template: Mutex::new(template),
            missing_layers: std::sync::Mutex::new(missing),
        })
    }

    /// Sandbox layers the template reported missing (empty under [`SandboxPolicy::Required`]).
    pub fn missing_layers(&self) -> Vec<MissingLayer> {
        self.missing_layers.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The resolved mode (never `Auto`).
    pub fn mode(&self) -> LaunchMode {
        self.mode
    }

    /// Starts one worker; returns it and the host's end of its channel.
    ///
    /// Each attempt gets a channel of its own: when the template dies while it forks,
    /// the worker it may have made keeps a channel nobody else uses, sees the host's end
    /// closed and exits, and is reaped as an orphan ([`crate::worker_process::reap_orphans`]).
    pub async fn launch(&self) -> Result<(WorkerProcess, OwnedFd), LaunchError> {
        let channel = || {
            std::os::unix::net::UnixStream::pair()
                .map(|(host, worker)| (OwnedFd::from(host), OwnedFd::from(worker)))
                .map_err(os("socketpair"))
        };
        match self.mode {
            LaunchMode::Spawn => {
                let (host, worker) = channel()?;
                Ok((spawn_worker(&self.worker, worker, self.sandbox, self.cgroup.as_ref().ok())?, host))
            }
            _ => {
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
                let mut template = Template::start(&self.worker, self.sandbox, self.cgroup.as_ref().ok()).await?;
                let (host, worker) = channel()?;
                let pid = template.fork(worker.as_fd()).await?;
                if let Ok(mut m) = self.missing_layers.lock() {
                    m.clone_from(&template.missing_layers);
                }
                *guard = Some(template);
                Ok((WorkerProcess::adopt(pid).map_err(os("pidfd_open"))?, host))
            }
        }
    }

    /// The template's pid, when there is one (for tests and diagnostics).
    pub async fn template_pid(&self) -> Option<i32> {
        self.template.lock().await.as_ref().map(|t| t.process.pid())
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
