//! The codemode sandbox worker: one process per program, running a deno_core runtime
//! that holds the ECMAScript language, `tools` and `console`, and nothing else.
//!
//! Two ways to start a worker, chosen by the host:
//! - **template** ([`template`]): one pristine process initialises the engine once and
//!   forks a worker per program (fast; QuickJS only, since forking an initialised V8 is
//!   unsafe);
//! - **spawn** ([`run_spawned`]): a new process per program that initialises its own
//!   engine (works with both engines).
//!
//! Either way the worker then runs [`program::run`]: set the limits, compile, drive the
//! program while answering its tool calls through the host, report the outcome, exit.

pub mod engine;
pub mod memory;
pub mod ops;
pub mod program;
pub mod step_clock;
pub mod template;

use std::os::fd::OwnedFd;

use protocol::{HostToWorker, WorkerChannel, MAX_FRAME_BYTES};

/// Exit code when the host went away (nothing is left to report to).
pub const EXIT_HOST_GONE: i32 = 70;
/// Exit code when the worker could not set itself up.
pub const EXIT_SETUP_FAILED: i32 = 71;
/// Exit code when the step watchdog had to end a program that ignored termination
/// (blocked outside JavaScript); the host reports it as the CPU limit.
/// Must match `codemode::executor::WORKER_EXIT_CPU_LIMIT`.
pub const EXIT_CPU_LIMIT: i32 = 72;

/// Ends the process at once, without unwinding or running destructors: the runtime's
/// teardown is wasted work for a process whose memory the kernel reclaims anyway.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit(2) has no preconditions; it never returns.
    unsafe { libc::_exit(code) }
}

/// Reports a setup failure on stderr and exits: the worker fails closed.
pub fn fail(message: &str) -> ! {
    eprintln!("sandbox-worker: {message}");
    exit_now(EXIT_SETUP_FAILED)
}

/// Asks for SIGKILL when the parent dies, then checks that the parent is still
/// `expected_parent` (it may have died before the request took effect).
pub fn die_with_parent(expected_parent: i32) {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number and has no memory arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        fail("cannot set the parent-death signal");
    }
    if nix::unistd::getppid().as_raw() != expected_parent {
        exit_now(EXIT_HOST_GONE);
    }
}

/// The spawn path: this process was started for one program, with its channel on `fd`.
pub fn run_spawned(channel: OwnedFd, host_pid: i32) -> ! {
    die_with_parent(host_pid);
    let mut channel = WorkerChannel::new(channel, MAX_FRAME_BYTES);
    let start = match channel.recv_from_host_blocking() {
        Ok(HostToWorker::Start(start)) => start,
        Ok(_) => fail("the first message must start a program"),
        Err(_) => exit_now(EXIT_HOST_GONE),
    };
    let mut engine = engine::Engine::new(Some(start.limits.memory_bytes)).unwrap_or_else(|e| fail(&e.to_string()));
    let base = memory::current_data_bytes().unwrap_or_else(|e| fail(&format!("cannot measure memory: {e}")));
    program::run(&mut engine, channel, start, base)
}
