//! Namespaces: the template enters a new user, mount, ipc, uts and network namespace
//! once; each worker is forked into a new pid namespace of its own (see
//! `seccomp::WORKER_CLONE_FLAGS`).
//!
//! The user namespace is always created, also when the host runs as root: the
//! template's capabilities then count only inside it (enough to create pid namespaces
//! and mount a tmpfs). Inside, the process is uid 0. Outside it is an unprivileged uid
//! ([`outside_ids`]): the host's own when the host is not root, and [`UNPRIVILEGED_ID`]
//! when it is, because the kernel exempts the initial namespace's root from
//! `RLIMIT_NPROC` and a worker that is root outside could fork despite its limit. Only
//! a process with `CAP_SETUID` in the parent namespace may map another uid, so a short
//! helper forked before the `unshare` writes the maps ([`map_through_helper`]).
//!
//! The network namespace is empty (its loopback interface is down): UDP, TCP with Fast
//! Open or MPTCP, and netlink reach nothing, even in a worker whose seccomp filter were
//! gone. It is entered once by the template, so programs pay nothing for it.

use std::io;

use nix::sched::{unshare, CloneFlags};
use nix::unistd::{Gid, Uid};

/// The uid and gid workers have outside their user namespace when the host is root:
/// the conventional "nobody", which owns no file a worker could reach anyway.
pub const UNPRIVILEGED_ID: u32 = 65534;

/// The ids outside the user namespace for a host running as `uid`/`gid`: its own when
/// it is not root, [`UNPRIVILEGED_ID`] when it is.
pub fn outside_ids(uid: u32, gid: u32) -> (u32, u32) {
    if uid == 0 {
        (UNPRIVILEGED_ID, UNPRIVILEGED_ID)
    } else {
        (uid, gid)
    }
}

/// Enters a new user namespace in which this process is uid and gid 0, mapped to
/// `outside` (see [`outside_ids`]). Returns the outside uid.
pub fn enter_user_namespace() -> io::Result<u32> {
    let (uid, gid) = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let (outside_uid, outside_gid) = outside_ids(uid, gid);
    if (outside_uid, outside_gid) == (uid, gid) {
        unshare(CloneFlags::CLONE_NEWUSER).map_err(io::Error::from)?;
        write_maps("self", outside_uid, outside_gid)?;
    } else {
        map_through_helper(outside_uid, outside_gid)?;
    }
    // Become the namespace's root: with the maps in place this makes the process's real
    // ids the outside ones (until now it still carried the host's).
    nix::unistd::setresgid(Gid::from_raw(0), Gid::from_raw(0), Gid::from_raw(0)).map_err(io::Error::from)?;
    nix::unistd::setresuid(Uid::from_raw(0), Uid::from_raw(0), Uid::from_raw(0)).map_err(io::Error::from)?;
    Ok(outside_uid)
}

/// Writes `setgroups`, `uid_map` and `gid_map` of `/proc/<pid>`.
fn write_maps(pid: &str, outside_uid: u32, outside_gid: u32) -> io::Result<()> {
    std::fs::write(format!("/proc/{pid}/setgroups"), "deny")?;
    std::fs::write(format!("/proc/{pid}/uid_map"), format!("0 {outside_uid} 1"))?;
    std::fs::write(format!("/proc/{pid}/gid_map"), format!("0 {outside_gid} 1"))?;
    Ok(())
}

/// Unshares the user namespace while a helper forked beforehand (still in the parent
/// namespace, with its capabilities) writes the maps to other ids. The process must be
/// single-threaded.
fn map_through_helper(outside_uid: u32, outside_gid: u32) -> io::Result<()> {
    let (go_read, go_write) = nix::unistd::pipe().map_err(io::Error::from)?;
    let me = nix::unistd::getpid().as_raw().to_string();
    // SAFETY: the callers are single-threaded (the template checks it; the launchers
    // have no other thread yet); the child only reads a pipe, writes three files and
    // exits.
    match unsafe { nix::unistd::fork() }.map_err(io::Error::from)? {
        nix::unistd::ForkResult::Child => {
            drop(go_write);
            let mut byte = [0u8; 1];
            let ready = matches!(nix::unistd::read(&go_read, &mut byte), Ok(1));
            let code = if ready && write_maps(&me, outside_uid, outside_gid).is_ok() { 0 } else { 1 };
            // SAFETY: _exit(2) in the forked child, without running the parent's destructors.
            unsafe { libc::_exit(code) }
        }
        nix::unistd::ForkResult::Parent { child } => {
            drop(go_read);
            let unshared = unshare(CloneFlags::CLONE_NEWUSER).map_err(io::Error::from);
            // Tell the helper to go on (or, if the unshare failed, to give up: it then
            // fails to write maps that are already set).
            let _ = nix::unistd::write(&go_write, b"x");
            drop(go_write);
            let status = nix::sys::wait::waitpid(child, None).map_err(io::Error::from)?;
            unshared?;
            match status {
                nix::sys::wait::WaitStatus::Exited(_, 0) => Ok(()),
                other => Err(io::Error::other(format!(
                    "the helper that maps uid 0 to uid {outside_uid} outside the namespace failed ({other:?})"
                ))),
            }
        }
    }
}

/// Enters new mount, ipc and uts namespaces (needs the user namespace's capabilities).
pub fn enter_mount_ipc_uts_namespaces() -> io::Result<()> {
    unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS).map_err(io::Error::from)?;
    nix::unistd::sethostname("codemode").map_err(io::Error::from)?;
    Ok(())
}

/// Enters a new, empty network namespace (its loopback interface stays down).
pub fn enter_network_namespace() -> io::Result<()> {
    unshare(CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_never_root_outside_and_others_keep_their_ids() {
        assert_eq!(outside_ids(0, 0), (UNPRIVILEGED_ID, UNPRIVILEGED_ID));
        assert_eq!(outside_ids(0, 1000), (UNPRIVILEGED_ID, UNPRIVILEGED_ID));
        assert_eq!(outside_ids(1000, 100), (1000, 100));
    }
}
