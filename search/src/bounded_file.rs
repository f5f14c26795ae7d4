//! Reading a file the host was not given by its user at the moment it reads it (the
//! search model's files, the embeddings cache) so that whatever lies at that path
//! cannot hurt the host: no link is followed, nothing but a regular file is read, and
//! never more than the caller's bound.
//!
//! Its place in the flow: [`crate::encoder`] reads the model's weights, tokenizer and
//! checksums with [`read`], and [`crate::semantic`] the embeddings cache; both at
//! start-up, off the listener's path (`codemode serve` answers `/healthz` meanwhile).
//!
//! The steps of [`read`], each closing one attack that reached the host before (issue
//! 33: a cache linked to `/dev/zero` grew the host by 1.5 GiB in seconds; a FIFO in its
//! place kept `codemode run` waiting forever and `codemode serve` from listening):
//! 1. open with `O_NOFOLLOW` (a link in the file's own place is refused, `ELOOP`; the
//!    folders above it may be links, as an installed model's folder may be),
//!    `O_NONBLOCK` (opening a FIFO or a device never waits for a writer) and
//!    `O_CLOEXEC` (no worker inherits it);
//! 2. `fstat` the open file (not the path: nothing can be swapped in between) and
//!    refuse anything but a regular file: a FIFO, a socket, a device, a folder;
//! 3. refuse a file larger than the caller's bound before reading a byte (a sparse
//!    8 GiB file costs nothing to make);
//! 4. read through `Read::take(bound + 1)`, so a file that grows while it is read (or
//!    one whose size `fstat` misreports, as `/proc`'s do) still stops at the bound.
//!
//! Each caller chooses its bound with its reason beside it
//! ([`crate::encoder::WEIGHTS_BOUND`] and the others; the cache's follows the catalog:
//! [`crate::semantic`]). Measured with the release build on this 2-core machine
//! (`CODEMODE_LOG=info codemode run`, "search model ... loaded in"): reading the packed
//! weights (24,061,480 bytes) this way and checking their SHA-256 takes the model's
//! load from 66–76 ms to 100–105 ms; the host's peak RSS is unchanged (60 MiB with
//! the model and the cache, 19–42 MiB when the weights are refused:
//! `host/tests/model_files.rs`).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// There is no file there.
    #[error("{path} does not exist")]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A symbolic link stands in the file's place.
    #[error("{path} is a symbolic link, which codemode does not follow here: put the file itself there")]
    Link {
        /// The file.
        path: PathBuf,
    },
    /// Something other than a regular file stands there.
    #[error("{path} is {kind}, not a regular file: put the file itself there")]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is ("a FIFO", "a folder", ...).
        kind: &'static str,
    },
    /// The file is larger than it may be.
    #[error("{path} holds {size} bytes, more than the {bound} such a file may hold: replace it")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size (as `fstat` says, or at least what was read).
        size: u64,
        /// The bound.
        bound: u64,
    },
    /// Opening or reading failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl FileError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            FileError::Missing { path }
            | FileError::Link { path }
            | FileError::NotRegular { path, .. }
            | FileError::TooLarge { path, .. }
            | FileError::Io { path, .. } => path,
        }
    }
}

