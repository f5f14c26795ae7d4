//! The one setup sequence of every process role, as data, and the builder that walks it.
//!
//! Where it sits: `main.rs` picks the role from the command line; the role's entry
//! (`template::serve`, `run_spawned`, `exec_payload`, `plugin::run`, `detect_layout`,
//! `probe`) makes a [`Setup`] for its [`Role`] and calls its steps, doing its own work
//! (create the engine, read the plugin's folder, wait for the program) between them.
//! [`Role::steps`] is each role's order, written once:
//!
//! 1. [`Step::LimitReader`] (detect): bound the reader's memory and CPU;
//! 2. [`Step::DieWithHost`]: the parent-death signal, then a check that the host is
//!    still the parent ([`process::set_parent_death_signal`] is the one place it is set);
//! 3. [`Step::ReadOnlyFolder`] (detect): Landlock down to reading the plugin's folder;
//! 4. [`Step::EnterTemplate`]: [`super::enter_template`] (namespaces, empty root,
//!    Landlock, capabilities, the template's seccomp filter);
//! 5. [`Step::ForkAndMirror`] (launchers) or [`Step::ForkWorker`] (the template, once per
//!    program): into a new pid namespace;
//! 6. [`Step::EnterWorker`]: [`super::enter_worker`] (descriptors, parent death, session,
//!    no capabilities);
//! 7. [`Step::Lock`]: [`super::lock_worker`] (resource limits, the worker's seccomp
//!    filter), just before user code.
//!
//! A step asked for out of its role's order is refused ([`SetupError::OutOfOrder`]) and
//! the caller fails closed, as it does for a layer that cannot be applied: a process
//! never goes on with a step skipped.

use std::os::fd::RawFd;
use std::path::Path;

use protocol::worker::WorkerExit;

use super::{
    enter_template, enter_worker, filesystem, lock_worker, process, rlimits, seccomp, Environment, MissingLayer,
    SandboxError, SandboxOptions, WorkerPolicy,
};

/// The process roles of the worker binary, each with its own setup order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Initialises the engine once, then forks a worker per program (`template.rs`).
    Template,
    /// The spawn path's launcher and its one worker (`run_spawned`).
    Run,
    /// The escape suite's launcher and its native payload (`exec_payload`).
    Exec,
    /// A JavaScript plugin's long-lived runtime (`plugin::run`).
    Plugin,
    /// Reads a plugin's layout for the host (`detect_layout`).
    Detect,
    /// Tries every layer in a throwaway child and reports what is missing (`probe`).
    Probe,
}

/// One setup step; [`Role::steps`] orders them per role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Bound the plugin reader's memory and CPU, no core dumps.
    LimitReader,
    /// Parent-death signal, then the host must still be the parent.
    DieWithHost,
    /// Landlock down to reading the plugin's folder.
    ReadOnlyFolder,
    /// The template's layers ([`super::enter_template`]).
    EnterTemplate,
    /// A launcher forks its one worker into a new pid namespace and mirrors its end.
    ForkAndMirror,
    /// The template forks a worker per program, the host's child, in a new pid namespace.
    ForkWorker,
    /// The freshly forked worker's layers ([`super::enter_worker`]).
    EnterWorker,
    /// Resource limits and the worker's seccomp filter ([`super::lock_worker`]).
    Lock,
}

impl Role {
    /// The role's setup, in order.
    pub const fn steps(self) -> &'static [Step] {
        use Step::*;
        match self {
            Role::Template => &[DieWithHost, EnterTemplate, ForkWorker, EnterWorker, Lock],
            Role::Run | Role::Exec | Role::Plugin => &[DieWithHost, EnterTemplate, ForkAndMirror, EnterWorker, Lock],
            Role::Detect => &[LimitReader, DieWithHost, ReadOnlyFolder],
            Role::Probe => &[EnterTemplate, EnterWorker, Lock],
        }
    }
}

