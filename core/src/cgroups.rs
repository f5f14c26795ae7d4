//! A cgroup around the whole worker pool: a memory and a pids ceiling shared by the
//! template and every worker it forks.
//!
//! Per-program memory is bounded by the engine's heap limit and `RLIMIT_DATA`; the pool
//! cgroup is the backstop behind both, and caps how many processes the pool may hold
//! (behind seccomp, which lets no worker create one). It costs nothing per program:
//! workers inherit the template's cgroup when it forks them. The host creates it when it
//! can (cgroup v2, or the v1 `memory` and `pids` hierarchies, writable: usually as
//! root); [`PoolCgroup::create`] says why when it cannot, and the report shows it.

use std::path::{Path, PathBuf};

/// Where the cgroup filesystem is mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The pool's cgroup directories, removed when dropped (once empty).
#[derive(Debug)]
pub struct PoolCgroup {
    dirs: Vec<PathBuf>,
    /// "v2" or "v1".
    pub version: &'static str,
}

/// The ceilings of the pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolLimits {
    /// Memory of the template and all its workers, in bytes.
    pub memory_bytes: u64,
    /// Processes and threads of the template and all its workers.
    pub pids: u64,
}

impl PoolCgroup {
    /// Creates the pool cgroup named `name`, or says why it cannot.
    pub fn create(name: &str, limits: PoolLimits) -> Result<Self, String> {
        let root = Path::new(CGROUP_ROOT);
        remove_stale(root);
        if root.join("cgroup.controllers").exists() {
            let dir = root.join(name);
            let controllers = std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
            if !(controllers.contains("memory") && controllers.contains("pids")) {
                return Err(
                    "cgroup v2 is mounted but the memory and pids controllers are not enabled for child groups".into(),
                );
            }
            make(&dir)?;
            let group = Self { dirs: vec![dir.clone()], version: "v2" };
            write(&dir.join("memory.max"), limits.memory_bytes)?;
            write(&dir.join("pids.max"), limits.pids)?;
            return Ok(group);
        }
        let (memory, pids) = (root.join("memory"), root.join("pids"));
        if !(memory.join("cgroup.procs").exists() && pids.join("cgroup.procs").exists()) {
            return Err("neither cgroup v2 nor the v1 memory and pids hierarchies are mounted".into());
        }
        let (mem_dir, pids_dir) = (memory.join(name), pids.join(name));
        make(&mem_dir)?;
        let mut group = Self { dirs: vec![mem_dir.clone()], version: "v1" };
        make(&pids_dir)?;
        group.dirs.push(pids_dir.clone());
        write(&mem_dir.join("memory.limit_in_bytes"), limits.memory_bytes)?;
        write(&pids_dir.join("pids.max"), limits.pids)?;
        Ok(group)
    }

    /// Moves a process (and what it forks from now on) into the pool.
    pub fn add(&self, pid: i32) -> Result<(), String> {
        for dir in &self.dirs {
            write(&dir.join("cgroup.procs"), pid)?;
        }
        Ok(())
    }

    /// The directories, for reports.
    pub fn paths(&self) -> &[PathBuf] {
        &self.dirs
    }
}

/// Removes pool cgroups of hosts that are gone (`codemode-<pid>` whose pid is not alive).
fn remove_stale(root: &Path) {
    for hierarchy in [root.to_path_buf(), root.join("memory"), root.join("pids")] {
        let Ok(entries) = std::fs::read_dir(&hierarchy) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("codemode-").and_then(|p| p.parse::<i32>().ok()) else { continue };
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}

fn make(dir: &Path) -> Result<(), String> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("cannot create {}: {e}", dir.display())),
    }
}

fn write(path: &Path, value: impl std::fmt::Display) -> Result<(), String> {
    std::fs::write(path, value.to_string()).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

impl Drop for PoolCgroup {
    fn drop(&mut self) {
        for dir in &self.dirs {
            // Fails while processes remain. They were all killed when the executor was
            // dropped, but a worker reaped in the background may still be exiting: give
            // it a moment (what is left over is removed by the next host's `remove_stale`).
            for _ in 0..200 {
                match std::fs::remove_dir(dir) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(std::time::Duration::from_millis(1))
                    }
                    _ => break,
                }
            }
        }
    }
}
