//! The codemode sandbox worker: one process per program, running a deno_core runtime
//! that holds the ECMAScript language, `tools` and `console`, and nothing else, inside
//! the OS sandbox ([`sandbox`]).
//!
//! Process roles, each with one ordered setup ([`sandbox::setup::Setup`], walked in the
//! order [`sandbox::setup::Role::steps`] gives the role):
//! - **template** ([`template`]): initialises the engine once, enters the sandbox, and
//!   forks a worker per program (fast; QuickJS only, since forking an initialised V8 is
//!   unsafe);
//! - **spawn launcher** ([`run_spawned`]): enters the same sandbox, forks one worker
//!   that initialises its own engine, and mirrors its exit (works with both engines);
//! - **exec launcher** ([`exec_payload`]): like the spawn launcher, but the worker runs a
//!   native payload (a shared object loaded before the filesystem disappears) under the
//!   worker's exact policy, for escape testing;
//! - **plugin** ([`plugin`]): a JavaScript plugin's long-lived runtime, under the same
//!   sandbox as a spawned worker, serving the process-plugin protocol on stdin/stdout;
//! - **probe** ([`probe`]): reports which layers this machine can apply.
//!
//! Workers run [`program::prepare`] (set the limits, lock the process down; a warm
//! worker does it before its program arrives) and [`program::run`] (compile, drive the
//! program while the host answers its tool calls, report the outcome, exit).

pub mod engine;
pub mod fork_exclusions;
pub mod memory;
pub mod ops;
pub mod plugin;
pub mod program;
pub mod sandbox;
pub mod source;
pub mod step_clock;
pub mod template;

use std::ffi::{c_char, c_int, CString};
use std::os::fd::{AsRawFd, OwnedFd};

use protocol::worker::WorkerExit;
use sandbox::setup::{Role, Setup, SetupError};
use sandbox::{rlimits, seccomp::SPAWNED_CLONE_FLAGS, Environment, SandboxOptions};

/// Memory the spawn path allows for the engine itself on top of the program's limit
/// (the engine is created after the sandbox hides /proc, so it cannot be measured).
pub(crate) const SPAWNED_ENGINE_ALLOWANCE: u64 = 128 * 1024 * 1024;

/// Ends the process at once, without unwinding or running destructors: the runtime's
/// teardown is wasted work for a process whose memory the kernel reclaims anyway.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit(2) has no preconditions; it never returns.
    unsafe { libc::_exit(code) }
}

/// Ends the process with the exit code the host reads as `reason`.
pub fn exit_as(reason: WorkerExit) -> ! {
    exit_now(reason.code())
}

/// Reports a setup failure on stderr (while it is open) and exits: the worker fails closed.
pub fn fail(message: &str) -> ! {
    eprintln!("sandbox-worker: {message}");
    exit_as(WorkerExit::SetupFailed)
}

/// Makes a panic anywhere in this process (the engine, deno_core, the watchdog) end
/// it with a report instead of a silent death: the hook writes an
/// [`protocol::WorkerOutcome::Internal`] outcome on `channel` (one `write(2)` loop,
/// which the worker's seccomp table allows), or the message on standard error when
/// there is no channel, and exits before any unwinding (whose system calls the filter
/// may not allow) starts.
pub fn report_panics(channel: Option<std::os::fd::RawFd>) {
    std::panic::set_hook(Box::new(move |info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let text = format!("the worker failed: {what}{at} (a bug in codemode, not in the program)");
        match channel {
            Some(fd) => {
                let outcome = protocol::WorkerOutcome::Internal(text);
                if let Ok(frame) = protocol::frame::encode(&protocol::WorkerToHost::Finished {
                    outcome,
                    console_dropped_bytes: 0,
                    unanswered_calls: Vec::new(),
                    times: None,
                }) {
                    // SAFETY: the channel descriptor stays open for the process's life;
                    // the borrow ends before the process does.
                    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                    let _ = protocol::channel::write_all_blocking(fd, &frame);
                }
            }
            None => {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "sandbox-worker: {text}");
            }
        }
        exit_as(WorkerExit::Panicked)
    }));
}

