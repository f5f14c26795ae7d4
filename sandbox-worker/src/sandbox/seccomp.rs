//! The seccomp allowlists, as data: one entry per system call, with the reason it is
//! needed beside it.
//!
//! Three filters are stacked on a process, and the kernel takes the strictest answer:
//! 1. the allowlist: listed calls pass, anything else kills the process (SIGSYS);
//! 2. an `ENOSYS` filter for calls a program must not use but may probe (`clone3`,
//!    `io_uring_*`, the new mount API), so that libraries fall back instead of dying;
//! 3. an `EPERM` filter for refused requests that pass the allowlist's argument rules
//!    (`ioctl` `TIOCSTI`/`TIOCLINUX`, compared on the low 32 bits so high bits do not
//!    hide them).
//!
//! [`worker_table`] is what a running program needs and nothing more; [`setup_table`]
//! adds what the template and a freshly forked worker need before the worker installs
//! its own filter (the template's filter is the union of both). Both are pure functions
//! with unit tests; [`compile`] and [`install`] build and load them. A worker inherits
//! the template's three filters across fork, so it adds only its own allowlist
//! ([`install_allowlist`]); without the template's filter it installs all three.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// One argument comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgCheck {
    /// Argument index (0-based).
    pub arg: u8,
    /// Compare only the low 32 bits (`true`) or the whole 64-bit value.
    pub low32: bool,
    /// The comparison.
    pub op: Op,
    /// The value compared against.
    pub value: u64,
}

/// Comparison operators used by the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Equal.
    Eq,
    /// `(arg & mask) == value`.
    MaskedEq(u64),
}

/// What the filters answer to one system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed with any arguments.
    Allow,
    /// Allowed when any one of these argument checks (each a conjunction) matches.
    AllowIf(&'static [&'static [ArgCheck]]),
    /// Answered with this errno, whatever the arguments.
    Refuse(i32),
    /// Answered with this errno when the checks match; other arguments kill.
    RefuseIf(&'static [ArgCheck], i32),
}

/// One row of a table.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The system call number.
    pub nr: i64,
    /// Its name, for reports and tests.
    pub name: &'static str,
    /// What the filters answer.
    pub verdict: Verdict,
    /// Why the worker needs it (or why it is refused this way).
    pub reason: &'static str,
}

macro_rules! entry {
    ($name:ident, $verdict:expr, $reason:expr) => {
        Entry { nr: libc::$name, name: stringify!($name), verdict: $verdict, reason: $reason }
    };
}

const fn low32_eq(arg: u8, value: u64) -> ArgCheck {
    ArgCheck { arg, low32: true, op: Op::Eq, value }
}
const fn eq(arg: u8, value: u64) -> ArgCheck {
    ArgCheck { arg, low32: false, op: Op::Eq, value }
}
const fn bits_clear(arg: u8, mask: u64) -> ArgCheck {
    ArgCheck { arg, low32: true, op: Op::MaskedEq(mask), value: 0 }
}

const PROT_EXEC: u64 = libc::PROT_EXEC as u64;
/// No new executable memory: the QuickJS engine never generates code.
const NO_EXEC_MAPPING: &[&[ArgCheck]] = &[&[bits_clear(2, PROT_EXEC)]];
/// sendto(2) only on the connected channel (no destination address).
const NO_DESTINATION: &[&[ArgCheck]] = &[&[eq(4, 0)]];
/// TIOCSTI (fake terminal input) and TIOCLINUX, on the low 32 bits of the request.
const TTY_INJECTION: &[ArgCheck] = &[low32_eq(1, libc::TIOCSTI), low32_eq(1, libc::TIOCLINUX)];
/// Thread creation flags as std and glibc use them (no new process, no namespace).
const THREAD_FLAGS: u64 = (libc::CLONE_VM
    | libc::CLONE_FS
    | libc::CLONE_FILES
    | libc::CLONE_SIGHAND
    | libc::CLONE_THREAD
    | libc::CLONE_SYSVSEM
    | libc::CLONE_SETTLS
    | libc::CLONE_PARENT_SETTID
    | libc::CLONE_CHILD_CLEARTID) as u64;
