//! Process attributes: the parent-death signal, no new privileges, no capabilities, a new session, no core
//! dumps, not dumpable, an empty environment, and no descriptor but the channel.

use std::io;
use std::os::fd::RawFd;

use caps::{CapSet, Capability};

fn prctl(option: libc::c_int, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: the options used here take integer arguments only.
    if unsafe { libc::prctl(option, arg, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `PR_SET_NO_NEW_PRIVS`: no exec can ever grant privileges again.
pub fn set_no_new_privs() -> io::Result<()> {
    prctl(libc::PR_SET_NO_NEW_PRIVS, 1)
}

/// `PR_SET_PDEATHSIG`: SIGKILL when the parent dies. The one place the worker binary
/// sets it; every role reaches it through `setup::Setup::die_with_host` or
/// [`super::enter_worker`].
pub fn set_parent_death_signal() -> io::Result<()> {
    prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong)
}

/// Not dumpable: no core dump, no ptrace attach by same-uid processes, /proc owned by root.
pub fn set_not_dumpable() -> io::Result<()> {
    prctl(libc::PR_SET_DUMPABLE, 0)
}

/// Drops every capability from every set, the bounding set first.
pub fn drop_all_capabilities() -> Result<(), caps::errors::CapsError> {
    for cap in caps::all() {
        if caps::has_cap(None, CapSet::Bounding, cap)? {
            caps::drop(None, CapSet::Bounding, cap)?;
        }
    }
    caps::clear(None, CapSet::Ambient)?;
    caps::clear(None, CapSet::Inheritable)?;
    caps::clear(None, CapSet::Effective)?;
    caps::clear(None, CapSet::Permitted)?;
    Ok(())
}

/// Drops every capability except `keep` (the template keeps CAP_SYS_ADMIN of its own
/// user namespace to create each worker's pid namespace, and CAP_SETPCAP so that each
/// worker can then drop both from its bounding set).
pub fn drop_capabilities_except(keep: &[Capability]) -> Result<(), caps::errors::CapsError> {
    for cap in caps::all() {
        if !keep.contains(&cap) && caps::has_cap(None, CapSet::Bounding, cap)? {
            caps::drop(None, CapSet::Bounding, cap)?;
        }
    }
    caps::clear(None, CapSet::Ambient)?;
    caps::clear(None, CapSet::Inheritable)?;
    let only: caps::CapsHashSet = keep.iter().copied().collect();
    caps::set(None, CapSet::Effective, &only)?;
    caps::set(None, CapSet::Permitted, &only)?;
    Ok(())
}

/// A new session: no controlling terminal to inject input into.
pub fn new_session() -> io::Result<()> {
    nix::unistd::setsid().map(|_| ()).map_err(io::Error::from)
}

/// Removes every environment variable except those named in `keep`.
pub fn clear_environment(keep: &[&str]) {
    for (key, _) in std::env::vars_os() {
        if !keep.iter().any(|k| key == *k) {
            std::env::remove_var(key);
        }
    }
}

/// Closes every descriptor except those in `keep`.
pub fn close_all_except(keep: &[RawFd]) -> io::Result<()> {
    let mut keep: Vec<u32> = keep.iter().map(|&fd| fd as u32).collect();
    keep.sort_unstable();
    let mut first = 0u32;
    for fd in keep {
        if fd > first {
            close_range(first, fd - 1)?;
        }
        first = fd + 1;
    }
    close_range(first, u32::MAX)
}

fn close_range(first: u32, last: u32) -> io::Result<()> {
    // SAFETY: close_range(2) only closes descriptors; the callers keep what they own.
    if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
