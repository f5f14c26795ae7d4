//! The codemode sandbox worker: one process per program, running a deno_core runtime
//! that holds the ECMAScript language, `tools` and `console`, and nothing else, inside
//! the OS sandbox ([`sandbox`]).
//!
//! Process roles, each with one ordered setup:
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
//! Workers run [`program::run`]: set the limits, compile, lock the process down, drive
//! the program while the host answers its tool calls, report the outcome, exit.

pub mod engine;
pub mod memory;
pub mod ops;
pub mod plugin;
pub mod program;
pub mod sandbox;
pub mod step_clock;
pub mod template;

use std::ffi::{c_char, c_int, CString};
use std::os::fd::{AsRawFd, OwnedFd};

use sandbox::{rlimits, seccomp::SPAWNED_CLONE_FLAGS, Environment, Strictness};

/// Exit code when the host went away (nothing is left to report to).
pub const EXIT_HOST_GONE: i32 = 70;
/// Exit code when the worker could not set itself up (its sandbox or its engine).
pub const EXIT_SETUP_FAILED: i32 = 71;
/// Exit code when the step watchdog had to end a program that ignored termination
/// (blocked outside JavaScript); the host reports it as the CPU limit.
/// Must match `codemode::executor::WORKER_EXIT_CPU_LIMIT`.
pub const EXIT_CPU_LIMIT: i32 = 72;

/// Memory the spawn path allows for the engine itself on top of the program's limit
/// (the engine is created after the sandbox hides /proc, so it cannot be measured).
pub(crate) const SPAWNED_ENGINE_ALLOWANCE: u64 = 128 * 1024 * 1024;

/// Ends the process at once, without unwinding or running destructors: the runtime's
/// teardown is wasted work for a process whose memory the kernel reclaims anyway.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit(2) has no preconditions; it never returns.
    unsafe { libc::_exit(code) }
}

/// Reports a setup failure on stderr (while it is open) and exits: the worker fails closed.
pub fn fail(message: &str) -> ! {
    eprintln!("sandbox-worker: {message}");
    exit_now(EXIT_SETUP_FAILED)
}

/// Asks for SIGKILL when the host dies, then checks that the host is still this
/// process's parent (it may have died before the request took effect).
pub fn die_with_host(host_pid: i32) {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number and has no memory arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        fail("cannot set the parent-death signal");
    }
    if nix::unistd::getppid().as_raw() != host_pid {
        exit_now(EXIT_HOST_GONE);
    }
}

/// Forks the one worker of a launcher into a new pid namespace; in the parent, waits for
/// it and ends the same way (exit code or signal). Returns only in the child.
pub(crate) fn fork_and_mirror() {
    // SAFETY: a raw clone(2) without a new stack behaves like fork(2); the launcher is
    // single-threaded.
    let pid = unsafe { libc::syscall(libc::SYS_clone, SPAWNED_CLONE_FLAGS as libc::c_ulong, 0usize, 0usize, 0usize, 0usize) };
    match pid {
        -1 => fail(&format!("clone failed: {}", std::io::Error::last_os_error())),
        0 => {}
        pid => {
            let mut status = 0;
            // SAFETY: waits for our own child, writing its status into a local.
            while unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } < 0 {
                if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    exit_now(EXIT_SETUP_FAILED);
                }
            }
            if libc::WIFSIGNALED(status) {
                let signal = libc::WTERMSIG(status);
                // SAFETY: restores the default action and sends the signal to ourselves,
                // so the host sees the worker's signal.
                unsafe {
                    libc::signal(signal, libc::SIG_DFL);
                    libc::kill(libc::getpid(), signal);
                }
                exit_now(128 + signal);
            }
            exit_now(libc::WEXITSTATUS(status))
        }
    }
}