/// The template's fork of one worker: the host's child, in a new pid namespace.
pub const WORKER_CLONE_FLAGS: u64 = (libc::CLONE_PARENT | libc::CLONE_NEWPID | libc::SIGCHLD) as u64;
/// The spawn path's fork of its one worker: a child in a new pid namespace.
pub const SPAWNED_CLONE_FLAGS: u64 = (libc::CLONE_NEWPID | libc::SIGCHLD) as u64;
const CLONE_RULES: &[&[ArgCheck]] =
    &[&[eq(0, THREAD_FLAGS)], &[eq(0, WORKER_CLONE_FLAGS)], &[eq(0, SPAWNED_CLONE_FLAGS)]];

/// What a running program needs: its channel, memory, time, and the way out.
pub fn worker_table(engine_generates_code: bool) -> Vec<Entry> {
    let exec_rule = if engine_generates_code { Verdict::Allow } else { Verdict::AllowIf(NO_EXEC_MAPPING) };
    vec![
        entry!(SYS_read, Verdict::Allow, "tool answers arrive on the channel"),
        entry!(SYS_write, Verdict::Allow, "tool calls, console output and the outcome leave on the channel"),
        entry!(SYS_recvfrom, Verdict::Allow, "std's socket reads use recv(2)"),
        entry!(SYS_sendto, Verdict::AllowIf(NO_DESTINATION), "std's socket writes use send(2); never to an address"),
        entry!(SYS_poll, Verdict::Allow, "busy-polling for the next answer; waiting for socket space"),
        entry!(SYS_ppoll, Verdict::Allow, "the same, as some libc versions issue it"),
        entry!(SYS_mmap, exec_rule, "the JavaScript heap and allocator arenas"),
        entry!(SYS_mprotect, exec_rule, "allocator guard pages"),
        entry!(SYS_munmap, Verdict::Allow, "returning memory"),
        entry!(SYS_mremap, Verdict::Allow, "growing large allocations"),
        entry!(SYS_brk, Verdict::Allow, "the allocator's main arena"),
        entry!(SYS_madvise, Verdict::Allow, "the allocator returns unused pages"),
        entry!(SYS_futex, Verdict::Allow, "locks shared with the step watchdog thread; the event loop's park"),
        entry!(SYS_sched_yield, Verdict::Allow, "spin loops back off"),
        entry!(SYS_clock_gettime, Verdict::Allow, "the step clock and Date.now (when the vDSO falls back)"),
        entry!(SYS_clock_nanosleep, Verdict::Allow, "the step watchdog sleeps"),
        entry!(SYS_nanosleep, Verdict::Allow, "the step watchdog sleeps (older libc)"),
        entry!(SYS_getrandom, Verdict::Allow, "Math.random and hash seeds"),
        entry!(SYS_rt_sigreturn, Verdict::Allow, "returning from a signal handler"),
        entry!(SYS_rt_sigprocmask, Verdict::Allow, "abort() blocks signals before raising SIGABRT"),
        entry!(SYS_sigaltstack, Verdict::Allow, "Rust's stack-overflow handler"),
        entry!(SYS_getpid, Verdict::Allow, "abort() names its own process (pid 1 of its namespace)"),
        entry!(SYS_gettid, Verdict::Allow, "abort() names its own thread"),
        entry!(SYS_tgkill, Verdict::Allow, "abort() signals itself; the pid namespace holds nothing else"),
        entry!(SYS_exit, Verdict::Allow, "a thread ends"),
        entry!(SYS_exit_group, Verdict::Allow, "the worker exits after reporting"),
        entry!(
            SYS_clone3,
            Verdict::Refuse(libc::ENOSYS),
            "no new threads or processes; ENOSYS lets libc fall back to clone, which kills"
        ),
        entry!(SYS_io_uring_setup, Verdict::Refuse(libc::ENOSYS), "io_uring bypasses seccomp"),
        entry!(SYS_io_uring_enter, Verdict::Refuse(libc::ENOSYS), "io_uring bypasses seccomp"),
        entry!(SYS_io_uring_register, Verdict::Refuse(libc::ENOSYS), "io_uring bypasses seccomp"),
        entry!(SYS_open_tree, Verdict::Refuse(libc::ENOSYS), "new mount API"),
        entry!(SYS_move_mount, Verdict::Refuse(libc::ENOSYS), "new mount API"),
        entry!(SYS_fsopen, Verdict::Refuse(libc::ENOSYS), "new mount API"),
        entry!(SYS_fsconfig, Verdict::Refuse(libc::ENOSYS), "new mount API"),
        entry!(SYS_fsmount, Verdict::Refuse(libc::ENOSYS), "new mount API"),
        entry!(SYS_fspick, Verdict::Refuse(libc::ENOSYS), "new mount API"),
        entry!(SYS_mount_setattr, Verdict::Refuse(libc::ENOSYS), "new mount API"),
        entry!(
            SYS_ioctl,
            Verdict::RefuseIf(TTY_INJECTION, libc::EPERM),
            "terminal injection is refused (low 32 bits compared); every other ioctl kills"
        ),
    ]
}