/// The channel and the pre-encoded report for [`report_aborts`]'s signal handler.
static ABORT_CHANNEL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
static ABORT_REPORT: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

/// Makes an abort (what Rust and the engine do when an allocation is refused at the
/// memory backstop, `RLIMIT_DATA`) end the program as the memory limit: a `SIGABRT`
/// handler writes a [`protocol::WorkerOutcome::MemoryLimit`] outcome, encoded now so
/// the handler allocates nothing, on `channel`, and exits. Without it, `abort()` would go
/// on to system calls the worker's seccomp filter does not allow, and the worker would
/// die of SIGSYS with nothing said.
pub fn report_aborts(channel: std::os::fd::RawFd) {
    extern "C" fn on_abort(_signal: c_int) {
        let fd = ABORT_CHANNEL.load(std::sync::atomic::Ordering::Acquire);
        if let (true, Some(report)) = (fd >= 0, ABORT_REPORT.get()) {
            let mut sent = 0;
            while sent < report.len() {
                // SAFETY: write(2) is async-signal-safe; the buffer lives for the process.
                let n = unsafe { libc::write(fd, report[sent..].as_ptr().cast(), report.len() - sent) };
                if n <= 0 {
                    break;
                }
                sent += n as usize;
            }
        }
        exit_as(WorkerExit::Aborted)
    }
    let report = protocol::frame::encode(&protocol::WorkerToHost::Finished {
        outcome: protocol::WorkerOutcome::MemoryLimit,
        console_dropped_bytes: 0,
        unanswered_calls: Vec::new(),
        times: None,
    })
    .unwrap_or_default();
    let _ = ABORT_REPORT.set(report);
    ABORT_CHANNEL.store(channel, std::sync::atomic::Ordering::Release);
    let handler = on_abort as extern "C" fn(c_int) as libc::sighandler_t;
    // SAFETY: installs a handler that only calls write(2) and _exit(2), both
    // async-signal-safe, on data that never changes after this point.
    unsafe {
        libc::signal(libc::SIGABRT, handler);
    }
}

/// The spawn path: this process was started for one program, with its channel.
pub fn run_spawned(channel: OwnedFd, host_pid: i32, options: &SandboxOptions) -> ! {
    let mut setup = Setup::new(Role::Run, options);
    setup.die_with_host(Some(host_pid)).unwrap_or_else(|e| fail(&e.to_string()));
    let base = memory::current_data_bytes().unwrap_or_else(|e| fail(&format!("cannot measure memory: {e}")))
        + SPAWNED_ENGINE_ALLOWANCE;
    let fd = channel.as_raw_fd();
    if let Err(e) = setup.enter_template(&[fd], engine::ENGINE_GENERATES_CODE, Environment::EngineSwitchesOnly) {
        fail(&e.to_string());
    }
    setup.fork_and_mirror().unwrap_or_else(|e| fail(&e.to_string()));
    setup.enter_worker(&[fd], Some(fd)).unwrap_or_else(|e| fail(&e.to_string()));
    let mut channel = protocol::WorkerChannel::new(channel, protocol::MAX_FRAME_BYTES);
    let start = match channel.recv_from_host_blocking() {
        Ok(protocol::HostToWorker::Start(start)) => start,
        Ok(_) => fail("the first message must start a program"),
        Err(_) => exit_as(WorkerExit::HostGone),
    };
    let mut engine = engine::Engine::new(Some(start.limits.memory_bytes)).unwrap_or_else(|e| fail(&e.to_string()));
    let prepared = program::prepare(&mut engine, channel, start.limits, base, &mut setup);
    program::run(&mut engine, prepared, start)
}

/// The entry point a payload exports: `int codemode_payload(int argc, char **argv)`.
type PayloadEntry = unsafe extern "C" fn(c_int, *const *const c_char) -> c_int;

