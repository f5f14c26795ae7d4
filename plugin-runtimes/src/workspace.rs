//! The session's workspace files, as the host reads and writes them for a plugin
//! (`host/workspace`: seed 003's `host.workspace.read/write/list`).
//!
//! Where it sits: a plugin's call asks `host/workspace { call, op, path }`
//! ([`crate::process`] serves it next to `host/approve`, finding the call by its request
//! id); the root is the call's workspace (`CallContext.workspace`: the MCP client's
//! first `file://` root, `_meta.workspace`, or what the front end set), and this module
//! does the file work. JavaScript plugins never touch files themselves: their sandbox
//! has no file system at all.
//!
//! 1. the root is a descriptor opened once: by the front end when the request came
//!    ([`Workspace::opened`]; a remote client's root is checked against the server's
//!    roots as opened, so swapping it for a link later leads nowhere new), or here by
//!    name ([`Workspace::open`]) where the front end opened none;
//! 2. every path is resolved beneath that descriptor **by the kernel**: `openat2` with
//!    `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so `..` that climbs out, an absolute
//!    path, and a symbolic link (at any step, even one swapped in while the call runs)
//!    that leads out all fail with `EXDEV`, reported as [`WorkspaceError::Outside`]
//!    naming the root; no string checks stand in for it;
//! 3. [`Workspace::write`] creates missing folders one at a time with `mkdirat` in a
//!    folder itself opened beneath the root, then the file beneath the root;
//! 4. sizes are bounded: a file read or written is at most [`MAX_FILE_BYTES`] (the bound
//!    of a `host/fetch` body), a listing at most [`MAX_LIST_ENTRIES`] names.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

/// The largest file read or written for a plugin, in bytes.
pub const MAX_FILE_BYTES: usize = crate::net::MAX_BODY_BYTES;
/// The most names one listing returns.
pub const MAX_LIST_ENTRIES: usize = 10_000;
/// How often a resolution the kernel asks to retry (`EAGAIN`: a rename raced a `..`
/// step) is tried again before it fails.
const RETRIES: usize = 8;

/// Why a workspace operation failed. Every message names the workspace's root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    /// The call has no workspace.
    #[error("this call has no workspace: an MCP client gives one as its first file:// root (roots/list) or as _meta.workspace")]
    NoWorkspace,
    /// The root is not an absolute folder that can be opened.
    #[error("the workspace {root} cannot be opened: {why}")]
    Root {
        /// The root.
        root: String,
        /// Why.
        why: String,
    },
    /// The root's name no longer names the folder opened when the request came (it was
    /// moved, or swapped for a link or another folder while the program ran).
    #[error("the workspace {root} was replaced while the program ran (its name now leads to another folder or a link): codemode works only in the folder it opened when the request came, and reads and writes nothing through the new one; send the request again to work in what {root} names now")]
    Replaced {
        /// The root.
        root: String,
    },
    /// The path leads out of the root (`EXDEV` from `openat2` with `RESOLVE_BENEATH`).
    #[error("the path {path:?} leaves the workspace {root} (EXDEV): paths are resolved beneath it, so \"..\" out of it, an absolute path, or a symbolic link that leads out is refused")]
    Outside {
        /// The path asked for.
        path: String,
        /// The root.
        root: String,
    },
    /// Nothing is at the path.
    #[error("{path:?} does not exist in the workspace {root}")]
    NotFound {
        /// The path asked for.
        path: String,
        /// The root.
        root: String,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("{path:?} in the workspace {root} is larger than {max} bytes")]
    TooLarge {
        /// The path asked for.
        path: String,
        /// The root.
        root: String,
        /// The bound.
        max: usize,
    },
    /// The file's bytes are not UTF-8 text.
    #[error("{path:?} in the workspace {root} is not UTF-8 text")]
    NotText {
        /// The path asked for.
        path: String,
        /// The root.
        root: String,
    },
    /// Not a regular file (a folder, a device, a pipe).
    #[error("{path:?} in the workspace {root} is not a regular file")]
    NotAFile {
        /// The path asked for.
        path: String,
        /// The root.
        root: String,
    },
    /// Any other failure of the system call.
    #[error("{op} {path:?} in the workspace {root} failed: {errno}")]
    Io {
        /// `read`, `write` or `list`.
        op: &'static str,
        /// The path asked for.
        path: String,
        /// The root.
        root: String,
        /// What the kernel said.
        errno: Errno,
    },
}

/// One name in a listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// The name within the folder.
    pub name: String,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: &'static str,
}

/// An open workspace root.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    dir: OwnedFd,
}

