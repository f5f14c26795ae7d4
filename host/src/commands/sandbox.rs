//! `codemode sandbox-check` and `codemode sandbox-exec` (`codemode::sandbox_report`):
//! the worker binary and sandbox policy they are given.

use std::path::PathBuf;

use codemode::SandboxPolicy;

/// `codemode sandbox-check`: each layer, active or not, with `worker` (default:
/// `codemode::default_worker_path`).
pub fn sandbox_check(worker: Option<PathBuf>) -> anyhow::Result<i32> {
    codemode::sandbox_report::check(&worker.unwrap_or_else(codemode::default_worker_path))
}

/// `codemode sandbox-exec`: `payload` (a shared object and its arguments) under the
/// worker's policy.
pub fn sandbox_exec(
    insecure_allow_weaker_sandbox: bool,
    worker: Option<PathBuf>,
    payload: &[String],
) -> anyhow::Result<i32> {
    let policy =
        if insecure_allow_weaker_sandbox { SandboxPolicy::InsecureAllowWeaker } else { SandboxPolicy::Required };
    codemode::sandbox_report::exec(&worker.unwrap_or_else(codemode::default_worker_path), policy, payload)
}