/// Why a setup step did not complete.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A step was asked for out of the role's order.
    #[error("setup step {asked:?} is out of order for the {role:?} role (next: {expected:?})")]
    OutOfOrder {
        /// The role.
        role: Role,
        /// The step its order names next (`None`: setup is complete).
        expected: Option<Step>,
        /// The step asked for.
        asked: Step,
    },
    /// A worker step came before the template's layers gave it a policy.
    #[error("setup step {0:?} needs the policy that entering the template prepares")]
    NoPolicy(Step),
    /// A sandbox layer could not be applied.
    #[error(transparent)]
    Layer(#[from] SandboxError),
    /// The parent-death signal could not be set.
    #[error("cannot set the parent-death signal")]
    ParentDeathSignal(#[source] std::io::Error),
    /// The plugin reader could not be limited.
    #[error("cannot limit the plugin reader ({resource:?}): {source}")]
    LimitReader {
        /// The limit.
        resource: nix::sys::resource::Resource,
        /// Why.
        source: nix::Error,
    },
    /// The plugin reader could not be restricted to its folder.
    #[error("cannot restrict the plugin reader to {folder}: {source}")]
    ReadOnlyFolder {
        /// The folder.
        folder: String,
        /// Why.
        source: landlock::RulesetError,
    },
    /// clone(2) failed.
    #[error("clone failed: {0}")]
    Clone(#[source] std::io::Error),
}

/// Where a role's setup has got to: the next step of [`Role::steps`]. Pure; [`Setup`]
/// asks it before every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    role: Role,
    done: usize,
}

impl Progress {
    /// A role's setup, before its first step.
    pub fn new(role: Role) -> Self {
        Self { role, done: 0 }
    }

    /// The step the role's order names next (`None` once setup is complete).
    pub fn next(&self) -> Option<Step> {
        self.role.steps().get(self.done).copied()
    }

    /// Checks that `step` is next, without taking it.
    pub fn expect(&self, step: Step) -> Result<(), SetupError> {
        if self.next() == Some(step) {
            Ok(())
        } else {
            Err(SetupError::OutOfOrder { role: self.role, expected: self.next(), asked: step })
        }
    }

    /// Takes `step`, which must be next.
    pub fn advance(&mut self, step: Step) -> Result<(), SetupError> {
        self.expect(step)?;
        self.done += 1;
        Ok(())
    }
}

/// Which process a fork left this code in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    /// The new worker.
    Child,
    /// The template, with the worker's pid.
    Parent(i32),
}

/// A role's setup, step by step, in the role's order ([`Role::steps`]).
pub struct Setup {
    progress: Progress,
    options: SandboxOptions,
    policy: Option<WorkerPolicy>,
}

impl Setup {
    /// The setup of `role` under `options`.
    pub fn new(role: Role, options: &SandboxOptions) -> Self {
        Self { progress: Progress::new(role), options: options.clone(), policy: None }
    }

    /// What entering the template prepared for the worker, once it has run.
    pub fn policy(&self) -> Option<&WorkerPolicy> {
        self.policy.as_ref()
    }

    /// [`Step::LimitReader`]: the plugin reader's memory, CPU and core-dump limits.
    pub fn limit_reader(&mut self) -> Result<(), SetupError> {
        use nix::sys::resource::{setrlimit, Resource};
        self.progress.advance(Step::LimitReader)?;
        let limits = [
            (Resource::RLIMIT_AS, protocol::worker::DETECT_MEMORY_MIB << 20),
            (Resource::RLIMIT_CPU, protocol::worker::DETECT_CPU_SECONDS),
            (Resource::RLIMIT_CORE, 0),
        ];
        for (resource, limit) in limits {
            setrlimit(resource, limit, limit).map_err(|source| SetupError::LimitReader { resource, source })?;
        }
        Ok(())
    }

    /// [`Step::DieWithHost`]: asks for SIGKILL when the parent dies, then, when the
    /// host's pid is known, checks that the host is still the parent (it may have died
    /// before the request took effect); if not, this process exits at once.
    pub fn die_with_host(&mut self, host_pid: Option<i32>) -> Result<(), SetupError> {
        self.progress.advance(Step::DieWithHost)?;
        process::set_parent_death_signal().map_err(SetupError::ParentDeathSignal)?;
        if let Some(host_pid) = host_pid {
            if nix::unistd::getppid().as_raw() != host_pid {
                crate::exit_as(WorkerExit::HostGone);
            }
        }
        Ok(())
    }