/// What the template and a freshly forked worker need before the worker's own filter.
pub fn setup_table() -> Vec<Entry> {
    vec![
        entry!(SYS_recvmsg, Verdict::Allow, "fork requests arrive with the worker's channel (SCM_RIGHTS)"),
        entry!(SYS_sendmsg, Verdict::Allow, "answers to the host on the control channel"),
        entry!(
            SYS_clone,
            Verdict::AllowIf(CLONE_RULES),
            "forking a worker into a new pid namespace; the worker's watchdog thread"
        ),
        entry!(SYS_set_robust_list, Verdict::Allow, "a new thread registers its robust futex list"),
        entry!(SYS_rseq, Verdict::Allow, "a new thread registers restartable sequences"),
        entry!(SYS_sched_getaffinity, Verdict::Allow, "the runtime sizes itself"),
        entry!(SYS_rt_sigaction, Verdict::Allow, "a new worker resets signal handlers"),
        entry!(SYS_prctl, Verdict::Allow, "parent-death signal, dumpable, capability bounding set"),
        entry!(SYS_prlimit64, Verdict::Allow, "the worker's resource limits"),
        entry!(SYS_setsid, Verdict::Allow, "the worker leaves the template's session"),
        entry!(SYS_capget, Verdict::Allow, "dropping capabilities"),
        entry!(SYS_capset, Verdict::Allow, "dropping capabilities"),
        entry!(SYS_close_range, Verdict::Allow, "the worker closes every descriptor but its channel"),
        entry!(SYS_close, Verdict::Allow, "the template drops its copy of a worker's channel"),
        entry!(SYS_seccomp, Verdict::Allow, "the worker installs its own, stricter filter"),
        entry!(SYS_getppid, Verdict::Allow, "the parent check after the parent-death signal"),
        entry!(
            SYS_openat,
            Verdict::Refuse(libc::EACCES),
            "the spawn path's engine probes /proc as it starts; nothing is there to open (Landlock denies it too)"
        ),
        entry!(SYS_wait4, Verdict::Allow, "the spawn path's launcher reaps its one worker"),
        entry!(SYS_kill, Verdict::Allow, "the spawn path's launcher ends itself with its worker's signal"),
    ]
}

/// Why a filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// seccompiler refused the table (a bug in the table).
    #[error("building the seccomp filter failed: {0}")]
    Build(String),
    /// The kernel refused the filter.
    #[error("installing the seccomp filter failed: {0}")]
    Install(String),
}

/// The compiled filters of one table, in installation order.
pub struct CompiledFilters(Vec<BpfProgram>);

fn target_arch() -> TargetArch {
    #[cfg(target_arch = "aarch64")]
    {
        TargetArch::aarch64
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        TargetArch::x86_64
    }
}