/// The spawn path: this process was started for one program, with its channel.
pub fn run_spawned(channel: OwnedFd, host_pid: i32, strictness: Strictness) -> ! {
    die_with_host(host_pid);
    let base = memory::current_data_bytes().unwrap_or_else(|e| fail(&format!("cannot measure memory: {e}"))) + SPAWNED_ENGINE_ALLOWANCE;
    let fd = channel.as_raw_fd();
    let policy = sandbox::enter_template(&[fd], strictness, engine::ENGINE_GENERATES_CODE, Environment::EngineSwitchesOnly).unwrap_or_else(|e| fail(&e.to_string()));
    fork_and_mirror();
    if let Err(e) = sandbox::enter_worker(&policy, &[fd], fd) {
        fail(&e.to_string());
    }
    let mut channel = protocol::WorkerChannel::new(channel, protocol::MAX_FRAME_BYTES);
    let start = match channel.recv_from_host_blocking() {
        Ok(protocol::HostToWorker::Start(start)) => start,
        Ok(_) => fail("the first message must start a program"),
        Err(_) => exit_now(EXIT_HOST_GONE),
    };
    let mut engine = engine::Engine::new(Some(start.limits.memory_bytes)).unwrap_or_else(|e| fail(&e.to_string()));
    program::run(&mut engine, channel, start, base, &policy)
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
pub fn exec_payload(path: &str, args: &[String], host_pid: i32, strictness: Strictness) -> ! {
    die_with_host(host_pid);
    let c_path = CString::new(path).unwrap_or_else(|_| fail("the payload path contains a NUL byte"));
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
    let c_args: Vec<CString> = std::iter::once(path.to_string()).chain(args.iter().cloned()).map(|a| CString::new(a).unwrap_or_default()).collect();
    let mut argv: Vec<*const c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());

    let policy = sandbox::enter_template(&[1, 2], strictness, false, Environment::Empty).unwrap_or_else(|e| fail(&e.to_string()));
    fork_and_mirror();
    if let Err(e) = sandbox::enter_worker(&policy, &[1, 2], -1) {
        fail(&e.to_string());
    }
    let limits = rlimits::worker_rlimits(256 * 1024 * 1024 + SPAWNED_ENGINE_ALLOWANCE, 30);
    if let Err(e) = sandbox::lock_worker(&policy, &limits) {
        fail(&e.to_string());
    }
    // SAFETY: calls the payload with a NUL-terminated argv that outlives the call.
    let code = unsafe { entry((argv.len() - 1) as c_int, argv.as_ptr()) };
    exit_now(code)
}

/// What this machine can apply, as JSON on standard output (for `codemode sandbox-check`).
pub fn probe() -> ! {
    let release = nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default();
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns the ABI version.
    let landlock_abi = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    // SAFETY: PR_GET_SECCOMP takes no arguments.
    let seccomp_mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    let cgroup = if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        "v2"
    } else if std::fs::read_to_string("/proc/mounts").map(|m| m.contains(" cgroup ")).unwrap_or(false) {
        "v1"
    } else {
        "none"
    };
    // Try every layer in a throwaway child and collect what is missing.
    let (read_end, write_end) = nix::unistd::pipe().unwrap_or_else(|e| fail(&format!("pipe: {e}")));
    // SAFETY: fork in a single-threaded process; the child only sets up and exits.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            drop(read_end);
            let fd = write_end.as_raw_fd();
            let missing = match sandbox::enter_template(&[fd], Strictness::AllowWeaker, engine::ENGINE_GENERATES_CODE, Environment::Empty) {
                Ok(policy) => {
                    let mut missing = policy.missing.0.clone();
                    if let Err(e) = sandbox::enter_worker(&policy, &[fd], -1) {
                        missing.push((e.layer, e.reason));
                    }
                    if let Err(e) = sandbox::lock_worker(&policy, &rlimits::worker_rlimits(1 << 30, 10)) {
                        missing.push((e.layer, e.reason));
                    }
                    missing
                }
                Err(e) => vec![(e.layer, e.reason)],
            };
            let text = serde_json::to_string(&missing).unwrap_or_default();
            let _ = nix::unistd::write(&write_end, text.as_bytes());
            exit_now(0)
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop(write_end);
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut std::fs::File::from(read_end), &mut text);
            let _ = nix::sys::wait::waitpid(child, None);
            let missing: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
            let report = serde_json::json!({
                "engine": engine::ENGINE_NAME,
                "kernel": release,
                "landlock_abi": landlock_abi,
                "seccomp_available": seccomp_mode >= 0,
                "cgroup": cgroup,
                "missing": missing,
            });
            println!("{report}");
            exit_now(0)
        }
        Err(e) => fail(&format!("fork: {e}")),
    }
}
