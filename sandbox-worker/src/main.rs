//! `sandbox-worker`: started by the codemode host, never by people.
//!
//! ```text
//! sandbox-worker template --control-fd FD --host-pid PID   serve fork requests (template path)
//! sandbox-worker run --channel-fd FD --host-pid PID        run one program (spawn path)
//! sandbox-worker info                                      print {"engine": ...}
//! ```

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use sandbox_worker::{engine::ENGINE_NAME, fail, run_spawned, template};

fn flag(args: &[String], name: &str) -> i32 {
    args.windows(2)
        .find(|w| w[0] == name)
        .and_then(|w| w[1].parse().ok())
        .unwrap_or_else(|| fail(&format!("missing or invalid {name}; this program is started by the codemode host")))
}

/// Takes ownership of a descriptor the host handed down.
fn inherited_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: F_GETFD only reads the descriptor's flags; an unopened fd yields EBADF.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        fail(&format!("descriptor {fd} is not open"));
    }
    // SAFETY: the host opened `fd` for this process and nothing else in it owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("template") => template::serve(inherited_fd(flag(&args, "--control-fd")), flag(&args, "--host-pid")),
        Some("run") => run_spawned(inherited_fd(flag(&args, "--channel-fd")), flag(&args, "--host-pid")),
        Some("info") => println!("{{\"engine\":\"{ENGINE_NAME}\"}}"),
        _ => {
            eprintln!("sandbox-worker is started by the codemode host (modes: template, run, info)");
            std::process::exit(2);
        }
    }
}