    /// [`Step::ReadOnlyFolder`]: the plugin's folder (a one-file plugin's own folder) is
    /// all this process may read; a folder that cannot be opened leaves nothing readable
    /// at all (the detection then says what it could not read).
    pub fn read_only_folder(&mut self, dir: &Path) -> Result<(), SetupError> {
        self.progress.advance(Step::ReadOnlyFolder)?;
        let readable = if dir.is_dir() { dir.to_path_buf() } else { dir.parent().unwrap_or(dir).to_path_buf() };
        filesystem::restrict_to_reading(&readable)
            .or_else(|_| filesystem::restrict_with_landlock())
            .map(|_| ())
            .map_err(|source| SetupError::ReadOnlyFolder { folder: readable.display().to_string(), source })
    }

    /// [`Step::EnterTemplate`]: keeps only `keep_fds` open; see [`super::enter_template`].
    pub fn enter_template(
        &mut self,
        keep_fds: &[RawFd],
        engine_generates_code: bool,
        environment: Environment,
    ) -> Result<&WorkerPolicy, SetupError> {
        self.progress.advance(Step::EnterTemplate)?;
        let policy = enter_template(keep_fds, &self.options, engine_generates_code, environment)?;
        Ok(self.policy.insert(policy))
    }

    /// [`Step::ForkAndMirror`]: forks the launcher's one worker into a new pid
    /// namespace; the launcher waits for it and ends the same way (exit code or
    /// signal). Returns only in the worker.
    pub fn fork_and_mirror(&mut self) -> Result<(), SetupError> {
        self.progress.advance(Step::ForkAndMirror)?;
        // SAFETY: a raw clone(2) without a new stack behaves like fork(2); the launcher
        // is single-threaded.
        let pid = unsafe {
            libc::syscall(
                libc::SYS_clone,
                seccomp::SPAWNED_CLONE_FLAGS as libc::c_ulong,
                0usize,
                0usize,
                0usize,
                0usize,
            )
        };
        match pid {
            -1 => Err(SetupError::Clone(std::io::Error::last_os_error())),
            0 => Ok(()),
            pid => mirror(pid as libc::pid_t),
        }
    }

    /// [`Step::ForkWorker`]: the template forks one worker with `CLONE_PARENT |
    /// CLONE_NEWPID`, so the worker is pid 1 of its own pid namespace and the host's
    /// child. The template's own setup stays at this step (it forks again for the next
    /// program); the worker's goes on. The caller must be single-threaded.
    pub fn fork_worker(&mut self) -> Result<Forked, SetupError> {
        self.progress.expect(Step::ForkWorker)?;
        // SAFETY: a raw clone(2) without a new stack behaves like fork(2); CLONE_PARENT
        // makes the child the host's, CLONE_NEWPID gives it a pid namespace of its own.
        // The template is single-threaded (checked in `template::serve`), so no lock is
        // held by a thread that would not exist in the child.
        let pid = unsafe {
            libc::syscall(libc::SYS_clone, seccomp::WORKER_CLONE_FLAGS as libc::c_ulong, 0usize, 0usize, 0usize, 0usize)
        };
        match pid {
            -1 => Err(SetupError::Clone(std::io::Error::last_os_error())),
            0 => {
                self.progress.advance(Step::ForkWorker)?;
                Ok(Forked::Child)
            }
            pid => Ok(Forked::Parent(pid as i32)),
        }
    }

    /// [`Step::EnterWorker`]: keeps only `keep_fds`; `channel` is the host channel, whose
    /// hang-up means the host is gone (none: nothing to watch). See [`super::enter_worker`].
    pub fn enter_worker(&mut self, keep_fds: &[RawFd], channel: Option<RawFd>) -> Result<(), SetupError> {
        self.progress.advance(Step::EnterWorker)?;
        let policy = self.policy.as_ref().ok_or(SetupError::NoPolicy(Step::EnterWorker))?;
        enter_worker(policy, keep_fds, channel.unwrap_or(-1))?;
        Ok(())
    }

    /// [`Step::Lock`]: resource limits and the worker's seccomp filter, the last step
    /// before user code. Returns the layers it could not apply (under a weaker
    /// sandbox). See [`super::lock_worker`].
    pub fn lock(&mut self, limits: &[rlimits::Rlimit]) -> Result<Vec<MissingLayer>, SetupError> {
        self.progress.advance(Step::Lock)?;
        let policy = self.policy.as_ref().ok_or(SetupError::NoPolicy(Step::Lock))?;
        Ok(lock_worker(policy, limits)?)
    }
}

