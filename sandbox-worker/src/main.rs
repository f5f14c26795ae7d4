//! `sandbox-worker`: started by the codemode host, never by people.
//!
//! ```text
//! sandbox-worker template --control-fd FD --host-pid PID [--sandbox S]   serve fork requests
//! sandbox-worker run --channel-fd FD --host-pid PID [--sandbox S]        run one program (spawn path)
//! sandbox-worker exec --host-pid PID [--sandbox S] --payload SO [-- ARGS]  run a native payload
//! sandbox-worker plugin --dir DIR --name NAME --host-pid PID [--sandbox S] [--memory-mib N] [--cpu-step-ms N]
//!                                                                       serve a JavaScript plugin on stdin/stdout
//! sandbox-worker probe                                                   report the sandbox layers
//! sandbox-worker info                                                    print {"engine": ...}
//! ```
//! `S` is `required` (default), `allow-weaker` or `disabled` (for measuring the sandbox's cost).

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use sandbox_worker::sandbox::Strictness;
use sandbox_worker::{engine::ENGINE_NAME, exec_payload, fail, plugin, probe, run_spawned, template};

fn value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let before_dashes = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args[..before_dashes].windows(2).find(|w| w[0] == name).map(|w| w[1].as_str())
}

fn number(args: &[String], name: &str) -> i32 {
    value(args, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fail(&format!("missing or invalid {name}; this program is started by the codemode host")))
}

fn strictness(args: &[String]) -> Strictness {
    match value(args, "--sandbox") {
        None | Some("required") => Strictness::Required,
        Some("allow-weaker") => Strictness::AllowWeaker,
        Some("disabled") => Strictness::Disabled,
        Some(other) => fail(&format!("--sandbox must be required or allow-weaker, not {other}")),
    }
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
    // The QuickJS backend would cache compiled bytecode under $XDG_CACHE_HOME or /tmp:
    // a worker must never write host files, and must not read back what another
    // program left there. Decided once, before the engine starts.
    std::env::set_var("V82JSC_NO_BC_CACHE", "1");
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("template") => template::serve(inherited_fd(number(&args, "--control-fd")), number(&args, "--host-pid"), strictness(&args)),
        Some("run") => run_spawned(inherited_fd(number(&args, "--channel-fd")), number(&args, "--host-pid"), strictness(&args)),
        Some("exec") => {
            let payload = value(&args, "--payload").unwrap_or_else(|| fail("missing --payload"));
            let rest: Vec<String> = args.iter().skip_while(|a| *a != "--").skip(1).cloned().collect();
            exec_payload(payload, &rest, number(&args, "--host-pid"), strictness(&args))
        }
        Some("plugin") => plugin::run(plugin::PluginOptions {
            dir: value(&args, "--dir").unwrap_or_else(|| fail("missing --dir")).into(),
            name: value(&args, "--name").unwrap_or_else(|| fail("missing --name")).to_string(),
            host_pid: number(&args, "--host-pid"),
            strictness: strictness(&args),
            memory_bytes: value(&args, "--memory-mib").and_then(|v| v.parse::<u64>().ok()).unwrap_or(128) << 20,
            cpu_step: std::time::Duration::from_millis(value(&args, "--cpu-step-ms").and_then(|v| v.parse().ok()).unwrap_or(10_000)),
        }),
        Some("probe") => probe(),
        Some("info") => println!("{{\"engine\":\"{ENGINE_NAME}\"}}"),
        _ => {
            eprintln!("sandbox-worker is started by the codemode host (modes: template, run, exec, plugin, probe, info)");
            std::process::exit(2);
        }
    }
}
