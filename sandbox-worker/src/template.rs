//! The template process: a pristine, initialised engine that forks one worker per program.
//!
//! The template never runs user code. It creates and bootstraps the engine once
//! (about 17 ms), tells the host it is ready, and then serves fork requests: each
//! request carries the worker's end of a fresh channel, and the template clones
//! itself with `CLONE_PARENT`, so the worker is the host's child (the host reaps it
//! and can kill it through a pidfd) while inheriting the initialised engine. Forking
//! is safe because the template is single-threaded when it forks; [`serve`] checks
//! that before it accepts requests.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use protocol::template::{recv_control, send_control, TemplateReply, TemplateRequest};
use protocol::{FrameError, WorkerChannel, MAX_FRAME_BYTES};

use crate::engine::{Engine, ENGINE_NAME};
use crate::{die_with_parent, fail, memory, program};

/// Serves fork requests on `control` until the host closes it.
pub fn serve(control: OwnedFd, host_pid: i32) -> ! {
    die_with_parent(host_pid);
    let mut engine = Engine::new(None).unwrap_or_else(|e| fail(&e.to_string()));
    let base_data_bytes = memory::current_data_bytes().unwrap_or_else(|e| fail(&format!("cannot measure memory: {e}")));
    match thread_count() {
        Ok(1) => {}
        Ok(n) => fail(&format!("the template has {n} threads after initialising the engine; forking it is unsafe")),
        Err(e) => fail(&format!("cannot count the template's threads: {e}")),
    }
    if send_control(control.as_fd(), &TemplateReply::Ready { engine: ENGINE_NAME.into() }, None).is_err() {
        crate::exit_now(crate::EXIT_HOST_GONE);
    }
    loop {
        let reply = match recv_control::<TemplateRequest>(control.as_fd()) {
            Ok((TemplateRequest::Fork, Some(channel))) => fork_worker(&mut engine, &control, channel, host_pid, base_data_bytes),
            Ok((TemplateRequest::Fork, None)) => TemplateReply::Refused { reason: "a fork request must carry the worker's channel".into() },
            Err(FrameError::Closed) => crate::exit_now(0),
            Err(FrameError::Io(e)) => fail(&format!("the control channel failed: {e}")),
            Err(e) => TemplateReply::Refused { reason: e.to_string() },
        };
        if send_control(control.as_fd(), &reply, None).is_err() {
            crate::exit_now(crate::EXIT_HOST_GONE);
        }
    }
}

/// Forks one worker that runs the program arriving on `channel`.
fn fork_worker(engine: &mut Engine, control: &OwnedFd, channel: OwnedFd, host_pid: i32, base_data_bytes: u64) -> TemplateReply {
    // SAFETY: a raw clone(2) with CLONE_PARENT|SIGCHLD and no new stack behaves like
    // fork(2), except that the child's parent is the host. The template is
    // single-threaded (checked in `serve`), so no lock is held by a thread that would
    // not exist in the child.
    let pid = unsafe { libc::syscall(libc::SYS_clone, (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong, 0usize, 0usize, 0usize, 0usize) };
    match pid {
        -1 => TemplateReply::Refused { reason: format!("clone failed: {}", std::io::Error::last_os_error()) },
        0 => {
            // The worker: it must not hold the template's control channel.
            let _ = nix::unistd::close(control.as_raw_fd());
            die_with_parent(host_pid);
            let mut channel = WorkerChannel::new(channel, MAX_FRAME_BYTES);
            match channel.recv_from_host_blocking() {
                Ok(protocol::HostToWorker::Start(start)) => program::run(engine, channel, start, base_data_bytes),
                Ok(_) => fail("the first message must start a program"),
                Err(_) => crate::exit_now(crate::EXIT_HOST_GONE),
            }
        }
        pid => {
            drop(channel);
            TemplateReply::Forked { pid: pid as i32 }
        }
    }
}

/// Threads of this process, from /proc.
fn thread_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}
