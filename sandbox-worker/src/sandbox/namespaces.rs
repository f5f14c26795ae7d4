//! Namespaces: the template enters a new user, mount, ipc and uts namespace once; each
//! worker is forked into a new pid namespace of its own (see `seccomp::WORKER_CLONE_FLAGS`).
//!
//! The user namespace is always created, also when the host runs as root: the template's
//! capabilities then count only inside it (enough to create pid namespaces and mount a
//! tmpfs), and it works the same for an unprivileged host. Inside, the process is uid 0,
//! mapped to the host's own uid outside. No network namespace is created per program:
//! the network is denied by seccomp (no `socket`) and Landlock (TCP bind/connect).

use std::io;

use nix::sched::{unshare, CloneFlags};

/// Enters a new user namespace, mapping uid/gid 0 inside to the current ids outside.
pub fn enter_user_namespace() -> io::Result<()> {
    let (uid, gid) = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    unshare(CloneFlags::CLONE_NEWUSER).map_err(io::Error::from)?;
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    Ok(())
}

/// Enters new mount, ipc and uts namespaces (needs the user namespace's capabilities).
pub fn enter_mount_ipc_uts_namespaces() -> io::Result<()> {
    unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS).map_err(io::Error::from)?;
    nix::unistd::sethostname("codemode").map_err(io::Error::from)?;
    Ok(())
}