/// The whole of `path`, at most `bound` bytes, read as the module docs say.
pub fn read(path: &Path, bound: u64) -> Result<Vec<u8>, FileError> {
    let file = open_regular(path, OpenFor::Reading)?;
    let io = |source| FileError::Io { path: path.to_path_buf(), source };
    let size = file.metadata().map_err(io)?.len();
    if size > bound {
        return Err(FileError::TooLarge { path: path.to_path_buf(), size, bound });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(bound.saturating_add(1)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > bound {
        return Err(FileError::TooLarge { path: path.to_path_buf(), size: bytes.len() as u64, bound });
    }
    Ok(bytes)
}

/// What a file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFor {
    /// Reading it whole ([`read`]).
    Reading,
    /// Appending to it (an existing regular file only: never created, never a FIFO,
    /// whose opening for writing would wait for a reader without `O_NONBLOCK`).
    Appending,
}

/// `path` opened with `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`, when it is a regular
/// file (steps 1 and 2 of the module docs). `O_NONBLOCK` stays set: on a regular
/// file it changes nothing.
pub fn open_regular(path: &Path, purpose: OpenFor) -> Result<File, FileError> {
    let mut options = std::fs::OpenOptions::new();
    match purpose {
        OpenFor::Reading => options.read(true),
        OpenFor::Appending => options.append(true),
    };
    let file =
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).open(path).map_err(|source| {
            match source.raw_os_error() {
                Some(libc::ELOOP) => FileError::Link { path: path.to_path_buf() },
                // A FIFO opened for writing with no reader.
                Some(libc::ENXIO) => FileError::NotRegular { path: path.to_path_buf(), kind: "a FIFO" },
                Some(libc::EISDIR) => FileError::NotRegular { path: path.to_path_buf(), kind: "a folder" },
                _ if source.kind() == std::io::ErrorKind::NotFound => FileError::Missing { path: path.to_path_buf() },
                _ => FileError::Io { path: path.to_path_buf(), source },
            }
        })?;
    let kind = file.metadata().map_err(|source| FileError::Io { path: path.to_path_buf(), source })?.file_type();
    if !kind.is_file() {
        let kind = if kind.is_dir() {
            "a folder"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else {
            "not a file"
        };
        return Err(FileError::NotRegular { path: path.to_path_buf(), kind });
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder for one test.
    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("codemode-bounded-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_regular_file_within_its_bound_is_read_whole() {
        let dir = folder("regular");
        let file = dir.join("f");
        std::fs::write(&file, b"twelve bytes").unwrap();
        assert_eq!(read(&file, 12).unwrap(), b"twelve bytes");
        let refused = read(&file, 11).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("{} holds 12 bytes, more than the 11 such a file may hold: replace it", file.display())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_link_is_not_followed_even_to_a_good_file() {
        let dir = folder("link");
        std::fs::write(dir.join("real"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
        for name in ["link", "zero"] {
            let path = dir.join(name);
            let refused = read(&path, 1 << 20).unwrap_err();
            assert_eq!(
                refused.to_string(),
                format!(
                    "{} is a symbolic link, which codemode does not follow here: put the file itself there",
                    path.display()
                )
            );
            assert!(matches!(open_regular(&path, OpenFor::Appending), Err(FileError::Link { .. })));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_fifo_is_refused_at_once_for_reading_and_for_appending() {
        let dir = folder("fifo");
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // Without O_NONBLOCK either would wait for the other end forever.
        let refused = read(&fifo, 1 << 20).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("{} is a FIFO, not a regular file: put the file itself there", fifo.display())
        );
        assert!(matches!(open_regular(&fifo, OpenFor::Appending), Err(FileError::NotRegular { kind: "a FIFO", .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_device_and_a_folder_are_refused() {
        let refused = read(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "/dev/zero is a character device, not a regular file: put the file itself there"
        );
        let dir = folder("dir");
        let refused = read(&dir, 1 << 20).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("{} is a folder, not a regular file: put the file itself there", dir.display())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_sparse_huge_file_is_refused_before_a_byte_is_read() {
        let dir = folder("sparse");
        let file = dir.join("sparse");
        std::fs::File::create(&file).unwrap().set_len(8 << 30).unwrap();
        let refused = read(&file, 64 << 20).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!(
                "{} holds 8589934592 bytes, more than the 67108864 such a file may hold: replace it",
                file.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_file_says_so() {
        let path = Path::new("/nonexistent/codemode/file");
        assert!(matches!(read(path, 1), Err(FileError::Missing { .. })));
        assert!(matches!(open_regular(path, OpenFor::Appending), Err(FileError::Missing { .. })));
    }
}