impl Workspace {
    /// Opens `root` (an absolute folder).
    pub fn open(root: &Path) -> Result<Self, WorkspaceError> {
        let shown = root.display().to_string();
        if !root.is_absolute() {
            return Err(WorkspaceError::Root { root: shown, why: "it is not an absolute path".into() });
        }
        let dir = nix::fcntl::open(root, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
            .map_err(|errno| WorkspaceError::Root { root: shown, why: errno.desc().to_string() })?;
        Ok(Self { root: root.to_path_buf(), dir })
    }

    /// The workspace `root` that the front end opened when the request came (`dir`):
    /// paths resolve beneath that folder, whatever `root` names by now.
    pub fn opened(root: &Path, dir: std::os::fd::BorrowedFd<'_>) -> Result<Self, WorkspaceError> {
        let dir = dir.try_clone_to_owned().map_err(|e| WorkspaceError::Root {
            root: root.display().to_string(),
            why: format!("its descriptor cannot be shared: {e}"),
        })?;
        // Whatever the name leads to now must be the folder opened then: a swap is
        // refused rather than served from either folder.
        let same = match (nix::sys::stat::stat(root), nix::sys::stat::fstat(&dir)) {
            (Ok(now), Ok(then)) => now.st_dev == then.st_dev && now.st_ino == then.st_ino,
            _ => false,
        };
        if !same {
            return Err(WorkspaceError::Replaced { root: root.display().to_string() });
        }
        Ok(Self { root: root.to_path_buf(), dir })
    }

    /// The root, as the messages show it.
    pub fn root(&self) -> String {
        self.root.display().to_string()
    }

    /// Opens `path` beneath the root: the kernel refuses any step that leaves it.
    fn beneath(&self, path: &str, flags: OFlag, mode: Mode) -> Result<OwnedFd, Errno> {
        // An empty path names the root itself.
        let path = if path.is_empty() { "." } else { path };
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .mode(mode)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        let mut tries = 0;
        loop {
            match nix::fcntl::openat2(self.dir.as_fd(), path, how) {
                Err(Errno::EAGAIN | Errno::EINTR) if tries < RETRIES => tries += 1,
                other => return other,
            }
        }
    }

    fn error(&self, op: &'static str, path: &str, errno: Errno) -> WorkspaceError {
        let (path, root) = (path.to_string(), self.root());
        match errno {
            Errno::EXDEV => WorkspaceError::Outside { path, root },
            Errno::ENOENT => WorkspaceError::NotFound { path, root },
            errno => WorkspaceError::Io { op, path, root, errno },
        }
    }

    /// The text of the file at `path`.
    pub fn read(&self, path: &str) -> Result<String, WorkspaceError> {
        let fd = self
            .beneath(path, OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY, Mode::empty())
            .map_err(|e| self.error("read", path, e))?;
        self.regular(&fd, path).map_err(|e| self.error("read", path, e))??;
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(MAX_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.error("read", path, io_errno(&e)))?;
        if bytes.len() > MAX_FILE_BYTES {
            return Err(WorkspaceError::TooLarge { path: path.into(), root: self.root(), max: MAX_FILE_BYTES });
        }
        String::from_utf8(bytes).map_err(|_| WorkspaceError::NotText { path: path.into(), root: self.root() })
    }

    /// `Ok(Err(NotAFile))` when `fd` is not a regular file.
    fn regular(&self, fd: &OwnedFd, path: &str) -> Result<Result<(), WorkspaceError>, Errno> {
        let stat = nix::sys::stat::fstat(fd)?;
        let is_file = nix::sys::stat::SFlag::from_bits_truncate(stat.st_mode) & nix::sys::stat::SFlag::S_IFMT
            == nix::sys::stat::SFlag::S_IFREG;
        Ok(if is_file { Ok(()) } else { Err(WorkspaceError::NotAFile { path: path.into(), root: self.root() }) })
    }

    /// Writes `content` to the file at `path` (created, or replaced), creating missing
    /// folders on the way; returns the number of bytes written.
    pub fn write(&self, path: &str, content: &[u8]) -> Result<usize, WorkspaceError> {
        if content.len() > MAX_FILE_BYTES {
            return Err(WorkspaceError::TooLarge { path: path.into(), root: self.root(), max: MAX_FILE_BYTES });
        }
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.make_folders(parent).map_err(|e| self.error("write", path, e))?;
        }
        let fd = self
            .beneath(
                path,
                OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
                Mode::from_bits_truncate(0o644),
            )
            .map_err(|e| self.error("write", path, e))?;
        self.regular(&fd, path).map_err(|e| self.error("write", path, e))??;
        let mut file = std::fs::File::from(fd);
        file.set_len(0).map_err(|e| self.error("write", path, io_errno(&e)))?;
        file.write_all(content).map_err(|e| self.error("write", path, io_errno(&e)))?;
        Ok(content.len())
    }