/// Runs a native payload under the worker's policy (`sandbox-exec`).
///
/// The payload is a shared object exporting [`PayloadEntry`] as `codemode_payload`. It
/// is loaded before the sandbox hides the filesystem, then called in a worker that went
/// through exactly the worker's setup and lock (namespaces, empty root, Landlock, no
/// capabilities, resource limits, the worker's seccomp table). Its exit code is this
/// process's; it keeps standard output and error (descriptors 1 and 2) to report.
pub fn exec_payload(path: &std::path::Path, args: &[String], host_pid: i32, options: &SandboxOptions) -> ! {
    let mut setup = Setup::new(Role::Exec, options);
    setup.die_with_host(Some(host_pid)).unwrap_or_else(|e| fail(&e.to_string()));
    let path = path.display().to_string();
    let c_path = CString::new(path.as_str()).unwrap_or_else(|_| fail("the payload path contains a NUL byte"));
    // SAFETY: dlopen with a valid C string; the library's constructors run now, before
    // the sandbox, which is the documented contract for payloads.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a message owned by libc, valid until the next dl call.
        let why = unsafe { std::ffi::CStr::from_ptr(libc::dlerror()) }.to_string_lossy().into_owned();
        fail(&format!("cannot load the payload {path}: {why}"));
    }
    // SAFETY: dlsym on the handle we just opened, with a valid C string.
    let symbol = unsafe { libc::dlsym(handle, c"codemode_payload".as_ptr()) };
    if symbol.is_null() {
        fail(&format!("{path} does not export `int codemode_payload(int argc, char **argv)`"));
    }
    // SAFETY: the payload contract says the symbol has this signature.
    let entry: PayloadEntry = unsafe { std::mem::transmute::<*mut libc::c_void, PayloadEntry>(symbol) };
    let c_args: Vec<CString> = std::iter::once(path.clone())
        .chain(args.iter().cloned())
        .map(|a| CString::new(a).unwrap_or_default())
        .collect();
    let mut argv: Vec<*const c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());

    if let Err(e) = setup.enter_template(&[1, 2], false, Environment::Empty) {
        fail(&e.to_string());
    }
    setup.fork_and_mirror().unwrap_or_else(|e| fail(&e.to_string()));
    setup.enter_worker(&[1, 2], None).unwrap_or_else(|e| fail(&e.to_string()));
    let limits = rlimits::worker_rlimits(256 * 1024 * 1024 + SPAWNED_ENGINE_ALLOWANCE, 30);
    if let Err(e) = setup.lock(&limits) {
        fail(&e.to_string());
    }
    // SAFETY: calls the payload with a NUL-terminated argv that outlives the call.
    let code = unsafe { entry((argv.len() - 1) as c_int, argv.as_ptr()) };
    exit_now(code)
}

/// Forks a child into a new pid namespace, as each worker is, and asks it whether it is
/// pid 1 there: `None` when it is, the missing layer otherwise.
fn probe_pid_namespace() -> Option<protocol::worker::MissingLayer> {
    let missing =
        |reason: String| Some(protocol::worker::MissingLayer { layer: protocol::worker::Layer::PidNamespace, reason });
    // SAFETY: a raw clone(2) without a new stack behaves like fork(2); the probe's child
    // is single-threaded, and its own child only asks for its pid and exits.
    let pid =
        unsafe { libc::syscall(libc::SYS_clone, SPAWNED_CLONE_FLAGS as libc::c_ulong, 0usize, 0usize, 0usize, 0usize) };
    match pid {
        -1 => missing(format!("clone(CLONE_NEWPID) failed: {}", std::io::Error::last_os_error())),
        // SAFETY: getpid(2) has no preconditions.
        0 => exit_now(if unsafe { libc::getpid() } == 1 { 0 } else { 1 }),
        pid => {
            let mut status = 0;
            // SAFETY: waits for our own child, writing its status into a local.
            let waited = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
            if waited == pid as libc::pid_t && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                None
            } else {
                missing("a child forked with CLONE_NEWPID is not pid 1 of its namespace".into())
            }
        }
    }
}

