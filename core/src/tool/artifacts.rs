//! What tools keep for the session they run in (plico's `ctx.artifacts`): files a tool
//! writes for the agent rather than into its workspace.
//!
//! Where it sits in the flow:
//!
//! 1. the front end owns one [`Artifacts`] per session (the MCP server: per MCP session,
//!    or per program for a 2026-07-28 client, which has none) and hands it to every
//!    call through [`crate::dispatch::CallHooks::artifacts`], which puts it in the
//!    call's [`super::CallContext`];
//! 2. a plugin's call writes, reads and lists through the host
//!    (`host/artifacts`, served by the plugin runtime with this store);
//! 3. after the program, the front end gives the agent what was written during it
//!    ([`Artifacts::written_since`]) as MCP resources (`artifact://<session>/<path>`,
//!    read back with `resources/read` while the session lasts), with their media types.
//!
//! The store is bounded: [`MAX_ARTIFACT_BYTES`] per artifact, [`MAX_SESSION_BYTES`] and
//! [`MAX_ARTIFACTS`] per session, and for all the sessions of the process together
//! [`MAX_SERVER_BYTES`] and [`MAX_SERVER_ARTIFACTS`] ([`ServerArtifacts`]); a session's
//! artifacts are freed, and given back to the server's bound, with the session.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The largest artifact, in bytes (what a `host/fetch` body may be).
pub const MAX_ARTIFACT_BYTES: usize = 8 * 1024 * 1024;
/// The most all of a session's artifacts may hold, in bytes.
pub const MAX_SESSION_BYTES: usize = 32 * 1024 * 1024;
/// The most artifacts a session keeps.
pub const MAX_ARTIFACTS: usize = 256;
/// The most the artifacts of all sessions together may hold, in bytes.
pub const MAX_SERVER_BYTES: usize = 256 * 1024 * 1024;
/// The most artifacts all sessions together keep.
pub const MAX_SERVER_ARTIFACTS: usize = 4096;
/// The longest artifact path, in bytes.
pub const MAX_PATH_BYTES: usize = 256;
/// The URI scheme the agent reads artifacts under.
pub const SCHEME: &str = "artifact";

/// Why an artifact could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    /// The path is not a plain relative name.
    #[error("the artifact path {0:?} must be 1 to 256 bytes of letters, digits, '.', '_', '-' and '/' between names (no leading '/', no '.' or '..' names)")]
    BadPath(String),
    /// The content is larger than [`MAX_ARTIFACT_BYTES`].
    #[error("the artifact {path:?} holds {size} bytes; an artifact holds at most {max}")]
    TooLarge {
        /// Its path.
        path: String,
        /// Its size.
        size: usize,
        /// The bound.
        max: usize,
    },
    /// The session's artifacts would grow past [`MAX_SESSION_BYTES`] or [`MAX_ARTIFACTS`].
    #[error("the session's artifacts are full ({count} artifacts, {bytes} bytes; at most {max_count} and {max_bytes} bytes): the artifact {path:?} was not kept")]
    Full {
        /// The artifact refused.
        path: String,
        /// How many the session holds.
        count: usize,
        /// How many bytes they hold.
        bytes: usize,
        /// [`MAX_ARTIFACTS`].
        max_count: usize,
        /// [`MAX_SESSION_BYTES`].
        max_bytes: usize,
    },
    /// All sessions' artifacts together would grow past [`MAX_SERVER_BYTES`] or
    /// [`MAX_SERVER_ARTIFACTS`].
    #[error("the server's artifacts are full ({count} artifacts, {bytes} bytes held for all its sessions; at most {max_count} and {max_bytes} bytes): the artifact {path:?} was not kept; sessions that end free theirs, so try again later or write less")]
    ServerFull {
        /// The artifact refused.
        path: String,
        /// How many all sessions hold.
        count: usize,
        /// How many bytes they hold.
        bytes: usize,
        /// [`MAX_SERVER_ARTIFACTS`].
        max_count: usize,
        /// [`MAX_SERVER_BYTES`].
        max_bytes: usize,
    },
    /// No artifact has the path.
    #[error("this session has no artifact {0:?}")]
    NotFound(String),
}

/// One artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// Its path.
    pub path: String,
    /// The resource the agent reads it as.
    pub uri: String,
    /// Its media type.
    pub mime_type: String,
    /// Its bytes (shared, not copied, by every reader; made from the written vector
    /// without a copy).
    pub bytes: bytes::Bytes,
    /// It was written as text (its bytes are UTF-8).
    pub is_text: bool,
    /// When it was written, in the session's order of writes.
    written: u64,
}

/// What the artifacts of all sessions hold together, against [`MAX_SERVER_BYTES`] and
/// [`MAX_SERVER_ARTIFACTS`] (or the bounds it was made with): each session's store
/// takes its share when it writes and gives it back when it is dropped.
#[derive(Debug)]
pub struct ServerArtifacts {
    held: Mutex<(usize, usize)>,
    max_count: usize,
    max_bytes: usize,
}

