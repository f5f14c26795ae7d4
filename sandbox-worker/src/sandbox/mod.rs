//! The OS sandbox around every worker process and the template it forks from.
//!
//! The JavaScript engine is not the security boundary; this is. Each process role has
//! one ordered setup function that reads as its list of steps and fails closed:
//!
//! - [`enter_template`]: the template (or the spawn path's launcher) before it serves:
//!   environment, session, user namespace (root inside, an unprivileged uid outside),
//!   mount/ipc/uts namespaces, an empty network namespace, an empty read-only root,
//!   no_new_privs, Landlock, capabilities (all but the one that creates pid namespaces),
//!   not dumpable, descriptors, and the template's seccomp filter;
//! - [`enter_worker`] right after the fork into a new pid namespace: descriptors,
//!   parent-death signal and recheck, session, no capabilities;
//! - [`lock_worker`] once the worker's event loop and watchdog exist, just before user
//!   code: resource limits and the worker's own, strictest seccomp filter.
//!
//! Each role walks these (and the die-with-host and fork steps around them) through one
//! builder, [`setup::Setup`], in the order [`setup::Role::steps`] gives it.
//!
//! One module per mechanism: [`namespaces`], [`filesystem`], [`process`], [`rlimits`],
//! [`seccomp`]. A layer that cannot be applied stops the process with a
//! [`SandboxError`] naming the layer and how to enable it, unless the host asked for
//! [`SandboxMode::AllowWeaker`]; then the layer is listed in the report as missing.
//! The layers and modes are the host's types too (`protocol::worker`).

pub mod filesystem;
pub mod namespaces;
pub mod process;
pub mod rlimits;
pub mod seccomp;
pub mod setup;

use std::os::fd::RawFd;

pub use protocol::worker::{Layer, MissingLayer, SandboxMode};

/// Why a sandbox layer could not be applied.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("sandbox layer {layer} could not be applied: {reason}. To enable it: {}", layer.hint())]
pub struct SandboxError {
    /// The layer.
    pub layer: Layer,
    /// What failed.
    pub reason: String,
}

/// How strict the setup is, and which layers a test build leaves out on purpose.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxOptions {
    /// Whether a missing layer stops the process.
    pub mode: SandboxMode,
    /// Layers not applied at all (only a worker built with the
    /// `insecure-test-switches` feature accepts any; see `main.rs`).
    pub skip: Vec<Layer>,
}

impl SandboxOptions {
    /// The given mode, skipping nothing.
    pub fn new(mode: SandboxMode) -> Self {
        Self { mode, skip: Vec::new() }
    }
}

/// Applies layers in order and keeps what could not be applied.
struct Steps<'a> {
    options: &'a SandboxOptions,
    missing: Vec<MissingLayer>,
}

impl<'a> Steps<'a> {
    fn new(options: &'a SandboxOptions) -> Self {
        Self { options, missing: Vec::new() }
    }

    /// Applies one layer; a failure stops setup unless weaker sandboxes are allowed. A
    /// skipped layer is not applied and is reported as missing.
    fn step<E: std::fmt::Display>(
        &mut self,
        layer: Layer,
        apply: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), SandboxError> {
        if self.options.skip.contains(&layer) {
            self.missing.push(MissingLayer {
                layer,
                reason: "left out by a test switch (insecure-test-switches build)".into(),
            });
            return Ok(());
        }
        match apply() {
            Ok(()) => Ok(()),
            Err(e) if self.options.mode != SandboxMode::Required => {
                self.missing.push(MissingLayer { layer, reason: e.to_string() });
                Ok(())
            }
            Err(e) => Err(SandboxError { layer, reason: e.to_string() }),
        }
    }
}

