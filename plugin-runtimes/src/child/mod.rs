//! The child processes of plugins, in one place for every runtime that starts one
//! (process and JavaScript plugins, MCP servers over stdio). In the order a start goes:
//!
//! 1. [`plugin_command`]: the command that starts the process: only `PATH` and the
//!    configured environment, killed when the host dies, without the capabilities that
//!    read other processes' memory;
//! 2. [`stderr`]: its standard error, drained to codemode's log, the last lines kept for
//!    the reason it is unavailable;
//! 3. [`backoff`]: when it fails, how long until it is started again ([`Restarts`]:
//!    the wait, or the refusal while it backs off, and its failures).

pub mod backoff;
pub mod stderr;

pub use backoff::{Backoff, Restarts};
pub use stderr::{drain_stderr, StderrTail};

/// The capabilities that let a process read another's memory and environment despite
/// it not being dumpable (measured: each of them alone does), by their numbers in
/// linux/capability.h, which libc does not name: `CAP_SYS_PTRACE`, `CAP_SYS_ADMIN`,
/// `CAP_PERFMON`.
const MEMORY_READING_CAPABILITIES: [libc::c_ulong; 3] = [19, 21, 38];

/// The command that starts a plugin process: `args` as written, run in `cwd`, with an
/// environment of only `PATH` and `env`, killed when the host dies (the host's thread
/// that started it, which lives as long as the host's runtime), and without the
/// capabilities that read other processes' memory ([`MEMORY_READING_CAPABILITIES`]),
/// even when the host runs as root: with the host not dumpable
/// (`main`), a plugin of the host's user cannot read the host's memory or environment
/// (`/proc/<host>/environ`, `/proc/<host>/mem`), where every other plugin's secrets are.
pub fn plugin_command(
    program: &std::path::Path,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&std::path::Path>,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.args(args).env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command.envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    // SAFETY: runs in the child between fork and exec; prctl(2) is async-signal-safe
    // and these calls touch no memory of ours.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Out of the bounding set, a capability cannot come back at exec, even for
            // root. Without CAP_SETPCAP (a host that is not root) the drop is refused,
            // and the plugin has no capabilities to begin with.
            for capability in MEMORY_READING_CAPABILITIES {
                if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 {
                    let error = std::io::Error::last_os_error();
                    if error.raw_os_error() != Some(libc::EPERM) {
                        return Err(error);
                    }
                }
            }
            if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Nor from the inheritable set, from which root regains at exec what it holds.
            drop_inheritable(&MEMORY_READING_CAPABILITIES)?;
            Ok(())
        });
    }
    command
}

/// Takes `capabilities` out of this process's inheritable set (capget and capset, raw:
/// this runs between fork and exec, where nothing may allocate).
fn drop_inheritable(capabilities: &[libc::c_ulong]) -> std::io::Result<()> {
    /// `_LINUX_CAPABILITY_VERSION_3` (linux/capability.h): two 32-bit words per set.
    const VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header { version: VERSION_3, pid: 0 };
    let mut data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capget fills `data` (two structures, as version 3 asks) for this process;
    // both pointers are valid for the call.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut Header, data.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut changed = false;
    for &capability in capabilities {
        let (word, bit) = ((capability / 32) as usize, 1u32 << (capability % 32));
        if let Some(set) = data.get_mut(word).filter(|d| d.inheritable & bit != 0) {
            set.inheritable &= !bit;
            changed = true;
        }
    }
    if !changed {
        return Ok(());
    }
    // SAFETY: capset reads the header and the two structures capget filled; only the
    // inheritable bits were cleared, which never needs a privilege.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
