//! Resource limits, decided by a pure function ([`worker_rlimits`]) and applied by
//! [`apply`].

use nix::sys::resource::{setrlimit, Resource};
use protocol::worker::Resource as Limited;

/// One limit: the resource and its soft and hard values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    /// The resource.
    pub resource: Limited,
    /// Soft limit.
    pub soft: u64,
    /// Hard limit.
    pub hard: u64,
    /// Why.
    pub reason: &'static str,
}

/// The limits of a worker running a program.
///
/// `data_bytes` is the memory backstop (see `crate::memory`), `cpu_seconds` the last
/// backstop behind the per-step watchdog and the host's wall clock.
pub fn worker_rlimits(data_bytes: u64, cpu_seconds: u64) -> Vec<Rlimit> {
    vec![
        Rlimit {
            resource: Limited::Data,
            soft: data_bytes,
            hard: data_bytes,
            reason:
                "the memory limit over everything the heap limit does not count: a program's worker base + limit + 1/32 of it + 1 MiB; a plugin's base + 1.5 x limit + 64 MiB",
        },
        Rlimit {
            resource: Limited::Nofile,
            soft: 32,
            hard: 32,
            reason: "the channel and the event loop's few descriptors",
        },
        Rlimit { resource: Limited::Nproc, soft: 0, hard: 0, reason: "no new processes or threads" },
        Rlimit { resource: Limited::Fsize, soft: 0, hard: 0, reason: "no file may grow" },
        Rlimit { resource: Limited::Core, soft: 0, hard: 0, reason: "no core dumps" },
        Rlimit { resource: Limited::Memlock, soft: 0, hard: 0, reason: "no locked memory" },
        Rlimit { resource: Limited::Msgqueue, soft: 0, hard: 0, reason: "no POSIX message queues" },
        Rlimit {
            resource: Limited::Cpu,
            soft: cpu_seconds,
            hard: cpu_seconds.saturating_add(1),
            reason: "CPU backstop behind the step watchdog; per program, from its wall clock",
        },
    ]
}

/// The limits as reports show them.
pub fn report(limits: &[Rlimit]) -> Vec<protocol::worker::RlimitReport> {
    limits
        .iter()
        .map(|l| protocol::worker::RlimitReport {
            resource: l.resource,
            soft: l.soft,
            hard: l.hard,
            reason: l.reason.to_string(),
        })
        .collect()
}

/// The kernel's resource for one the contract names.
fn kernel_resource(resource: protocol::worker::Resource) -> Resource {
    use protocol::worker::Resource as R;
    match resource {
        R::Data => Resource::RLIMIT_DATA,
        R::Nofile => Resource::RLIMIT_NOFILE,
        R::Nproc => Resource::RLIMIT_NPROC,
        R::Fsize => Resource::RLIMIT_FSIZE,
        R::Core => Resource::RLIMIT_CORE,
        R::Memlock => Resource::RLIMIT_MEMLOCK,
        R::Msgqueue => Resource::RLIMIT_MSGQUEUE,
        R::Cpu => Resource::RLIMIT_CPU,
    }
}

/// Applies the limits in order.
pub fn apply(limits: &[Rlimit]) -> nix::Result<()> {
    for l in limits {
        setrlimit(kernel_resource(l.resource), l.soft, l.hard)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_get_no_files_processes_or_cores_and_a_cpu_backstop() {
        let limits = worker_rlimits(300 << 20, 901);
        let get = |r: Limited| limits.iter().find(|l| l.resource == r).map(|l| (l.soft, l.hard));
        assert_eq!(get(Limited::Data), Some((300 << 20, 300 << 20)));
        assert_eq!(get(Limited::Fsize), Some((0, 0)));
        assert_eq!(get(Limited::Core), Some((0, 0)));
        assert_eq!(get(Limited::Nproc), Some((0, 0)));
        assert_eq!(get(Limited::Cpu), Some((901, 902)));
        assert!(limits.iter().all(|l| l.soft <= l.hard && !l.reason.is_empty()));
    }
}