impl ServerArtifacts {
    /// A bound of `max_count` artifacts and `max_bytes` bytes.
    pub fn new(max_count: usize, max_bytes: usize) -> Self {
        Self { held: Mutex::new((0, 0)), max_count, max_bytes }
    }

    /// The process's one bound, shared by every session's store.
    pub fn process() -> Arc<Self> {
        static PROCESS: std::sync::LazyLock<Arc<ServerArtifacts>> =
            std::sync::LazyLock::new(|| Arc::new(ServerArtifacts::new(MAX_SERVER_ARTIFACTS, MAX_SERVER_BYTES)));
        Arc::clone(&PROCESS)
    }

    /// What all sessions hold now: (artifacts, bytes).
    pub fn held(&self) -> (usize, usize) {
        *self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes `count` more artifacts and `bytes` more bytes (either may be negative
    /// through `freed_*`), or says it is full.
    fn take(&self, path: &str, count: usize, bytes: usize, freed_bytes: usize) -> Result<(), ArtifactError> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let (held_count, held_bytes) = *held;
        let after = held_bytes.saturating_sub(freed_bytes) + bytes;
        if held_count + count > self.max_count || (bytes > freed_bytes && after > self.max_bytes) {
            return Err(ArtifactError::ServerFull {
                path: path.into(),
                count: held_count,
                bytes: held_bytes,
                max_count: self.max_count,
                max_bytes: self.max_bytes,
            });
        }
        *held = (held_count + count, after);
        Ok(())
    }

    /// Gives back what a dropped store held.
    fn give_back(&self, count: usize, bytes: usize) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        *held = (held.0.saturating_sub(count), held.1.saturating_sub(bytes));
    }
}

/// A session's artifacts.
#[derive(Debug)]
pub struct Artifacts {
    /// Names the session in its artifacts' URIs.
    session: u64,
    kept: Mutex<BTreeMap<String, Artifact>>,
    writes: AtomicU64,
    /// The bound of all sessions together.
    server: Arc<ServerArtifacts>,
}

impl Default for Artifacts {
    fn default() -> Self {
        Self::within(ServerArtifacts::process())
    }
}

impl Drop for Artifacts {
    fn drop(&mut self) {
        let kept = self.kept.get_mut().unwrap_or_else(|p| p.into_inner());
        self.server.give_back(kept.len(), kept.values().map(|a| a.bytes.len()).sum());
    }
}

impl Artifacts {
    /// An empty store counted against `server`.
    pub fn within(server: Arc<ServerArtifacts>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self {
            session: NEXT.fetch_add(1, Ordering::Relaxed),
            kept: Mutex::default(),
            writes: AtomicU64::new(0),
            server,
        }
    }

    /// The URI of the artifact at `path` in this session.
    pub fn uri(&self, path: &str) -> String {
        format!("{SCHEME}://s{}/{path}", self.session)
    }

    /// Keeps `bytes` at `path` (replacing what was there) with its media type
    /// (`text/plain` for text, `application/octet-stream` for bytes when none is given).
    pub fn write(
        &self,
        path: &str,
        bytes: Vec<u8>,
        is_text: bool,
        mime_type: Option<String>,
    ) -> Result<Artifact, ArtifactError> {
        check_path(path)?;
        if bytes.len() > MAX_ARTIFACT_BYTES {
            return Err(ArtifactError::TooLarge { path: path.into(), size: bytes.len(), max: MAX_ARTIFACT_BYTES });
        }
        let mime_type = mime_type
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| if is_text { "text/plain" } else { "application/octet-stream" }.to_string());
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let replaced = kept.get(path).map_or(0, |a| a.bytes.len());
        let held: usize = kept.values().map(|a| a.bytes.len()).sum();
        let count = kept.len() + usize::from(!kept.contains_key(path));
        if count > MAX_ARTIFACTS || held - replaced + bytes.len() > MAX_SESSION_BYTES {
            return Err(ArtifactError::Full {
                path: path.into(),
                count: kept.len(),
                bytes: held,
                max_count: MAX_ARTIFACTS,
                max_bytes: MAX_SESSION_BYTES,
            });
        }
        let replacing = kept.contains_key(path);
        self.server.take(path, usize::from(!replacing), bytes.len(), replaced)?;
        let artifact = Artifact {
            path: path.into(),
            uri: self.uri(path),
            mime_type,
            bytes: bytes.into(),
            is_text,
            written: self.writes.fetch_add(1, Ordering::AcqRel) + 1,
        };
        kept.insert(path.into(), artifact.clone());
        Ok(artifact)
    }

    /// The artifact at `path`.
    pub fn read(&self, path: &str) -> Result<Artifact, ArtifactError> {
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .cloned()
            .ok_or_else(|| ArtifactError::NotFound(path.into()))
    }

    /// The artifact a URI of this session names.
    pub fn by_uri(&self, uri: &str) -> Option<Artifact> {
        let path = uri.strip_prefix(&format!("{SCHEME}://s{}/", self.session))?;
        self.read(path).ok()
    }

    /// Every artifact, by path.
    pub fn list(&self) -> Vec<Artifact> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// A mark for [`Artifacts::written_since`]: the writes so far.
    pub fn mark(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// The artifacts written (and still held as written) after `mark`, in the order
    /// they were written.
    pub fn written_since(&self, mark: u64) -> Vec<Artifact> {
        let mut written: Vec<Artifact> = self.list().into_iter().filter(|a| a.written > mark).collect();
        written.sort_by_key(|a| a.written);
        written
    }
}

