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
//! The host never parses a plugin's files itself: [`read_layout`] has
//! `sandbox-worker detect` do it in a process of its own, with bounded memory and CPU,
//! so a module built to overflow a parser's stack makes that plugin unavailable (with
//! the reason) instead of taking the host and every other plugin down.
//!
//! [`ProcessPlugin`]: super::process::ProcessPlugin

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use plugin_format::{Format, Layout};
use protocol::worker::WorkerCommand;

use super::net::{AllowlistSource, NetAccess};
use super::process::ProcessConfig;
use super::settings::SettingValue;
use codemode_core::launcher::SandboxPolicy;

/// How long reading a plugin's files may take before the reader is killed.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The layout of the plugin at `path` (a folder or one module file), in `forced` format
/// or the one its files show, read by `worker detect` in a process of its own (see the
/// module docs). `Err` is the reason the plugin is unavailable, as its caller shows it.
pub fn read_layout(worker: &Path, path: &Path, forced: Option<Format>) -> Result<Layout, String> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let command = WorkerCommand::Detect { dir: path.to_path_buf(), format: forced.map(|f| f.as_str().to_string()) };
    let mut reader = std::process::Command::new(worker);
    reader
        .args(command.to_args())
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: runs in the child between fork and exec; prctl(2) is async-signal-safe and
    // these calls touch no memory of ours.
    unsafe {
        reader.pre_exec(|| {
            // It only reads files: no privilege to gain and no capability to keep
            // (root included), and it dies with the host.
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            for capability in 0..=libc::c_ulong::from(CAP_LAST) {
                if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 {
                    let error = std::io::Error::last_os_error();
                    // EPERM: not root, no capabilities to drop; EINVAL: past this kernel's last.
                    if !matches!(error.raw_os_error(), Some(libc::EPERM) | Some(libc::EINVAL)) {
                        return Err(error);
                    }
                }
            }
            Ok(())
        });
    }
    let mut child = reader
        .spawn()
        .map_err(|e| format!("its files cannot be read: the plugin reader {} cannot start: {e}", worker.display()))?;
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let deadline = std::time::Instant::now() + READ_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "its files cannot be read: reading them took more than {} s",
                    READ_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("its files cannot be read: waiting for the plugin reader failed: {e}")),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if status.success() {
        return match serde_json::from_slice::<Result<Layout, String>>(&stdout) {
            Ok(read) => read,
            Err(e) => Err(format!("its files cannot be read: the plugin reader's answer is not a layout: {e}")),
        };
    }
    Err(format!("its files cannot be read: {}", reader_failure(&status, &String::from_utf8_lossy(&stderr))))
}

/// The highest capability number the plugin reader drops (`CAP_LAST_CAP` today; the
/// kernel refuses the ones it does not have).
const CAP_LAST: u8 = 63;

/// Why the plugin reader ended without a layout, from its exit status and stderr.
fn reader_failure(status: &std::process::ExitStatus, stderr: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
    if stderr.contains("has overflowed its stack") {
        return "one of its modules nests more deeply than codemode's parser can follow (the reader ran out of stack); simplify the module or split it".into();
    }
    if stderr.contains("memory allocation of") {
        return format!(
            "its modules take more memory to read than the reader may use ({} MiB); make them smaller",
            protocol::worker::DETECT_MEMORY_MIB
        );
    }
    match status.signal() {
        Some(libc::SIGXCPU) | Some(libc::SIGKILL) => "reading its files took too long".into(),
        Some(signal) => format!(
            "the plugin reader was killed by signal {signal}{}",
            if last.is_empty() { String::new() } else { format!(" ({last})") }
        ),
        None => format!("the plugin reader failed (exit {}): {last}", status.code().unwrap_or(-1)),
    }
}

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
    /// The plugin at `path` (in `format`, or the one its files show, read by the
    /// default worker binary: [`read_layout`]), with default limits, no settings and no
    /// configured hosts; `Err` says why its files cannot be used.
    pub fn new(name: &str, path: &Path, format: Option<Format>) -> Result<Self, String> {
        Ok(Self {
            name: name.to_string(),
            path: path.to_path_buf(),
            layout: read_layout(&codemode_core::launcher::default_worker_path(), path, format)?,
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
                // Node's walk up for bare imports goes to the filesystem's root.
                modules_bound: Some(PathBuf::from("/")),
            }
            .to_args(),
            env: Vec::new(),
            settings: self.settings.clone(),
            cwd: None,
            call_timeout: self.call_timeout,
            net: Some(Arc::new(NetAccess::new(&self.name, &hosts, source, self.call_timeout))),
            permissions: self.layout.permissions.names(),
        }
    }
}
