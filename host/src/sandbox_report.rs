//! `codemode sandbox-check` and `codemode sandbox-exec`: what people who must trust the
//! sandbox use to see it and to attack it.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::cgroups::{PoolCgroup, PoolLimits};
use crate::launcher::SandboxPolicy;

/// Every layer the worker applies, in setup order, with what it does (names as the
/// worker reports them).
const LAYERS: &[(&str, &str)] = &[
    ("environment", "an empty environment"),
    ("session", "a new session: no controlling terminal"),
    ("user_namespace", "a user namespace of its own (uid 0 inside = the host's uid outside)"),
    ("mount_ipc_uts_namespaces", "new mount, ipc and uts namespaces"),
    ("empty_root", "pivot_root onto an empty read-only tmpfs: no host file is visible"),
    ("no_new_privs", "PR_SET_NO_NEW_PRIVS"),
    ("landlock", "no filesystem or TCP access granted; abstract unix sockets and signals scoped"),
    ("capabilities", "every capability dropped in workers (the template keeps CAP_SYS_ADMIN and CAP_SETPCAP of its own user namespace)"),
    ("not_dumpable", "not dumpable, no core dumps"),
    ("descriptors", "every descriptor closed but the channel"),
    ("parent_death", "SIGKILL when the host dies, rechecked through the channel"),
    ("rlimits", "RLIMIT_DATA (memory), NOFILE 32, NPROC 0, FSIZE 0, CORE 0, MEMLOCK 0, MSGQUEUE 0, CPU seconds"),
    ("seccomp", "allowlist, kill by default; ENOSYS for clone3, io_uring and the new mount API; EPERM for TIOCSTI/TIOCLINUX"),
];

/// Prints the layers and exits 0 when all are active, 1 otherwise.
pub fn check(worker: &Path) -> anyhow::Result<i32> {
    let out = Command::new(worker)
        .arg("probe")
        .env_clear()
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", worker.display()))?;
    let probe: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| anyhow::anyhow!("the worker's probe printed no report: {e}"))?;
    let missing: Vec<(String, String)> = serde_json::from_value(probe["missing"].clone()).unwrap_or_default();
    println!(
        "codemode sandbox check: engine {}, kernel {}, Landlock ABI {}, seccomp {}, cgroup {}",
        probe["engine"].as_str().unwrap_or("?"),
        probe["kernel"].as_str().unwrap_or("?"),
        probe["landlock_abi"].as_i64().map_or("none".to_string(), |v| if v < 0 { "none".into() } else { v.to_string() }),
        if probe["seccomp_available"].as_bool() == Some(true) { "available" } else { "unavailable" },
        probe["cgroup"].as_str().unwrap_or("?"),
    );
    println!();
    println!("{:<26} {:<8} details", "layer", "status");
    let mut all_active = true;
    for (name, what) in LAYERS {
        match missing.iter().find(|(layer, _)| layer == name) {
            None => println!("{name:<26} {:<8} {what}", "active"),
            Some((_, why)) => {
                all_active = false;
                println!("{name:<26} {:<8} {why}", "MISSING");
            }
        }
    }
    let pid_ns = if all_active { "active" } else { "?" };
    println!("{:<26} {pid_ns:<8} each worker is pid 1 of a new pid namespace", "pid_namespace");
    let network = if missing.iter().any(|(l, _)| l == "seccomp" || l == "landlock") { "WEAKER" } else { "active" };
    println!("{:<26} {network:<8} no socket(2) (seccomp) and no TCP bind/connect (Landlock): no network namespace needed", "network");
    match PoolCgroup::create(&format!("codemode-check-{}", std::process::id()), PoolLimits { memory_bytes: 1 << 30, pids: 64 }) {
        Ok(group) => println!(
            "{:<26} {:<8} {} memory and pids ceilings for the whole worker pool ({})",
            "cgroup",
            "active",
            group.version,
            group.paths().iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
        Err(why) => println!("{:<26} {:<8} {why} (per-program memory is still bounded by the heap limit and RLIMIT_DATA)", "cgroup", "missing"),
    }
    if !all_active {
        println!();
        println!("codemode refuses to run programs while a layer is missing; `codemode run --insecure-allow-weaker-sandbox` runs without it.");
    }
    Ok(if all_active { 0 } else { 1 })
}

/// Runs a payload under the worker's policy; returns its exit code (128 + signal when
/// a signal killed it, as shells do).
pub fn exec(worker: &Path, policy: SandboxPolicy, payload: &[String]) -> anyhow::Result<i32> {
    let (path, args) = payload.split_first().ok_or_else(|| anyhow::anyhow!("name the payload after --"))?;
    let path = std::fs::canonicalize(path).map_err(|e| anyhow::anyhow!("payload {path}: {e}"))?;
    let sandbox = match policy {
        SandboxPolicy::Required => "required",
        SandboxPolicy::InsecureAllowWeaker => "allow-weaker",
        SandboxPolicy::InsecureDisabled => "disabled",
    };
    let status = Command::new(worker)
        .arg("exec")
        .arg("--host-pid")
        .arg(std::process::id().to_string())
        .arg("--sandbox")
        .arg(sandbox)
        .arg("--payload")
        .arg(&path)
        .arg("--")
        .args(args)
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
