//! One worker process as the host holds it: a pid and a pidfd.
//!
//! Workers are always the host's children (spawned, or forked by the template with
//! `CLONE_PARENT`), so the host can open a pidfd for each before it could be reaped
//! and reused. Killing goes through the pidfd (no pid-reuse race); waiting polls the
//! pidfd for readability and reaps with `waitid(P_PIDFD)`, so no zombie is left. The
//! reap also reads the process's peak resident memory (the kernel's `ru_maxrss`): for a
//! program's worker ([`WorkerProcess::end_in_background`] and the executor record it with
//! [`crate::telemetry::worker_reaped`]) the one exact measure of how much memory a
//! program made its worker hold, taken after the worker is gone.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use std::collections::HashSet;
use std::sync::Mutex;

use tokio::io::unix::AsyncFd;

/// Pids of the workers this process holds (to tell orphans from them).
static HELD: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

fn hold(pid: i32, held: bool) {
    let mut set = HELD.lock().unwrap_or_else(|p| p.into_inner());
    let set = set.get_or_insert_with(HashSet::new);
    if held {
        set.insert(pid);
    } else {
        set.remove(&pid);
    }
}

/// Reaps workers this process never learned about: a template that died between
/// forking a worker (the host's child, by `CLONE_PARENT`) and telling the host its pid
/// leaves one behind, which exits once it finds its channel closed. Such an orphan is a
/// child of this process that is pid 1 of a pid namespace of its own (its `NSpid` ends
/// in 1) and that no [`WorkerProcess`] holds; nothing else the host starts looks like
/// that. Runs a few times over some seconds, in the background.
pub fn reap_orphans_soon() {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async {
        for delay_ms in [200, 1000, 3000, 10_000] {
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            reap_orphans();
        }
    });
}

/// One pass of [`reap_orphans_soon`].
pub fn reap_orphans() {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { continue };
        let field = |name: &str| {
            status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string()).unwrap_or_default()
        };
        let own_namespace_init = field("NSpid:").split_whitespace().count() == 2 && field("NSpid:").ends_with(" 1");
        if field("PPid:") != me || !field("State:").starts_with('Z') || !own_namespace_init {
            continue;
        }
        if HELD.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|set| set.contains(&pid)) {
            continue;
        }
        // SAFETY: siginfo_t is plain data; waitid writes into it for our own exited child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: reaps exactly this pid, which is our child and has exited.
        unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG) };
        tracing::debug!("reaped orphaned worker {pid}");
    }
}

/// A live worker process.
pub struct WorkerProcess {
    pid: i32,
    pidfd: AsyncFd<OwnedFd>,
    reaped: bool,
    peak_rss_bytes: Option<u64>,
}

/// How a worker process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitStatus::Code(c) => write!(f, "exit code {c}"),
            ExitStatus::Signal(s) => {
                let name = nix::sys::signal::Signal::try_from(*s).map(|s| s.as_str()).unwrap_or("unknown signal");
                write!(f, "signal {s} ({name})")
            }
        }
    }
}

impl WorkerProcess {
    /// Takes charge of the host's child `pid`. Must be called inside a tokio runtime.
    pub fn adopt(pid: i32) -> io::Result<Self> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor; nothing else owns it.
        let owned = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: the AsyncFd owns the descriptor and nothing replaces or closes it while registered.
        let pidfd = unsafe { AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        hold(pid, true);
        Ok(Self { pid, pidfd, reaped: false, peak_rss_bytes: None })
    }

    /// The worker's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// True once the process has exited (it may not be reaped yet). Does not block.
    pub fn has_exited(&self) -> bool {
        if self.reaped {
            return true;
        }
        let mut pfd = libc::pollfd { fd: self.pidfd.get_ref().as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: poll reads and writes exactly the one pollfd we pass; a zero timeout
        // never blocks. A pidfd is readable once its process has exited.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        n > 0 && pfd.revents & libc::POLLIN != 0
    }

    /// Sends SIGKILL (a no-op once it has exited).
    pub fn kill(&self) {
        if self.reaped {
            return;
        }
        // SAFETY: pidfd_send_signal takes a valid pidfd we own, a signal number and
        // null siginfo; it touches no memory of ours.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.get_ref().as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
    }

    /// The process's peak resident memory, once it is reaped.
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        self.peak_rss_bytes
    }

    /// Kills a program's worker and reaps it in the background, off the caller's path
    /// (tearing down a process's memory takes most of a millisecond), recording its
    /// peak memory. Outside a tokio runtime, dropping it does both at once.
    pub fn end_in_background(mut self) {
        self.kill();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let status = self.wait().await;
                tracing::debug!(pid = self.pid, ?status, "worker reaped");
                if let Some(peak) = self.peak_rss_bytes {
                    crate::telemetry::worker_reaped(peak);
                }
            });
        }
    }

    /// Waits for the process to exit and reaps it.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            let mut guard = self.pidfd.readable().await?;
            match reap(guard.get_inner().as_raw_fd(), libc::WNOHANG)? {
                Some((status, peak_rss_bytes)) => {
                    drop(guard);
                    self.reaped = true;
                    self.peak_rss_bytes = Some(peak_rss_bytes);
                    hold(self.pid, false);
                    return Ok(status);
                }
                None => guard.clear_ready(),
            }
        }
    }
}

/// Reaps the process behind `pidfd` if it has exited (`flags` may add `WNOHANG`): how it
/// ended and its peak resident memory in bytes.
fn reap(pidfd: std::os::fd::RawFd, flags: libc::c_int) -> io::Result<Option<(ExitStatus, u64)>> {
    // SAFETY: siginfo_t and rusage are plain data; zeroed is a valid initial value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the raw waitid(2) (glibc's wrapper has no rusage argument) writes into
    // `info` and `usage`, which live for the call; P_PIDFD with a pidfd the caller owns.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_waitid,
            libc::P_PIDFD,
            pidfd,
            &mut info as *mut libc::siginfo_t,
            libc::WEXITED | flags,
            &mut usage as *mut libc::rusage,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: after a successful waitid, si_pid/si_status are the child's fields.
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        return Ok(None);
    }
    let ended = if info.si_code == libc::CLD_EXITED { ExitStatus::Code(status) } else { ExitStatus::Signal(status) };
    // ru_maxrss is in KiB.
    Ok(Some((ended, u64::try_from(usage.ru_maxrss).unwrap_or(0).saturating_mul(1024))))
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if !self.reaped {
            // Never leave a worker behind: kill it and reap it (blocking, but the
            // process is already dying).
            self.kill();
            let _ = reap(self.pidfd.get_ref().as_raw_fd(), 0);
            hold(self.pid, false);
        }
    }
}