/// `sandbox-worker detect`: reads the plugin at `dir` (in `format` when forced) and
/// prints its layout as JSON, `{"Ok": <layout>}` or `{"Err": "<why>"}`, on standard
/// output. The folder is untrusted: this process bounds its own memory and CPU first,
/// and a module that overflows the parser's stack ends this process (the host reads
/// that as the plugin being unavailable), never the host.
pub fn detect_layout(dir: &std::path::Path, format: Option<&str>) -> ! {
    let mut setup = Setup::new(Role::Detect, &SandboxOptions::new(protocol::worker::SandboxMode::Required));
    let steps =
        setup.limit_reader().and_then(|()| setup.die_with_host(None)).and_then(|()| setup.read_only_folder(dir));
    if let Err(e) = steps {
        fail(&e.to_string());
    }
    let result: Result<plugin_format::Layout, String> = match format
        .map(|f| plugin_format::Format::parse(f).ok_or_else(|| format!("there is no plugin format {f:?}")))
    {
        Some(Err(why)) => Err(why),
        Some(Ok(forced)) => plugin_format::detect(dir, Some(forced)).map_err(|e| e.to_string()),
        None => plugin_format::detect(dir, None).map_err(|e| e.to_string()),
    };
    match serde_json::to_string(&result) {
        Ok(text) => {
            use std::io::Write;
            let mut out = std::io::stdout();
            if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
                fail("the plugin's layout cannot be written to standard output");
            }
        }
        Err(e) => fail(&format!("the plugin's layout cannot be written: {e}")),
    }
    exit_now(0)
}

/// A probe step's failure as the layer it leaves missing.
fn missing_layer(error: SetupError) -> protocol::worker::MissingLayer {
    match error {
        SetupError::Layer(e) => protocol::worker::MissingLayer { layer: e.layer, reason: e.reason },
        // Only a bug in the probe's own order gets here: no layer can be named, so the
        // last one, seccomp, is reported missing with the reason.
        other => protocol::worker::MissingLayer { layer: protocol::worker::Layer::Seccomp, reason: other.to_string() },
    }
}