/// What the template prepared for its workers: their compiled seccomp filters.
pub struct WorkerPolicy {
    filters: seccomp::CompiledFilters,
    /// True when the template installed its filter, whose errno filters are the
    /// worker's own (filters are inherited across fork): a worker then adds only its
    /// allowlist.
    inherits_refusals: bool,
    /// Layers the template could not apply (empty under [`SandboxMode::Required`]).
    pub missing: Vec<MissingLayer>,
    /// The uid workers have outside their user namespace, when it is set up.
    pub outside_uid: Option<u32>,
    options: SandboxOptions,
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
fn enter_template(
    keep_fds: &[RawFd],
    options: &SandboxOptions,
    engine_generates_code: bool,
    environment: Environment,
) -> Result<WorkerPolicy, SandboxError> {
    let worker_filters = seccomp::compile(&seccomp::worker_table(engine_generates_code))
        .map_err(|e| SandboxError { layer: Layer::Seccomp, reason: e.to_string() })?;
    if options.mode == SandboxMode::Disabled {
        let missing =
            Layer::ALL.iter().map(|&layer| MissingLayer { layer, reason: "disabled by the host".into() }).collect();
        return Ok(WorkerPolicy {
            filters: worker_filters,
            inherits_refusals: false,
            missing,
            outside_uid: None,
            options: options.clone(),
        });
    }
    let mut s = Steps::new(options);
    let mut outside_uid = None;
    s.step(Layer::Environment, || {
        process::clear_environment(environment.keep());
        Ok::<(), String>(())
    })?;
    s.step(Layer::Session, process::new_session)?;
    s.step(Layer::UserNamespace, || namespaces::enter_user_namespace().map(|uid| outside_uid = Some(uid)))?;
    s.step(Layer::UnprivilegedUser, || match outside_uid {
        Some(0) => Err("workers would be root outside their user namespace".to_string()),
        Some(_) => Ok(()),
        None => Err("there is no user namespace to map an unprivileged uid in".to_string()),
    })?;
    s.step(Layer::MountIpcUtsNamespaces, namespaces::enter_mount_ipc_uts_namespaces)?;
    s.step(Layer::NetworkNamespace, namespaces::enter_network_namespace)?;
    s.step(Layer::EmptyRoot, filesystem::pivot_to_empty_root)?;
    s.step(Layer::NoNewPrivs, process::set_no_new_privs)?;
    s.step(Layer::Landlock, || match filesystem::restrict_with_landlock() {
        Ok(filesystem::LandlockStatus::Full) => Ok(()),
        Ok(other) => Err(format!("the kernel enforces Landlock only partly ({other:?})")),
        Err(e) => Err(e.to_string()),
    })?;
    s.step(Layer::Capabilities, || {
        process::drop_capabilities_except(&[caps::Capability::CAP_SYS_ADMIN, caps::Capability::CAP_SETPCAP])
    })?;
    s.step(Layer::NotDumpable, process::set_not_dumpable)?;
    s.step(Layer::Descriptors, || process::close_all_except(keep_fds))?;
    let mut inherits_refusals = false;
    s.step(Layer::Seccomp, || {
        seccomp::compile(&seccomp::union(seccomp::setup_table(), seccomp::worker_table(engine_generates_code)))
            .and_then(|f| seccomp::install(&f))
            .map(|()| inherits_refusals = true)
    })?;
    Ok(WorkerPolicy {
        filters: worker_filters,
        inherits_refusals,
        missing: s.missing,
        outside_uid,
        options: options.clone(),
    })
}

/// Sets up a freshly forked worker (pid 1 of a new pid namespace). Keeps only
/// `keep_fds`; `channel` is the host channel, whose hang-up means the host is gone.
fn enter_worker(policy: &WorkerPolicy, keep_fds: &[RawFd], channel: RawFd) -> Result<(), SandboxError> {
    if policy.options.mode == SandboxMode::Disabled {
        return Ok(());
    }
    let mut s = Steps::new(&policy.options);
    s.step(Layer::Descriptors, || process::close_all_except(keep_fds))?;
    s.step(Layer::ParentDeath, || die_with_parent(channel))?;
    s.step(Layer::Session, process::new_session)?;
    s.step(Layer::Capabilities, process::drop_all_capabilities)?;
    Ok(())
}

/// The last step before user code: resource limits and the worker's seccomp filter,
/// on every thread. Returns the layers it could not apply (under a weaker sandbox).
fn lock_worker(policy: &WorkerPolicy, limits: &[rlimits::Rlimit]) -> Result<Vec<MissingLayer>, SandboxError> {
    if policy.options.mode == SandboxMode::Disabled {
        return Ok(Vec::new());
    }
    let mut s = Steps::new(&policy.options);
    s.step(Layer::Rlimits, || rlimits::apply(limits))?;
    s.step(Layer::Seccomp, || {
        if policy.inherits_refusals {
            seccomp::install_allowlist(&policy.filters)
        } else {
            seccomp::install(&policy.filters)
        }
    })?;
    Ok(s.missing)
}

/// Parent-death signal, then a check that the host is still there: its end of the
/// channel must not have hung up (the parent's pid is not visible from a new pid
/// namespace, so the channel is the witness).
fn die_with_parent(channel: RawFd) -> std::io::Result<()> {
    process::set_parent_death_signal()?;
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
        crate::exit_as(protocol::worker::WorkerExit::HostGone);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_required_layer_that_fails_stops_setup_and_says_how_to_enable_it() {
        let options = SandboxOptions::new(SandboxMode::Required);
        let mut steps = Steps::new(&options);
        assert!(steps.step(Layer::NoNewPrivs, || Ok::<(), String>(())).is_ok());
        let err = steps.step(Layer::Landlock, || Err("landlock is not supported")).unwrap_err();
        assert_eq!(err.layer, Layer::Landlock);
        assert!(err.to_string().starts_with("sandbox layer landlock could not be applied: landlock is not supported. To enable it: boot a kernel with Landlock"), "{err}");
        assert!(steps.missing.is_empty());
    }

    #[test]
    fn a_weaker_sandbox_records_what_is_missing_and_goes_on() {
        let options = SandboxOptions::new(SandboxMode::AllowWeaker);
        let mut steps = Steps::new(&options);
        assert!(steps.step(Layer::UserNamespace, || Err("EPERM")).is_ok());
        assert!(steps.step(Layer::Seccomp, || Ok::<(), &str>(())).is_ok());
        assert_eq!(steps.missing, vec![MissingLayer { layer: Layer::UserNamespace, reason: "EPERM".into() }]);
    }

    #[test]
    fn a_skipped_layer_is_never_applied_and_is_reported() {
        let options = SandboxOptions { mode: SandboxMode::Required, skip: vec![Layer::Seccomp] };
        let mut steps = Steps::new(&options);
        let mut applied = false;
        assert!(steps
            .step(Layer::Seccomp, || {
                applied = true;
                Ok::<(), String>(())
            })
            .is_ok());
        assert!(!applied);
        assert_eq!(steps.missing.len(), 1);
        assert_eq!(steps.missing[0].layer, Layer::Seccomp);
    }
}
