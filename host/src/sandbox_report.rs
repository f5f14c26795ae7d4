//! `codemode sandbox-check` and `codemode sandbox-exec`: what people who must trust the
//! sandbox use to see it and to attack it.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use protocol::worker::{Layer, ProbeReport, Resource, WorkerCommand};

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
    for line in layer_lines(&probe) {
        println!("{line}");
    }
    let all_active = probe.missing.is_empty();
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

/// The report's layer table: a header, then each layer as `name status details`. A
/// pure function of the probe, so that what it claims is what the probe found: a layer
/// is "active" only when the probe applied it, and a limit that the kernel does not
/// enforce in this setting (RLIMIT_NPROC for root in the initial user namespace, when
/// workers cannot get an unprivileged uid) says so.
pub fn layer_lines(probe: &ProbeReport) -> Vec<String> {
    let missing = |layer: Layer| probe.missing.iter().find(|m| m.layer == layer);
    let mut lines = vec![format!("{:<26} {:<8} details", "layer", "status")];
    for layer in Layer::ALL {
        if let Some(m) = missing(layer) {
            lines.push(format!("{:<26} {:<8} {}", layer.name(), "MISSING", m.reason));
            continue;
        }
        let mut what = layer.description().to_string();
        match layer {
            Layer::UnprivilegedUser => {
                if let Some(uid) = probe.outside_uid {
                    what.push_str(&format!(" (workers are uid {uid} outside)"));
                }
            }
            Layer::Rlimits => {
                let nproc_enforced = missing(Layer::UnprivilegedUser).is_none();
                let limits: Vec<String> = probe
                    .rlimits
                    .iter()
                    .map(|r| {
                        let value = match r.resource {
                            Resource::Data => format!("{} MiB", r.soft >> 20),
                            Resource::Cpu => format!("{} s", r.soft),
                            _ if r.soft == u64::MAX => "unlimited".into(),
                            _ => r.soft.to_string(),
                        };
                        let note = if r.resource == Resource::Nproc && !nproc_enforced {
                            ", not enforced: workers are root outside their user namespace, which the kernel exempts"
                        } else {
                            ""
                        };
                        format!("{} {value} ({}{note})", r.resource.name(), r.reason)
                    })
                    .collect();
                what = format!("{what}: {}", limits.join("; "));
            }
            Layer::Seccomp => {
                what = format!(
                    "{what}: {} calls allowed, {} answered with an errno ({})",
                    probe.seccomp.allowed.len(),
                    probe.seccomp.refused.len(),
                    probe.seccomp.refused.join(", ")
                );
            }
            _ => {}
        }
        lines.push(format!("{:<26} {:<8} {what}", layer.name(), "active"));
    }
    lines
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

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::worker::{Engine, MissingLayer, RlimitReport, SeccompReport};

    fn probe(missing: &[Layer]) -> ProbeReport {
        ProbeReport {
            engine: Engine::QuickJs,
            kernel: "6.18".into(),
            landlock_abi: Some(7),
            seccomp_available: true,
            cgroup: "v2".into(),
            outside_uid: (!missing.contains(&Layer::UnprivilegedUser)).then_some(65534),
            missing: missing.iter().map(|&layer| MissingLayer { layer, reason: format!("{layer} refused") }).collect(),
            rlimits: vec![
                RlimitReport {
                    resource: Resource::Data,
                    soft: 1 << 30,
                    hard: 1 << 30,
                    reason: "memory backstop".into(),
                },
                RlimitReport { resource: Resource::Nproc, soft: 0, hard: 0, reason: "no new processes".into() },
            ],
            seccomp: SeccompReport {
                allowed: vec!["read".into(), "write".into()],
                refused: vec!["clone3: ENOSYS".into()],
            },
        }
    }

    fn line<'a>(lines: &'a [String], layer: &str) -> &'a str {
        lines.iter().find(|l| l.starts_with(&format!("{layer} "))).map(String::as_str).unwrap_or_default()
    }

    #[test]
    fn every_layer_is_active_only_when_the_probe_applied_it() {
        let all = layer_lines(&probe(&[]));
        assert_eq!(all.len(), Layer::ALL.len() + 1);
        assert!(all[1..].iter().all(|l| l.contains(" active ")), "{all:#?}");
        assert!(line(&all, "unprivileged_user").ends_with("(workers are uid 65534 outside)"));
        assert!(line(&all, "rlimits").contains("DATA 1024 MiB (memory backstop); NPROC 0 (no new processes)"));
        assert!(line(&all, "seccomp").contains("2 calls allowed, 1 answered with an errno (clone3: ENOSYS)"));
        let some = layer_lines(&probe(&[Layer::PidNamespace, Layer::Landlock]));
        assert!(line(&some, "pid_namespace").contains("MISSING  pid_namespace refused"), "{some:#?}");
        assert!(line(&some, "landlock").contains("MISSING"));
        assert!(line(&some, "user_namespace").contains("active"), "layers are not inferred from one another");
    }

    #[test]
    fn nproc_is_not_claimed_when_the_kernel_would_not_enforce_it() {
        let lines = layer_lines(&probe(&[Layer::UnprivilegedUser]));
        assert!(line(&lines, "unprivileged_user").contains("MISSING"));
        assert!(
            line(&lines, "rlimits").contains("NPROC 0 (no new processes, not enforced: workers are root outside their user namespace, which the kernel exempts)"),
            "{lines:#?}"
        );
    }
}