/// What this machine can apply: a [`protocol::worker::ProbeReport`] as JSON on
/// standard output (for `codemode sandbox-check`).
pub fn probe() -> ! {
    let release = nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default();
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns the ABI version.
    let landlock_abi =
        unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    // SAFETY: PR_GET_SECCOMP takes no arguments.
    let seccomp_mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    let cgroup = if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        "v2"
    } else if std::fs::read_to_string("/proc/mounts").map(|m| m.contains(" cgroup ")).unwrap_or(false) {
        "v1"
    } else {
        "none"
    };
    /// What the throwaway child reports back.
    #[derive(serde::Serialize, serde::Deserialize, Default)]
    struct Tried {
        missing: Vec<protocol::worker::MissingLayer>,
        outside_uid: Option<u32>,
    }
    // Try every layer in a throwaway child, exactly as a worker does, and collect what
    // is missing.
    let (read_end, write_end) = nix::unistd::pipe().unwrap_or_else(|e| fail(&format!("pipe: {e}")));
    // SAFETY: fork in a single-threaded process; the child only sets up and exits.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            drop(read_end);
            let fd = write_end.as_raw_fd();
            let options = SandboxOptions::new(protocol::worker::SandboxMode::AllowWeaker);
            let mut setup = Setup::new(Role::Probe, &options);
            let tried = match setup.enter_template(&[fd], engine::ENGINE_GENERATES_CODE, Environment::Empty) {
                Ok(policy) => {
                    let mut missing = policy.missing.clone();
                    let outside_uid = policy.outside_uid;
                    missing.extend(probe_pid_namespace());
                    if let Err(e) = setup.enter_worker(&[fd], None) {
                        missing.push(missing_layer(e));
                    }
                    match setup.lock(&rlimits::worker_rlimits(1 << 30, 10)) {
                        Ok(more) => missing.extend(more),
                        Err(e) => missing.push(missing_layer(e)),
                    }
                    Tried { missing, outside_uid }
                }
                Err(e) => Tried { missing: vec![missing_layer(e)], outside_uid: None },
            };
            let text = serde_json::to_string(&tried).unwrap_or_default();
            let _ = nix::unistd::write(&write_end, text.as_bytes());
            exit_now(0)
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop(write_end);
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut std::fs::File::from(read_end), &mut text);
            let _ = nix::sys::wait::waitpid(child, None);
            let tried: Tried = serde_json::from_str(&text)
                .unwrap_or_else(|e| fail(&format!("the probe's child reported nothing readable: {e}")));
            let report = protocol::worker::ProbeReport {
                engine: engine::ENGINE,
                kernel: release,
                landlock_abi: u32::try_from(landlock_abi).ok(),
                seccomp_available: seccomp_mode >= 0,
                cgroup: cgroup.into(),
                outside_uid: tried.outside_uid,
                missing: tried.missing,
                rlimits: rlimits::report(&rlimits::worker_rlimits(1 << 30, 10)),
                seccomp: sandbox::seccomp::report(&sandbox::seccomp::worker_table(engine::ENGINE_GENERATES_CODE)),
            };
            println!("{}", serde_json::to_string(&report).unwrap_or_default());
            exit_now(0)
        }
        Err(e) => fail(&format!("fork: {e}")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use protocol::{WorkerOutcome, WorkerToHost};

    /// Set in the test binary this module starts again for a forking test.
    const ALONE: &str = "CODEMODE_TEST_ALONE";

    /// Whether this is the copy of the test binary started by [`rerun_alone`].
    fn alone() -> bool {
        std::env::var_os(ALONE).is_some()
    }

    /// Runs test `name` again in a new copy of this test binary, on its main thread and
    /// with no other test running: a fork from the harness's many threads can copy a lock
    /// another test holds (the panic hook's, the allocator's) and hang the child.
    fn rerun_alone(name: &str) {
        let exe = std::env::current_exe().unwrap();
        let output = std::process::Command::new(exe)
            .args(["--exact", name, "--test-threads=1", "--nocapture"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && text.contains("1 passed"),
            "{name} failed alone:\n{text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Runs `body` in a forked child holding one end of a socket pair; returns what the
    /// child sent on it and how it exited. Only in a binary started by [`rerun_alone`].
    fn in_child(body: fn(std::os::fd::RawFd)) -> (Option<WorkerToHost>, i32) {
        assert!(alone(), "in_child forks: call it from a test started by rerun_alone");
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        // SAFETY: this process runs one test on its main thread (`rerun_alone`), so no
        // other thread can hold a lock the child needs.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                drop(ours);
                body(theirs.as_raw_fd());
                exit_now(0)
            }
            nix::unistd::ForkResult::Parent { child } => {
                drop(theirs);
                let mut ours = ours;
                let sent = protocol::frame::read_frame::<_, WorkerToHost>(&mut ours, protocol::MAX_FRAME_BYTES).ok();
                let status = nix::sys::wait::waitpid(child, None).unwrap();
                let code = match status {
                    nix::sys::wait::WaitStatus::Exited(_, code) => code,
                    other => panic!("the child ended with {other:?}"),
                };
                (sent, code)
            }
        }
    }

    #[test]
    fn a_panic_is_reported_on_the_channel_as_an_internal_outcome() {
        if !alone() {
            return rerun_alone("tests::a_panic_is_reported_on_the_channel_as_an_internal_outcome");
        }
        let (sent, code) = in_child(|fd| {
            report_panics(Some(fd));
            panic!("a bug on purpose");
        });
        assert_eq!(code, WorkerExit::Panicked.code());
        match sent {
            Some(WorkerToHost::Finished { outcome: WorkerOutcome::Internal(text), .. }) => {
                assert!(
                    text.starts_with("the worker failed: a bug on purpose at sandbox-worker/src/lib.rs:"),
                    "{text}"
                );
                assert!(text.ends_with("(a bug in codemode, not in the program)"), "{text}");
            }
            other => panic!("expected an internal outcome, got {other:?}"),
        }
    }

    #[test]
    fn an_abort_is_reported_as_the_memory_limit() {
        if !alone() {
            return rerun_alone("tests::an_abort_is_reported_as_the_memory_limit");
        }
        let (sent, code) = in_child(|fd| {
            report_aborts(fd);
            std::process::abort();
        });
        assert_eq!(code, WorkerExit::Aborted.code());
        assert!(matches!(sent, Some(WorkerToHost::Finished { outcome: WorkerOutcome::MemoryLimit, .. })), "{sent:?}");
    }
}
