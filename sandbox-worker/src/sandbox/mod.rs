//! The OS sandbox around every worker process and the template it forks from.
//!
//! The JavaScript engine is not the security boundary; this is. Each process role has
//! one ordered setup function that reads as its list of steps and fails closed:
//!
//! - [`enter_template`]: the template (or the spawn path's launcher) before it serves:
//!   session, user namespace, mount/ipc/uts namespaces, an empty read-only root,
//!   no_new_privs, Landlock, capabilities (all but the one that creates pid namespaces),
//!   not dumpable, descriptors, and the template's seccomp filter;
//! - [`enter_worker`] right after the fork into a new pid namespace: descriptors,
//!   parent-death signal and recheck, session, no capabilities;
//! - [`lock_worker`] once the worker's event loop and watchdog exist, just before user
//!   code: resource limits and the worker's own, strictest seccomp filter.
//!
//! One module per mechanism: [`namespaces`], [`filesystem`], [`process`], [`rlimits`],
//! [`seccomp`]. A layer that cannot be applied stops the process with a
//! [`SandboxError`] naming the layer and how to enable it, unless the host asked for
//! [`Strictness::AllowWeaker`]; then the layer is listed in the report as missing.

pub mod filesystem;
pub mod namespaces;
pub mod process;
pub mod rlimits;
pub mod seccomp;

use std::os::fd::RawFd;

use serde::{Deserialize, Serialize};

/// Whether a missing layer stops the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strictness {
    /// Every layer must apply (the default).
    Required,
    /// Run with the layers that apply; report the others.
    AllowWeaker,
    /// Apply no layer at all: only for measuring what the sandbox costs.
    Disabled,
}

/// A layer of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// A user namespace of the template's own.
    UserNamespace,
    /// New mount, ipc and uts namespaces.
    MountIpcUtsNamespaces,
    /// An empty, read-only tmpfs as the root.
    EmptyRoot,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// Landlock: no filesystem or network access, scoped sockets and signals.
    Landlock,
    /// Capabilities dropped.
    Capabilities,
    /// A new session.
    Session,
    /// Not dumpable, no core dumps.
    NotDumpable,
    /// No descriptor but the channel.
    Descriptors,
    /// An empty environment.
    Environment,
    /// Parent-death signal with a recheck.
    ParentDeath,
    /// Resource limits.
    Rlimits,
    /// The seccomp allowlist.
    Seccomp,
}

impl Layer {
    /// Every layer, in setup order.
    pub const ALL: [Layer; 13] = [
        Layer::Environment,
        Layer::Session,
        Layer::UserNamespace,
        Layer::MountIpcUtsNamespaces,
        Layer::EmptyRoot,
        Layer::NoNewPrivs,
        Layer::Landlock,
        Layer::Capabilities,
        Layer::NotDumpable,
        Layer::Descriptors,
        Layer::ParentDeath,
        Layer::Rlimits,
        Layer::Seccomp,
    ];

    /// How to enable the layer when it is missing.
    pub fn hint(self) -> &'static str {
        match self {
            Layer::UserNamespace | Layer::MountIpcUtsNamespaces | Layer::EmptyRoot => {
                "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) or run the host as root"
            }
            Layer::Landlock => "boot a kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and \"landlock\" in the lsm= list)",
            Layer::Seccomp => "boot a kernel with seccomp filters (CONFIG_SECCOMP_FILTER=y)",
            _ => "this layer needs no kernel feature; the error says what refused it",
        }
    }
}

/// Why a sandbox layer could not be applied.
#[derive(Debug, thiserror::Error, Serialize, Deserialize, Clone, PartialEq, Eq)]
#[error("sandbox layer {layer:?} could not be applied: {reason}. To enable it: {hint}")]
pub struct SandboxError {
    /// The layer.
    pub layer: Layer,
    /// What failed.
    pub reason: String,
    /// How to enable it.
    pub hint: String,
}

/// Layers that are not active, with the reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Missing(pub Vec<(Layer, String)>);

struct Steps {
    strictness: Strictness,
    missing: Missing,
}

impl Steps {
    fn new(strictness: Strictness) -> Self {
        Self { strictness, missing: Missing::default() }
    }

    /// Applies one layer; a failure stops setup unless weaker sandboxes are allowed.
    fn step<E: std::fmt::Display>(&mut self, layer: Layer, result: Result<(), E>) -> Result<(), SandboxError> {
        match result {
            Ok(()) => Ok(()),
            Err(e) if self.strictness != Strictness::Required => {
                self.missing.0.push((layer, e.to_string()));
                Ok(())
            }
            Err(e) => Err(SandboxError { layer, reason: e.to_string(), hint: layer.hint().to_string() }),
        }
    }
}

/// What the template prepared for its workers: their compiled seccomp filters.
pub struct WorkerPolicy {
    filters: seccomp::CompiledFilters,
    /// Layers the template could not apply (empty under [`Strictness::Required`]).
    pub missing: Missing,
    strictness: Strictness,
}

/// Which environment variables survive the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    /// None: the engine has already read what it needs (the template).
    Empty,
    /// Only the engine's own switches, for an engine created inside the sandbox (the
    /// spawn path): `V82JSC_NO_BC_CACHE`, which keeps the QuickJS backend from caching
    /// bytecode on disk.
    EngineSwitchesOnly,
}

impl Environment {
    fn keep(self) -> &'static [&'static str] {
        match self {
            Environment::Empty => &[],
            Environment::EngineSwitchesOnly => &["V82JSC_NO_BC_CACHE"],
        }
    }
}