fn conditions(checks: &[ArgCheck]) -> Result<SeccompRule, SeccompError> {
    let conds = checks
        .iter()
        .map(|c| {
            let len = if c.low32 { SeccompCmpArgLen::Dword } else { SeccompCmpArgLen::Qword };
            let op = match c.op {
                Op::Eq => SeccompCmpOp::Eq,
                Op::MaskedEq(mask) => SeccompCmpOp::MaskedEq(mask),
            };
            SeccompCondition::new(c.arg, len, op, c.value).map_err(|e| SeccompError::Build(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    SeccompRule::new(conds).map_err(|e| SeccompError::Build(e.to_string()))
}

/// Compiles a table into its stacked filters (allowlist first, then one per errno).
pub fn compile(table: &[Entry]) -> Result<CompiledFilters, SeccompError> {
    let mut allow: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut refusals: BTreeMap<i32, BTreeMap<i64, Vec<SeccompRule>>> = BTreeMap::new();
    for e in table {
        match e.verdict {
            Verdict::Allow => {
                allow.insert(e.nr, vec![]);
            }
            Verdict::AllowIf(alternatives) => {
                let rules = alternatives.iter().map(|c| conditions(c)).collect::<Result<Vec<_>, _>>()?;
                allow.insert(e.nr, rules);
            }
            Verdict::Refuse(errno) => {
                // It must pass the allowlist to reach the errno filter.
                allow.insert(e.nr, vec![]);
                refusals.entry(errno).or_default().insert(e.nr, vec![]);
            }
            Verdict::RefuseIf(checks, errno) => {
                // Each check alone refuses (an OR of single conditions).
                let rules =
                    checks.iter().map(|c| conditions(std::slice::from_ref(c))).collect::<Result<Vec<_>, _>>()?;
                allow.insert(e.nr, rules.clone());
                refusals.entry(errno).or_default().insert(e.nr, rules);
            }
        }
    }
    let arch = target_arch();
    let mut programs = Vec::new();
    let allowlist = SeccompFilter::new(allow, SeccompAction::KillProcess, SeccompAction::Allow, arch)
        .map_err(|e| SeccompError::Build(e.to_string()))?;
    programs.push(BpfProgram::try_from(allowlist).map_err(|e| SeccompError::Build(e.to_string()))?);
    for (errno, rules) in refusals {
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), arch)
            .map_err(|e| SeccompError::Build(e.to_string()))?;
        programs.push(BpfProgram::try_from(filter).map_err(|e| SeccompError::Build(e.to_string()))?);
    }
    Ok(CompiledFilters(programs))
}

/// Installs the filters on every thread of the process (TSYNC).
pub fn install(filters: &CompiledFilters) -> Result<(), SeccompError> {
    // The errno filters first: the allowlist, installed last, may forbid seccomp(2).
    for program in filters.0.iter().rev() {
        seccompiler::apply_filter_all_threads(program).map_err(|e| SeccompError::Install(e.to_string()))?;
    }
    Ok(())
}

/// Installs only the allowlist (on every thread): for a worker whose template already
/// carries the same errno filters (inherited across fork), one filter to attach instead
/// of three.
///
/// The template's filter is the union of [`setup_table`] and [`worker_table`]: its
/// errno filters answer every call the worker's refuse, with the same errno, and its
/// only other refusal (`openat`: `EACCES`) is killed by the worker's allowlist, which
/// takes precedence. Measured by `cargo bench -p codemode --bench execute -- cpu`.
pub fn install_allowlist(filters: &CompiledFilters) -> Result<(), SeccompError> {
    let allowlist = filters.0.first().ok_or_else(|| SeccompError::Install("no allowlist was compiled".into()))?;
    seccompiler::apply_filter_all_threads(allowlist).map_err(|e| SeccompError::Install(e.to_string()))
}

/// A table summed up for reports: what is allowed (`name (some arguments)` when only
/// some are) and what is answered with an errno.
pub fn report(table: &[Entry]) -> protocol::worker::SeccompReport {
    let name = |e: &Entry| e.name.trim_start_matches("SYS_").to_string();
    let errno = |code: i32| format!("{:?}", nix::errno::Errno::from_raw(code));
    let mut report = protocol::worker::SeccompReport::default();
    for e in table {
        match e.verdict {
            Verdict::Allow => report.allowed.push(name(e)),
            Verdict::AllowIf(_) => report.allowed.push(format!("{} (some arguments)", name(e))),
            Verdict::Refuse(code) => report.refused.push(format!("{}: {}", name(e), errno(code))),
            Verdict::RefuseIf(_, code) => report.refused.push(format!("{} (some arguments): {}", name(e), errno(code))),
        }
    }
    report
}

/// The union of two tables (for the template: its own needs plus the worker's).
pub fn union(a: Vec<Entry>, b: Vec<Entry>) -> Vec<Entry> {
    let mut out = a;
    for e in b {
        if !out.iter().any(|x| x.nr == e.nr) {
            out.push(e);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(table: &[Entry], nr: i64) -> Option<Entry> {
        table.iter().find(|e| e.nr == nr).copied()
    }

    #[test]
    fn the_worker_table_is_an_allowlist_without_escape_hatches() {
        let t = worker_table(false);
        for (nr, name) in [
            (libc::SYS_execve, "execve"),
            (libc::SYS_execveat, "execveat"),
            (libc::SYS_socket, "socket"),
            (libc::SYS_connect, "connect"),
            (libc::SYS_open, "open"),
            (libc::SYS_openat, "openat"),
            (libc::SYS_clone, "clone"),
            (libc::SYS_fork, "fork"),
            (libc::SYS_ptrace, "ptrace"),
            (libc::SYS_process_vm_writev, "process_vm_writev"),
            (libc::SYS_userfaultfd, "userfaultfd"),
            (libc::SYS_bpf, "bpf"),
            (libc::SYS_perf_event_open, "perf_event_open"),
            (libc::SYS_keyctl, "keyctl"),
            (libc::SYS_unshare, "unshare"),
            (libc::SYS_setns, "setns"),
            (libc::SYS_mount, "mount"),
            (libc::SYS_memfd_create, "memfd_create"),
            (libc::SYS_kill, "kill"),
            (libc::SYS_seccomp, "seccomp"),
            (libc::SYS_prctl, "prctl"),
            (libc::SYS_personality, "personality"),
        ] {
            assert!(find(&t, nr).is_none(), "{name} must not be in the worker table");
        }
    }

    #[test]
    fn probes_answer_enosys_and_tty_injection_eperm() {
        let t = worker_table(false);
        assert_eq!(find(&t, libc::SYS_clone3).map(|e| e.verdict), Some(Verdict::Refuse(libc::ENOSYS)));
        assert_eq!(find(&t, libc::SYS_io_uring_setup).map(|e| e.verdict), Some(Verdict::Refuse(libc::ENOSYS)));
        match find(&t, libc::SYS_ioctl).map(|e| e.verdict) {
            Some(Verdict::RefuseIf(checks, errno)) => {
                assert_eq!(errno, libc::EPERM);
                assert!(checks.iter().all(|c| c.low32 && c.arg == 1), "requests are compared on their low 32 bits");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn quickjs_workers_get_no_executable_memory() {
        assert_eq!(
            find(&worker_table(false), libc::SYS_mmap).map(|e| e.verdict),
            Some(Verdict::AllowIf(NO_EXEC_MAPPING))
        );
        assert_eq!(find(&worker_table(true), libc::SYS_mmap).map(|e| e.verdict), Some(Verdict::Allow));
    }

    #[test]
    fn every_entry_has_a_reason_and_appears_once() {
        let t = union(setup_table(), worker_table(false));
        for e in &t {
            assert!(!e.reason.is_empty(), "{} has no reason", e.name);
            assert_eq!(t.iter().filter(|x| x.nr == e.nr).count(), 1, "{} listed twice", e.name);
        }
    }

    #[test]
    fn clone_is_only_for_threads_and_worker_forks() {
        match find(&setup_table(), libc::SYS_clone).map(|e| e.verdict) {
            Some(Verdict::AllowIf(alts)) => {
                assert_eq!(alts.len(), 3);
                assert!(alts.iter().all(|a| a.len() == 1 && a[0].op == Op::Eq && a[0].arg == 0));
                assert_eq!(alts[0][0].value & libc::CLONE_THREAD as u64, libc::CLONE_THREAD as u64);
                assert_eq!(alts[1][0].value & libc::CLONE_NEWPID as u64, libc::CLONE_NEWPID as u64);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tables_compile() {
        assert!(compile(&worker_table(false)).is_ok());
        assert!(compile(&union(setup_table(), worker_table(false))).is_ok());
    }
}
