//! JavaScript plugins, in any seed system's layout (`plugin-format`): a manifest folder
//! (seed 000, `activate(api)` or `convergence/effect`), zhin.js tools (001), plico tools
//! (002), a `globalThis.tools` script (003) or a Podcode module (004).
//!
//! Each one runs in its own long-lived, sandboxed deno_core process
//! (`sandbox-worker plugin`, see the worker's `plugin` module) that speaks the
//! process-plugin protocol, so the host drives it as a [`ProcessPlugin`]: restarts with
//! backoff, call timeouts and `tool/cancel` are the same. This module turns a
//! configured plugin into the [`ProcessConfig`] that starts it: the worker's command
//! line with the format the host detected, the settings sent in `initialize`, and the
//! network allowlist the host enforces ([`NetAccess`]): what the plugin's own files
//! declare (its manifest, or a seed-003 script's `egress`), or for layouts that declare
//! none, its configuration entry's `net_hosts`.
//!
//! [`ProcessPlugin`]: super::process::ProcessPlugin

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use plugin_format::{Format, FormatError, Layout};
use protocol::worker::WorkerCommand;

use super::net::{AllowlistSource, NetAccess};
use super::process::ProcessConfig;
use super::settings::SettingValue;
use crate::launcher::SandboxPolicy;

/// The default heap limit of a plugin runtime.
pub const DEFAULT_MEMORY_MIB: u64 = 128;
/// The default longest stretch of JavaScript between two host messages.
pub const DEFAULT_CPU_STEP_MS: u64 = 10_000;
/// The default time limit of one call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A configured JavaScript plugin.
#[derive(Debug, Clone)]
pub struct JavascriptPlugin {
    /// `tools.<name>`.
    pub name: String,
    /// The configured path (absolute): the plugin's folder, or its one module file.
    pub path: PathBuf,
    /// Its layout, as its files show it.
    pub layout: Layout,
    /// Heap limit, in MiB.
    pub memory_mib: u64,
    /// Longest JavaScript run without waiting for the host, in ms.
    pub cpu_step_ms: u64,
    /// Longest a call may take.
    pub call_timeout: Duration,
    /// Settings sent in `initialize`.
    pub settings: BTreeMap<String, SettingValue>,
    /// The configuration entry's `net_hosts` (for layouts without an allowlist of their own).
    pub net_hosts: Vec<String>,
}

impl JavascriptPlugin {
    /// The plugin at `path` (in `format`, or the one its files show), with default
    /// limits, no settings and no configured hosts.
    pub fn new(name: &str, path: &Path, format: Option<Format>) -> Result<Self, FormatError> {
        Ok(Self {
            name: name.to_string(),
            path: path.to_path_buf(),
            layout: plugin_format::detect(path, format)?,
            memory_mib: DEFAULT_MEMORY_MIB,
            cpu_step_ms: DEFAULT_CPU_STEP_MS,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            settings: BTreeMap::new(),
            net_hosts: Vec::new(),
        })
    }

    /// The hosts the plugin may reach, and where that list is written.
    pub fn allowlist(&self) -> (Vec<String>, AllowlistSource) {
        match self.layout.format {
            Format::Manifest => (self.layout.declared_hosts.clone(), AllowlistSource::Manifest),
            Format::Globals => (self.layout.declared_hosts.clone(), AllowlistSource::Egress),
            Format::Zhin | Format::Plico | Format::Podcode => (self.net_hosts.clone(), AllowlistSource::Configuration),
        }
    }

    /// Whether the plugin has tools to serve (a manifest with only rules has none).
    pub fn has_modules(&self) -> bool {
        !self.layout.entries.is_empty()
    }

    /// How to start the plugin's runtime with the `worker` binary under `sandbox`.
    pub fn process_config(&self, worker: &Path, sandbox: SandboxPolicy) -> ProcessConfig {
        let (hosts, source) = self.allowlist();
        ProcessConfig {
            name: self.name.clone(),
            command: worker.to_path_buf(),
            args: WorkerCommand::Plugin {
                dir: self.path.clone(),
                format: self.layout.format.as_str().to_string(),
                name: self.name.clone(),
                host_pid: std::process::id() as i32,
                sandbox: sandbox.mode(),
                memory_mib: self.memory_mib,
                cpu_step_ms: self.cpu_step_ms,
            }
            .to_args(),
            env: Vec::new(),
            settings: self.settings.clone(),
            cwd: None,
            call_timeout: self.call_timeout,
            net: Some(Arc::new(NetAccess::new(&self.name, &hosts, source, self.call_timeout))),
        }
    }
}
