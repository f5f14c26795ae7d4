//! `codemode sandbox-check` and `codemode sandbox-exec`: what people who must trust the
//! sandbox use to see it and to attack it.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use protocol::worker::{Layer, ProbeReport, WorkerCommand};

use crate::cgroups::{PoolCgroup, PoolLimits};
use crate::launcher::SandboxPolicy;

/// Prints the layers and exits 0 when all are active, 1 otherwise.
pub fn check(worker: &Path) -> anyhow::Result<i32> {
    let out = Command::new(worker)
        .args(WorkerCommand::Probe.to_args())
        .env_clear()
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", worker.display()))?;
    let probe: ProbeReport = serde_json::from_slice(&out.stdout)
        .map_err(|e| anyhow::anyhow!("the worker's probe printed no report: {e}"))?;
    println!(
        "codemode sandbox check: engine {}, kernel {}, Landlock ABI {}, seccomp {}, cgroup {}",
        probe.engine,
        probe.kernel,
        probe.landlock_abi.map_or("none".to_string(), |v| v.to_string()),
        if probe.seccomp_available { "available" } else { "unavailable" },
        probe.cgroup,
    );
    println!();
    println!("{:<26} {:<8} details", "layer", "status");
    let missing = |layer: Layer| probe.missing.iter().find(|m| m.layer == layer);
    for layer in Layer::ALL {
        match missing(layer) {
            None => {
                let mut what = layer.description().to_string();
                match layer {
                    Layer::UnprivilegedUser => {
                        if let Some(uid) = probe.outside_uid {
                            what.push_str(&format!(" (workers are uid {uid} outside)"));
                        }
                    }
                    Layer::Rlimits => {
                        let limits: Vec<String> = probe
                            .rlimits
                            .iter()
                            .map(|r| {
                                format!(
                                    "{} {}",
                                    r.resource.trim_start_matches("RLIMIT_"),
                                    shown_limit(&r.resource, r.soft)
                                )
                            })
                            .collect();
                        what = format!("{} ({})", what, limits.join(", "));
                    }
                    Layer::Seccomp => {
                        what = format!(
                            "{}: {} calls allowed, {} answered with an errno ({})",
                            what,
                            probe.seccomp.allowed.len(),
                            probe.seccomp.refused.len(),
                            probe.seccomp.refused.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
                        );
                    }
                    _ => {}
                }
                println!("{:<26} {:<8} {what}", layer.name(), "active");
            }
            Some(m) => println!("{:<26} {:<8} {}", layer.name(), "MISSING", m.reason),
        }
    }
    let all_active = probe.missing.is_empty();
    let pid_ns = if missing(Layer::UserNamespace).is_none() { "active" } else { "MISSING" };
    println!("{:<26} {pid_ns:<8} each worker is pid 1 of a new pid namespace", "pid_namespace");
    match PoolCgroup::create(
        &format!("codemode-check-{}", std::process::id()),
        PoolLimits { memory_bytes: 1 << 30, pids: 64 },
    ) {
        Ok(group) => println!(
            "{:<26} {:<8} {} memory and pids ceilings for the whole worker pool ({})",
            "cgroup",
            "active",
            group.version,
            group.paths().iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
        Err(why) => println!(
            "{:<26} {:<8} {why} (per-program memory is still bounded by the heap limit and RLIMIT_DATA)",
            "cgroup", "missing"
        ),
    }
    if !all_active {
        println!();
        println!("codemode refuses to run programs while a layer is missing; `codemode run --insecure-allow-weaker-sandbox` runs without it.");
    }
    Ok(if all_active { 0 } else { 1 })
}

/// A limit's value as people read it (the memory backstop in MiB, the rest as numbers).
fn shown_limit(resource: &str, value: u64) -> String {
    match resource {
        "RLIMIT_DATA" => format!("{} MiB (per program: base + 1.5 x its heap limit + 64 MiB)", value >> 20),
        "RLIMIT_CPU" => format!("{value} s (per program: from its wall clock)"),
        _ if value == u64::MAX => "unlimited".into(),
        _ => value.to_string(),
    }
}

/// Runs a payload under the worker's policy; returns its exit code (128 + signal when
/// a signal killed it, as shells do).
pub fn exec(worker: &Path, policy: SandboxPolicy, payload: &[String]) -> anyhow::Result<i32> {
    let (path, args) = payload.split_first().ok_or_else(|| anyhow::anyhow!("name the payload after --"))?;
    let path = std::fs::canonicalize(path).map_err(|e| anyhow::anyhow!("payload {path}: {e}"))?;
    let command = WorkerCommand::Exec {
        host_pid: std::process::id() as i32,
        sandbox: policy.mode(),
        payload: path,
        args: args.to_vec(),
        skip_layers: Vec::new(),
    };
    let status = Command::new(worker)
        .args(command.to_args())
        .env_clear()
        .stdin(Stdio::null())
        .status()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", worker.display()))?;
    if let Some(signal) = status.signal() {
        let name = nix::sys::signal::Signal::try_from(signal).map(|s| s.as_str()).unwrap_or("unknown signal");
        eprintln!("sandbox-exec: the payload was killed by signal {signal} ({name})");
        return Ok(128 + signal);
    }
    Ok(status.code().unwrap_or(1))
}
