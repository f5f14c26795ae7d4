//! `sandbox-worker`: started by the codemode host, never by people.
//!
//! The command line is [`protocol::worker::WorkerCommand`]: the host builds it with
//! `to_args` and this parses it with `parse`, so the two cannot disagree.
//!
//! ```text
//! sandbox-worker template --control-fd FD --host-pid PID [--sandbox S]   serve fork requests
//! sandbox-worker run --channel-fd FD --host-pid PID [--sandbox S]        run one program (spawn path)
//! sandbox-worker exec --host-pid PID [--sandbox S] --payload SO [-- ARGS]  run a native payload
//! sandbox-worker plugin --dir PATH --format F --name NAME --host-pid PID [--sandbox S] --memory-mib N --cpu-step-ms N
//!                                                                       serve a JavaScript plugin on stdin/stdout
//! sandbox-worker detect --dir PATH [--format F]                          print a plugin's layout (JSON)
//! sandbox-worker probe                                                   report the sandbox layers
//! sandbox-worker info                                                    print {"engine": ...}
//! ```
//! `S` is `required` (default), `allow-weaker` or `disabled` (for measuring the sandbox's
//! cost). A worker built with the `insecure-test-switches` feature also takes
//! `exec --skip-layer LAYER` (the escape suite's below-seccomp cases); any other build
//! refuses it.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use protocol::worker::WorkerCommand;
use sandbox_worker::sandbox::SandboxOptions;
use sandbox_worker::{detect_layout, engine::ENGINE, exec_payload, fail, plugin, probe, run_spawned, template};

/// Takes ownership of a descriptor the host handed down.
fn inherited_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: F_GETFD only reads the descriptor's flags; an unopened fd yields EBADF.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        fail(&format!("descriptor {fd} is not open"));
    }
    // SAFETY: the host opened `fd` for this process and nothing else in it owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Whether this build accepts `--skip-layer` (only test builds do).
const TEST_SWITCHES: bool = cfg!(feature = "insecure-test-switches");

fn main() {
    // The QuickJS backend would cache compiled bytecode under $XDG_CACHE_HOME or /tmp:
    // a worker must never write host files, and must not read back what another
    // program left there. Decided once, before the engine starts.
    std::env::set_var("V82JSC_NO_BC_CACHE", "1");
    // swc's parser (programs' forms, plugins' modules) asks stacker how much stack is
    // left; stacker reads the main thread's bounds from /proc/self/maps on its first
    // question, which inside the sandbox would be a forbidden open(2). Asked here, the
    // answer is kept for this thread and every process forked from it.
    let _ = stacker::remaining_stack();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = WorkerCommand::parse(&args).unwrap_or_else(|e| {
        eprintln!("sandbox-worker: {e}");
        std::process::exit(2);
    });
    // A test build must never serve programs or plugins, even if it is left where the
    // release worker belongs: it fails closed.
    if TEST_SWITCHES && !matches!(command, WorkerCommand::Exec { .. } | WorkerCommand::Probe | WorkerCommand::Info) {
        fail("this sandbox-worker was built with the insecure-test-switches feature and only runs escape-suite payloads (exec); build it without the feature to run programs");
    }
    match command {
        WorkerCommand::Template { control_fd, host_pid, sandbox } => {
            template::serve(inherited_fd(control_fd), host_pid, &SandboxOptions::new(sandbox))
        }
        WorkerCommand::Run { channel_fd, host_pid, sandbox } => {
            run_spawned(inherited_fd(channel_fd), host_pid, &SandboxOptions::new(sandbox))
        }
        WorkerCommand::Exec { host_pid, sandbox, payload, args, skip_layers } => {
            if !skip_layers.is_empty() && !TEST_SWITCHES {
                fail("--skip-layer exists only in a worker built with the insecure-test-switches feature (the escape suite's test build)");
            }
            exec_payload(&payload, &args, host_pid, &SandboxOptions { mode: sandbox, skip: skip_layers })
        }
        WorkerCommand::Plugin { dir, format, name, host_pid, sandbox, memory_mib, cpu_step_ms, modules_bound } => {
            plugin::run(plugin::PluginOptions {
                dir,
                modules_bound,
                format,
                name,
                host_pid,
                sandbox: SandboxOptions::new(sandbox),
                memory_bytes: memory_mib << 20,
                cpu_step: std::time::Duration::from_millis(cpu_step_ms),
            })
        }
        WorkerCommand::Detect { dir, format } => detect_layout(&dir, format.as_deref()),
        WorkerCommand::Probe => probe(),
        WorkerCommand::Info => {
            println!("{}", serde_json::to_string(&protocol::worker::WorkerInfo { engine: ENGINE }).unwrap_or_default())
        }
    }
}