/// The launcher's side of [`Setup::fork_and_mirror`]: waits for its worker and ends
/// the same way.
fn mirror(pid: libc::pid_t) -> ! {
    let mut status = 0;
    // SAFETY: waits for our own child, writing its status into a local.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            crate::exit_as(WorkerExit::SetupFailed);
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: restores the default action and sends the signal to ourselves, so the
        // host sees the worker's signal.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
        }
        crate::exit_now(128 + signal);
    }
    crate::exit_now(libc::WEXITSTATUS(status))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Walks `role`'s order with [`Progress`], recording each step taken.
    fn walk(role: Role) -> Vec<Step> {
        let mut progress = Progress::new(role);
        let mut taken = Vec::new();
        while let Some(step) = progress.next() {
            progress.advance(step).unwrap();
            taken.push(step);
        }
        taken
    }

    #[test]
    fn each_role_sets_up_in_its_documented_order() {
        use Step::*;
        assert_eq!(walk(Role::Template), [DieWithHost, EnterTemplate, ForkWorker, EnterWorker, Lock]);
        for launcher in [Role::Run, Role::Exec, Role::Plugin] {
            assert_eq!(walk(launcher), [DieWithHost, EnterTemplate, ForkAndMirror, EnterWorker, Lock], "{launcher:?}");
        }
        assert_eq!(walk(Role::Detect), [LimitReader, DieWithHost, ReadOnlyFolder]);
        assert_eq!(walk(Role::Probe), [EnterTemplate, EnterWorker, Lock]);
    }

    #[test]
    fn every_role_that_runs_user_code_locks_last_after_entering_the_worker() {
        for role in [Role::Template, Role::Run, Role::Exec, Role::Plugin] {
            let steps = role.steps();
            assert_eq!(steps.first(), Some(&Step::DieWithHost), "{role:?}");
            assert_eq!(steps.last(), Some(&Step::Lock), "{role:?}");
            let at = |s: Step| steps.iter().position(|&x| x == s).unwrap();
            assert!(at(Step::EnterTemplate) < at(Step::EnterWorker), "{role:?}");
            assert!(matches!(steps[at(Step::EnterWorker) - 1], Step::ForkWorker | Step::ForkAndMirror), "{role:?}");
        }
    }

    #[test]
    fn a_step_out_of_order_is_refused_and_nothing_advances() {
        let mut progress = Progress::new(Role::Run);
        let err = progress.advance(Step::EnterTemplate).unwrap_err();
        assert!(
            matches!(
                err,
                SetupError::OutOfOrder {
                    role: Role::Run,
                    expected: Some(Step::DieWithHost),
                    asked: Step::EnterTemplate
                }
            ),
            "{err:?}"
        );
        assert_eq!(progress.next(), Some(Step::DieWithHost));
        progress.advance(Step::DieWithHost).unwrap();
        progress.advance(Step::EnterTemplate).unwrap();
        assert!(progress.advance(Step::Lock).is_err(), "locking before the fork and the worker's layers");
        assert!(progress.advance(Step::ForkWorker).is_err(), "a launcher forks and mirrors");
        assert_eq!(progress.next(), Some(Step::ForkAndMirror));
    }

    #[test]
    fn a_complete_setup_takes_no_further_step() {
        let mut progress = Progress::new(Role::Detect);
        for step in Role::Detect.steps() {
            progress.advance(*step).unwrap();
        }
        assert!(matches!(
            progress.advance(Step::DieWithHost),
            Err(SetupError::OutOfOrder { expected: None, asked: Step::DieWithHost, .. })
        ));
    }

    #[test]
    fn worker_steps_without_a_template_policy_are_refused() {
        let mut setup = Setup::new(Role::Probe, &SandboxOptions::default());
        // Skip entering the template by walking its progress only: the policy is missing.
        setup.progress.advance(Step::EnterTemplate).unwrap();
        assert!(matches!(setup.enter_worker(&[], None), Err(SetupError::NoPolicy(Step::EnterWorker))));
        assert!(matches!(setup.lock(&[]), Err(SetupError::NoPolicy(Step::Lock))));
    }
}
