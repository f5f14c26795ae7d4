//! JavaScript plugins: a folder with `manifest.json` and a main module exporting
//! `activate(api)`.
//!
//! Each one runs in its own long-lived, sandboxed deno_core process
//! (`sandbox-worker plugin`, see the worker's `plugin` module) that speaks the
//! process-plugin protocol, so the host drives it as a [`ProcessPlugin`]: restarts with
//! backoff, call timeouts and `tool/cancel` are the same. This module turns a
//! configured folder into the [`ProcessConfig`] that starts it, with the network
//! allowlist from its manifest ([`NetAccess`]), which the host enforces.
//!
//! [`ProcessPlugin`]: super::process::ProcessPlugin

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use protocol::manifest::Manifest;
use protocol::worker::WorkerCommand;

use super::net::NetAccess;
use super::process::ProcessConfig;
use crate::launcher::SandboxPolicy;

/// The default heap limit of a plugin runtime.
pub const DEFAULT_MEMORY_MIB: u64 = 128;
/// The default longest stretch of JavaScript between two host messages.
pub const DEFAULT_CPU_STEP_MS: u64 = 10_000;

/// A configured JavaScript plugin.
#[derive(Debug, Clone)]
pub struct JavascriptPlugin {
    /// `tools.<name>`.
    pub name: String,
    /// The plugin's folder (absolute).
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Heap limit, in MiB.
    pub memory_mib: u64,
    /// Longest JavaScript run without waiting for the host, in ms.
    pub cpu_step_ms: u64,
    /// Longest a call may take.
    pub call_timeout: Duration,
}

impl JavascriptPlugin {
    /// How to start the plugin's runtime with the `worker` binary under `sandbox`.
    pub fn process_config(&self, worker: &Path, sandbox: SandboxPolicy) -> ProcessConfig {
        let hosts = self.manifest.net_hosts();
        ProcessConfig {
            name: self.name.clone(),
            command: worker.to_path_buf(),
            args: WorkerCommand::Plugin {
                dir: self.dir.clone(),
                name: self.name.clone(),
                host_pid: std::process::id() as i32,
                sandbox: sandbox.mode(),
                memory_mib: self.memory_mib,
                cpu_step_ms: self.cpu_step_ms,
            }
            .to_args(),
            env: Vec::new(),
            cwd: None,
            call_timeout: self.call_timeout,
            net: (!hosts.is_empty()).then(|| Arc::new(NetAccess::new(&self.name, hosts, self.call_timeout))),
        }
    }
}