/// A plain relative name: `report.csv`, `out/chart.png`.
fn check_path(path: &str) -> Result<(), ArtifactError> {
    let plain = |name: &str| {
        !name.is_empty()
            && name != "."
            && name != ".."
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    };
    if path.len() > MAX_PATH_BYTES || !path.split('/').all(plain) {
        return Err(ArtifactError::BadPath(path.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn kept_read_listed_and_given_since_a_mark() {
        let store = Artifacts::default();
        let first = store.write("a.txt", b"one".to_vec(), true, None).unwrap();
        assert_eq!(first.mime_type, "text/plain");
        let mark = store.mark();
        let png = store.write("out/b.png", vec![0x89, b'P'], false, Some("image/png".into())).unwrap();
        assert_eq!(store.read("out/b.png").unwrap(), png);
        assert_eq!(store.by_uri(&png.uri).unwrap(), png);
        assert_eq!(store.written_since(mark), vec![png.clone()]);
        assert_eq!(store.list().iter().map(|a| a.path.as_str()).collect::<Vec<_>>(), ["a.txt", "out/b.png"]);
        assert_eq!(store.write("b", vec![1], false, None).unwrap().mime_type, "application/octet-stream");
        assert_eq!(store.read("none").unwrap_err().to_string(), "this session has no artifact \"none\"");
        // Another session's store does not read this one's URIs.
        assert_eq!(Artifacts::default().by_uri(&png.uri), None);
    }

    #[test]
    fn paths_and_sizes_are_bounded() {
        let store = Artifacts::default();
        for bad in ["", "/etc/passwd", "../x", "a/../b", "a//b", "a b", "./a"] {
            assert_eq!(store.write(bad, vec![], true, None).unwrap_err(), ArtifactError::BadPath(bad.into()), "{bad}");
        }
        let big = vec![0; MAX_ARTIFACT_BYTES + 1];
        assert_eq!(
            store.write("big", big, false, None).unwrap_err().to_string(),
            format!(
                "the artifact \"big\" holds {} bytes; an artifact holds at most {MAX_ARTIFACT_BYTES}",
                MAX_ARTIFACT_BYTES + 1
            )
        );
        for i in 0..4 {
            store.write(&format!("f{i}"), vec![0; MAX_ARTIFACT_BYTES], false, None).unwrap();
        }
        assert!(matches!(store.write("f5", vec![0], false, None), Err(ArtifactError::Full { count: 4, .. })));
        // Replacing one keeps within the bound.
        store.write("f0", vec![1; 10], false, None).unwrap();
    }

    #[test]
    fn all_sessions_together_are_bounded_and_a_dropped_session_gives_back() {
        let server = Arc::new(ServerArtifacts::new(5, 3 * MAX_ARTIFACT_BYTES));
        let (a, b) = (Artifacts::within(Arc::clone(&server)), Artifacts::within(Arc::clone(&server)));
        a.write("one", vec![0; MAX_ARTIFACT_BYTES], false, None).unwrap();
        a.write("two", vec![0; MAX_ARTIFACT_BYTES], false, None).unwrap();
        b.write("one", vec![0; MAX_ARTIFACT_BYTES], false, None).unwrap();
        let refused = b.write("two", vec![0; 1], false, None).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("the server's artifacts are full (3 artifacts, {} bytes held for all its sessions; at most 5 and {} bytes): the artifact \"two\" was not kept; sessions that end free theirs, so try again later or write less", 3 * MAX_ARTIFACT_BYTES, 3 * MAX_ARTIFACT_BYTES)
        );
        // Replacing with less is always allowed, and frees the difference.
        b.write("one", vec![0; 10], false, None).unwrap();
        assert_eq!(server.held(), (3, 2 * MAX_ARTIFACT_BYTES + 10));
        b.write("two", vec![0; 1], false, None).unwrap();
        b.write("three", vec![0; 1], false, None).unwrap();
        assert!(matches!(b.write("four", vec![0; 1], false, None), Err(ArtifactError::ServerFull { count: 5, .. })));
        drop(a);
        assert_eq!(server.held(), (3, 12));
        b.write("four", vec![0; MAX_ARTIFACT_BYTES], false, None).unwrap();
    }
}
