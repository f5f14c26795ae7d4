//! The template process: a pristine, initialised engine that forks one worker per program.
//!
//! The template never runs user code. It creates and bootstraps the engine once
//! (about 17 ms), enters the sandbox (its [`Setup`], [`Role::Template`]), tells the
//! host it is ready, and then serves fork requests: each request carries the worker's
//! end of a fresh channel, and the template clones itself with `CLONE_PARENT |
//! CLONE_NEWPID`, so the worker is pid 1 of its own pid namespace and the host's child
//! (the host reaps it and can kill it through a pidfd) while it inherits the
//! initialised engine. Forking is safe because the template is single-threaded when it
//! forks; [`serve`] checks that before it accepts requests.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use protocol::template::{recv_control, send_control, TemplateReply, TemplateRequest};
use protocol::{FrameError, WorkerChannel, MAX_FRAME_BYTES};

use crate::engine::{Engine, ENGINE, ENGINE_GENERATES_CODE};
use crate::sandbox::setup::{Forked, Role, Setup};
use crate::sandbox::{self, SandboxOptions};
use crate::{fail, fork_exclusions, memory, program};

/// Serves fork requests on `control` until the host closes it.
pub fn serve(control: OwnedFd, host_pid: i32, options: &SandboxOptions) -> ! {
    crate::report_panics(None);
    let mut setup = Setup::new(Role::Template, options);
    setup.die_with_host(Some(host_pid)).unwrap_or_else(|e| fail(&e.to_string()));
    let mut engine = Engine::new(None).unwrap_or_else(|e| fail_to_host(&control, &e.to_string()));
    // One rehearsal here: what a program's first run sets up once (the engine's lazily
    // made structures, the driver's paths) is then made before any fork, and workers
    // start from it instead of each making (and copying) it again.
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(event_loop) => program::rehearse(&mut engine, &event_loop),
        Err(e) => fail_to_host(&control, &format!("cannot make an event loop for the rehearsal: {e}")),
    }
    // Collect garbage once now, so that a forked worker starts with a compact heap and
    // does not begin its life with a collection that touches (and so copies) every page.
    engine.runtime.v8_isolate().low_memory_notification();
    // SAFETY: malloc_trim only releases free memory back to the system.
    unsafe { libc::malloc_trim(0) };
    // Keep what no worker touches out of every fork: fewer page-table entries to copy
    // at fork and to tear down at exit. An optimisation: if it fails, forks copy it.
    let _ = fork_exclusions::exclude_engine_caches();
    let base_data_bytes =
        memory::current_data_bytes().unwrap_or_else(|e| fail_to_host(&control, &format!("cannot measure memory: {e}")));
    match thread_count() {
        Ok(1) => {}
        Ok(n) => fail_to_host(
            &control,
            &format!("the template has {n} threads after initialising the engine; forking it is unsafe"),
        ),
        Err(e) => fail_to_host(&control, &format!("cannot count the template's threads: {e}")),
    }
    let missing_layers =
        match setup.enter_template(&[control.as_raw_fd()], ENGINE_GENERATES_CODE, sandbox::Environment::Empty) {
            Ok(policy) => policy.missing.clone(),
            Err(e) => fail_to_host(&control, &e.to_string()),
        };
    if send_control(control.as_fd(), &TemplateReply::Ready { engine: ENGINE, missing_layers }, None).is_err() {
        crate::exit_as(protocol::worker::WorkerExit::HostGone);
    }
    loop {
        let reply = match recv_control::<TemplateRequest>(control.as_fd()) {
            Ok((TemplateRequest::Fork, Some(channel))) => {
                fork_worker(&mut engine, &mut setup, &control, channel, base_data_bytes)
            }
            Ok((TemplateRequest::Fork, None)) => {
                TemplateReply::Refused { reason: "a fork request must carry the worker's channel".into() }
            }
            Err(FrameError::Closed) => crate::exit_now(0),
            Err(FrameError::Io(e)) => fail(&format!("the control channel failed: {e}")),
            Err(e) => TemplateReply::Refused { reason: e.to_string() },
        };
        if send_control(control.as_fd(), &reply, None).is_err() {
            crate::exit_as(protocol::worker::WorkerExit::HostGone);
        }
    }
}

/// Tells the host why the template cannot serve, then exits.
fn fail_to_host(control: &OwnedFd, reason: &str) -> ! {
    let _ = send_control(control.as_fd(), &TemplateReply::Failed { reason: reason.to_string() }, None);
    fail(reason)
}

/// Forks one worker that runs the program arriving on `channel`.
fn fork_worker(
    engine: &mut Engine,
    setup: &mut Setup,
    control: &OwnedFd,
    channel: OwnedFd,
    base_data_bytes: u64,
) -> TemplateReply {
    match setup.fork_worker() {
        Err(e) => TemplateReply::Refused { reason: e.to_string() },
        Ok(Forked::Child) => {
            let _ = control; // closed with every other descriptor by enter_worker
            let fd = channel.as_raw_fd();
            if let Err(e) = setup.enter_worker(&[fd], Some(fd)) {
                fail(&e.to_string());
            }
            run_first_program(engine, channel, base_data_bytes, setup)
        }
        Ok(Forked::Parent(pid)) => {
            drop(channel);
            TemplateReply::Forked { pid }
        }
    }
}

/// Reads the first message from the channel and runs the program: at once when it is
/// the program, or, for a warm worker the host prepares ahead of demand
/// ([`protocol::HostToWorker::Prepare`]), after the limits' setup and the wait for it.
pub fn run_first_program(engine: &mut Engine, channel: OwnedFd, base_data_bytes: u64, setup: &mut Setup) -> ! {
    let mut channel = WorkerChannel::new(channel, MAX_FRAME_BYTES);
    match channel.recv_from_host_blocking() {
        Ok(protocol::HostToWorker::Prepare { limits, rehearse }) => {
            let mut prepared = program::prepare(engine, channel, limits, base_data_bytes, setup);
            if rehearse {
                prepared.rehearse(engine);
            }
            let start = prepared.wait_for_start();
            program::run(engine, prepared, start)
        }
        Ok(protocol::HostToWorker::Start(start)) => {
            let prepared = program::prepare(engine, channel, start.limits, base_data_bytes, setup);
            program::run(engine, prepared, start)
        }
        Ok(_) => fail("the first message must prepare the worker or start a program"),
        Err(_) => crate::exit_as(protocol::worker::WorkerExit::HostGone),
    }
}

/// Threads of this process, from /proc.
fn thread_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}