    /// Creates each missing folder of `folders` (`a/b/c`), each in its parent as opened
    /// beneath the root.
    fn make_folders(&self, folders: &str) -> Result<(), Errno> {
        let mut prefix = String::new();
        for part in folders.split('/') {
            let parent = if prefix.is_empty() { ".".to_string() } else { prefix.clone() };
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if part.is_empty() || part == "." || part == ".." {
                continue;
            }
            match self.beneath(&prefix, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty()) {
                Ok(_) => continue,
                Err(Errno::ENOENT) => {}
                Err(e) => return Err(e),
            }
            let parent = self.beneath(&parent, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty())?;
            match nix::sys::stat::mkdirat(parent.as_fd(), part, Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The names in the folder at `path` (`""` or `"."`: the root), sorted.
    pub fn list(&self, path: &str) -> Result<Vec<Entry>, WorkspaceError> {
        let fd = self
            .beneath(path, OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty())
            .map_err(|e| self.error("list", path, e))?;
        let mut dir = nix::dir::Dir::from_fd(fd).map_err(|e| self.error("list", path, e))?;
        let mut entries = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(|e| self.error("list", path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            if entries.len() == MAX_LIST_ENTRIES {
                break;
            }
            let kind = match entry.file_type() {
                Some(nix::dir::Type::File) => "file",
                Some(nix::dir::Type::Directory) => "dir",
                Some(nix::dir::Type::Symlink) => "symlink",
                _ => "other",
            };
            entries.push(Entry { name, kind });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}

fn io_errno(e: &std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_raw)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A fresh folder holding `root/` (the workspace) and `outside/secret.txt`.
    fn setup(name: &str) -> (PathBuf, Workspace) {
        let base = std::env::temp_dir().join(format!("codemode-ws-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret.txt"), "secret").unwrap();
        let ws = Workspace::open(&base.join("root")).unwrap();
        (base, ws)
    }

    fn outside(path: &str, ws: &Workspace) -> WorkspaceError {
        WorkspaceError::Outside { path: path.into(), root: ws.root() }
    }

    #[test]
    fn a_root_opened_once_and_then_swapped_for_a_link_is_refused_and_nothing_outside_is_touched() {
        let (base, _) = setup("swap");
        let root = base.join("root");
        std::fs::write(root.join("who.txt"), "inside").unwrap();
        let opened =
            nix::fcntl::open(&root, OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty()).unwrap();
        assert_eq!(Workspace::opened(&root, opened.as_fd()).unwrap().read("who.txt").unwrap(), "inside");
        // The folder moves away and its name becomes a link to outside the roots.
        std::fs::rename(&root, base.join("moved")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), &root).unwrap();
        let replaced = WorkspaceError::Replaced { root: root.display().to_string() };
        assert_eq!(Workspace::opened(&root, opened.as_fd()).unwrap_err(), replaced);
        std::fs::remove_file(&root).unwrap();
        assert_eq!(Workspace::opened(&root, opened.as_fd()).unwrap_err(), replaced, "nothing at the name");
        assert_eq!(std::fs::read_dir(base.join("outside")).unwrap().count(), 1, "nothing was created outside");
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn writes_reads_and_lists_beneath_the_root() {
        let (base, ws) = setup("rw");
        assert_eq!(ws.write("notes/a-b/x.md", b"hello").unwrap(), 5);
        assert_eq!(std::fs::read_to_string(base.join("root/notes/a-b/x.md")).unwrap(), "hello");
        assert_eq!(ws.read("notes/a-b/x.md").unwrap(), "hello");
        ws.write("notes/a-b/x.md", b"hi").unwrap();
        assert_eq!(ws.read("notes/a-b/x.md").unwrap(), "hi", "a write replaces the whole file");
        assert_eq!(ws.list("notes").unwrap(), vec![Entry { name: "a-b".into(), kind: "dir" }]);
        assert_eq!(ws.list("").unwrap(), vec![Entry { name: "notes".into(), kind: "dir" }]);
        // `..` that stays inside is fine.
        assert_eq!(ws.read("notes/../notes/a-b/x.md").unwrap(), "hi");
        assert_eq!(
            ws.read("notes/none.md").unwrap_err().to_string(),
            format!("\"notes/none.md\" does not exist in the workspace {}", ws.root())
        );
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn dot_dot_out_of_the_root_is_refused_with_exdev() {
        let (base, ws) = setup("dotdot");
        assert_eq!(ws.read("../outside/secret.txt").unwrap_err(), outside("../outside/secret.txt", &ws));
        assert_eq!(ws.write("../outside/new.txt", b"x").unwrap_err(), outside("../outside/new.txt", &ws));
        assert_eq!(ws.write("a/../../outside/new.txt", b"x").unwrap_err(), outside("a/../../outside/new.txt", &ws));
        assert_eq!(ws.list("..").unwrap_err(), outside("..", &ws));
        assert!(!base.join("outside/new.txt").exists());
        assert_eq!(
            ws.read("../outside/secret.txt").unwrap_err().to_string(),
            format!("the path \"../outside/secret.txt\" leaves the workspace {} (EXDEV): paths are resolved beneath it, so \"..\" out of it, an absolute path, or a symbolic link that leads out is refused", ws.root())
        );
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn absolute_paths_are_refused_with_exdev() {
        let (base, ws) = setup("absolute");
        let secret = base.join("outside/secret.txt").display().to_string();
        assert_eq!(ws.read(&secret).unwrap_err(), outside(&secret, &ws));
        // Even one that names a file inside the root.
        ws.write("in.txt", b"in").unwrap();
        let inside = base.join("root/in.txt").display().to_string();
        assert_eq!(ws.read(&inside).unwrap_err(), outside(&inside, &ws));
        assert_eq!(ws.write("/tmp/codemode-ws-abs.txt", b"x").unwrap_err(), outside("/tmp/codemode-ws-abs.txt", &ws));
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn symlinks_that_lead_out_are_refused_with_exdev() {
        let (base, ws) = setup("symlink");
        std::os::unix::fs::symlink(base.join("outside"), base.join("root/link")).unwrap();
        std::os::unix::fs::symlink("../outside/secret.txt", base.join("root/file-link")).unwrap();
        std::os::unix::fs::symlink(base.join("outside/dangling.txt"), base.join("root/dangling")).unwrap();
        assert_eq!(ws.read("link/secret.txt").unwrap_err(), outside("link/secret.txt", &ws));
        assert_eq!(ws.read("file-link").unwrap_err(), outside("file-link", &ws));
        assert_eq!(ws.write("link/new.txt", b"x").unwrap_err(), outside("link/new.txt", &ws));
        assert_eq!(ws.write("link/sub/new.txt", b"x").unwrap_err(), outside("link/sub/new.txt", &ws));
        assert_eq!(ws.write("file-link", b"x").unwrap_err(), outside("file-link", &ws));
        assert_eq!(ws.write("dangling", b"x").unwrap_err(), outside("dangling", &ws));
        assert_eq!(ws.list("link").unwrap_err(), outside("link", &ws));
        assert_eq!(std::fs::read_to_string(base.join("outside/secret.txt")).unwrap(), "secret");
        assert!(!base.join("outside/new.txt").exists() && !base.join("outside/sub").exists());
        assert!(!base.join("outside/dangling.txt").exists());
        // A link that stays inside is followed.
        std::os::unix::fs::symlink("notes", base.join("root/alias")).unwrap();
        ws.write("notes/n.txt", b"n").unwrap();
        assert_eq!(ws.read("alias/n.txt").unwrap(), "n");
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_symlink_swapped_in_while_writing_never_leads_out() {
        // One thread keeps replacing root/swap between a folder and a link to outside/;
        // the other keeps writing and reading through it. Each operation either works
        // inside the root or is refused with EXDEV; nothing ever lands outside.
        let (base, ws) = setup("race");
        let stop = Arc::new(AtomicBool::new(false));
        let flipper = {
            let (stop, root, out) = (Arc::clone(&stop), base.join("root"), base.join("outside"));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::fs::create_dir(root.join("swap-dir"));
                    let _ = std::fs::rename(root.join("swap-dir"), root.join("swap"));
                    let _ = std::fs::remove_dir_all(root.join("swap"));
                    let _ = std::os::unix::fs::symlink(&out, root.join("swap-link"));
                    let _ = std::fs::rename(root.join("swap-link"), root.join("swap"));
                    let _ = std::fs::remove_file(root.join("swap"));
                }
            })
        };
        let (mut inside, mut refused) = (0, 0);
        for _ in 0..3000 {
            match ws.write("swap/raced.txt", b"x") {
                Ok(_) => inside += 1,
                Err(WorkspaceError::Outside { .. }) => refused += 1,
                Err(_) => {} // the folder vanished between steps
            }
            match ws.read("swap/secret.txt") {
                Ok(text) => panic!("read {text:?} through a link that leads out"),
                Err(WorkspaceError::Outside { .. }) => refused += 1,
                Err(_) => {}
            }
        }
        stop.store(true, Ordering::Relaxed);
        flipper.join().unwrap();
        assert!(!base.join("outside/raced.txt").exists(), "a write landed outside the root");
        assert_eq!(std::fs::read_to_string(base.join("outside/secret.txt")).unwrap(), "secret");
        assert!(refused > 0, "the race never showed the link ({inside} writes went inside)");
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_root_that_is_not_absolute_is_refused() {
        assert_eq!(
            Workspace::open(Path::new("rel/dir")).unwrap_err().to_string(),
            "the workspace rel/dir cannot be opened: it is not an absolute path"
        );
    }
}