/// Sets up the template process. Keeps only `keep_fds` open.
pub fn enter_template(keep_fds: &[RawFd], strictness: Strictness, engine_generates_code: bool, environment: Environment) -> Result<WorkerPolicy, SandboxError> {
    let mut s = Steps::new(strictness);
    let worker_filters = seccomp::compile(&seccomp::worker_table(engine_generates_code)).map_err(|e| SandboxError {
        layer: Layer::Seccomp,
        reason: e.to_string(),
        hint: Layer::Seccomp.hint().into(),
    })?;
    if strictness == Strictness::Disabled {
        let missing = Layer::ALL.iter().map(|l| (*l, "disabled by the host".to_string())).collect();
        return Ok(WorkerPolicy { filters: worker_filters, missing: Missing(missing), strictness });
    }
    let template_filters = seccomp::compile(&seccomp::union(seccomp::setup_table(), seccomp::worker_table(engine_generates_code)));

    process::clear_environment(environment.keep());
    s.step(Layer::Environment, Ok::<(), String>(()))?;
    s.step(Layer::Session, process::new_session())?;
    s.step(Layer::UserNamespace, namespaces::enter_user_namespace())?;
    s.step(Layer::MountIpcUtsNamespaces, namespaces::enter_mount_ipc_uts_namespaces())?;
    s.step(Layer::EmptyRoot, filesystem::pivot_to_empty_root())?;
    s.step(Layer::NoNewPrivs, process::set_no_new_privs())?;
    s.step(
        Layer::Landlock,
        match filesystem::restrict_with_landlock() {
            Ok(filesystem::LandlockStatus::Full) => Ok(()),
            Ok(other) => Err(format!("the kernel enforces Landlock only partly ({other:?})")),
            Err(e) => Err(e.to_string()),
        },
    )?;
    s.step(Layer::Capabilities, process::drop_capabilities_except(&[caps::Capability::CAP_SYS_ADMIN, caps::Capability::CAP_SETPCAP]))?;
    s.step(Layer::NotDumpable, process::set_not_dumpable())?;
    s.step(Layer::Descriptors, process::close_all_except(keep_fds))?;
    s.step(Layer::Seccomp, template_filters.and_then(|f| seccomp::install(&f)))?;
    Ok(WorkerPolicy { filters: worker_filters, missing: s.missing, strictness })
}

/// Sets up a freshly forked worker (pid 1 of a new pid namespace). Keeps only
/// `keep_fds`; `channel` is the host channel, whose hang-up means the host is gone.
pub fn enter_worker(policy: &WorkerPolicy, keep_fds: &[RawFd], channel: RawFd) -> Result<(), SandboxError> {
    if policy.strictness == Strictness::Disabled {
        return Ok(());
    }
    let mut s = Steps::new(policy.strictness);
    s.step(Layer::Descriptors, process::close_all_except(keep_fds))?;
    s.step(Layer::ParentDeath, die_with_parent(channel))?;
    s.step(Layer::Session, process::new_session())?;
    s.step(Layer::Capabilities, process::drop_all_capabilities())?;
    Ok(())
}

/// The last step before user code: resource limits and the worker's seccomp filter,
/// on every thread.
pub fn lock_worker(policy: &WorkerPolicy, limits: &[rlimits::Rlimit]) -> Result<(), SandboxError> {
    if policy.strictness == Strictness::Disabled {
        return Ok(());
    }
    let mut s = Steps::new(policy.strictness);
    s.step(Layer::Rlimits, rlimits::apply(limits))?;
    s.step(Layer::Seccomp, seccomp::install(&policy.filters))?;
    Ok(())
}

/// Parent-death signal, then a check that the host is still there: its end of the
/// channel must not have hung up (the parent's pid is not visible from a new pid
/// namespace, so the channel is the witness).
fn die_with_parent(channel: RawFd) -> std::io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number only.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if channel < 0 {
        return Ok(());
    }
    let mut pfd = libc::pollfd { fd: channel, events: libc::POLLRDHUP, revents: 0 };
    // SAFETY: poll reads and writes exactly the one pollfd we pass.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pfd.revents & (libc::POLLHUP | libc::POLLRDHUP) != 0 {
        crate::exit_now(crate::EXIT_HOST_GONE);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_required_layer_that_fails_stops_setup_and_says_how_to_enable_it() {
        let mut steps = Steps::new(Strictness::Required);
        assert!(steps.step(Layer::NoNewPrivs, Ok::<(), String>(())).is_ok());
        let err = steps.step(Layer::Landlock, Err("landlock is not supported")).unwrap_err();
        assert_eq!(err.layer, Layer::Landlock);
        assert!(err.to_string().starts_with("sandbox layer Landlock could not be applied: landlock is not supported. To enable it: boot a kernel with Landlock"), "{err}");
        assert!(steps.missing.0.is_empty());
    }

    #[test]
    fn a_weaker_sandbox_records_what_is_missing_and_goes_on() {
        let mut steps = Steps::new(Strictness::AllowWeaker);
        assert!(steps.step(Layer::UserNamespace, Err("EPERM")).is_ok());
        assert!(steps.step(Layer::Seccomp, Ok::<(), &str>(())).is_ok());
        assert_eq!(steps.missing.0, vec![(Layer::UserNamespace, "EPERM".to_string())]);
    }

    #[test]
    fn every_layer_has_a_hint() {
        for layer in Layer::ALL {
            assert!(!layer.hint().is_empty());
        }
    }
}
