//! Resource limits, decided by a pure function ([`worker_rlimits`]) and applied by
//! [`apply`].

use nix::sys::resource::{setrlimit, Resource};

/// One limit: the resource and its soft and hard values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    /// The resource.
    pub resource: Resource,
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
            resource: Resource::RLIMIT_DATA,
            soft: data_bytes,
            hard: data_bytes,
            reason: "memory backstop behind the heap limit",
        },
        Rlimit {
            resource: Resource::RLIMIT_NOFILE,
            soft: 32,
            hard: 32,
            reason: "the channel and the event loop's few descriptors",
        },
        Rlimit { resource: Resource::RLIMIT_NPROC, soft: 0, hard: 0, reason: "no new processes or threads" },
        Rlimit { resource: Resource::RLIMIT_FSIZE, soft: 0, hard: 0, reason: "no file may grow" },
        Rlimit { resource: Resource::RLIMIT_CORE, soft: 0, hard: 0, reason: "no core dumps" },
        Rlimit { resource: Resource::RLIMIT_MEMLOCK, soft: 0, hard: 0, reason: "no locked memory" },
        Rlimit { resource: Resource::RLIMIT_MSGQUEUE, soft: 0, hard: 0, reason: "no POSIX message queues" },
        Rlimit {
            resource: Resource::RLIMIT_CPU,
            soft: cpu_seconds,
            hard: cpu_seconds.saturating_add(1),
            reason: "CPU backstop behind the step watchdog",
        },
    ]
}

/// The limits as reports show them.
pub fn report(limits: &[Rlimit]) -> Vec<protocol::worker::RlimitReport> {
    limits
        .iter()
        .map(|l| protocol::worker::RlimitReport {
            resource: format!("{:?}", l.resource),
            soft: l.soft,
            hard: l.hard,
            reason: l.reason.to_string(),
        })
        .collect()
}

/// Applies the limits in order.
pub fn apply(limits: &[Rlimit]) -> nix::Result<()> {
    for l in limits {
        setrlimit(l.resource, l.soft, l.hard)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_get_no_files_processes_or_cores_and_a_cpu_backstop() {
        let limits = worker_rlimits(300 << 20, 901);
        let get = |r: Resource| limits.iter().find(|l| l.resource == r).map(|l| (l.soft, l.hard));
        assert_eq!(get(Resource::RLIMIT_DATA), Some((300 << 20, 300 << 20)));
        assert_eq!(get(Resource::RLIMIT_FSIZE), Some((0, 0)));
        assert_eq!(get(Resource::RLIMIT_CORE), Some((0, 0)));
        assert_eq!(get(Resource::RLIMIT_NPROC), Some((0, 0)));
        assert_eq!(get(Resource::RLIMIT_CPU), Some((901, 902)));
        assert!(limits.iter().all(|l| l.soft <= l.hard && !l.reason.is_empty()));
    }
}
