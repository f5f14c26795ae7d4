//! 2. A plugin process's standard error: forwarded to codemode's log a line at a time,
//!    its last lines kept ([`StderrTail`]) for the reason the plugin is unavailable.
//!
//! Process plugins and MCP servers started as a command both drain their child's stderr
//! here ([`drain_stderr`]), so a failing plugin's last words read the same in either.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures::StreamExt;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

/// Lines of a plugin's standard error kept for the reason it is unavailable.
const STDERR_TAIL_LINES: usize = 8;
/// What introduces a plugin's last stderr lines in a reason.
const STDERR_MARKER: &str = "its last lines on stderr:";
/// Longest stderr line kept, in characters.
const STDERR_TAIL_CHARS: usize = 300;

/// The last lines a plugin wrote on standard error, for the reason it is unavailable.
#[derive(Clone)]
pub struct StderrTail {
    lines: Arc<StdMutex<std::collections::VecDeque<String>>>,
    /// Readers of a process's stderr still running (see [`StderrTail::settle`]).
    open: Arc<tokio::sync::watch::Sender<usize>>,
}

impl Default for StderrTail {
    fn default() -> Self {
        Self { lines: Arc::default(), open: Arc::new(tokio::sync::watch::channel(0).0) }
    }
}

impl StderrTail {
    /// Waits (at most `limit`) until every process's stderr was read to its end, so a
    /// reason can quote what a plugin said on its way out.
    pub async fn settle(&self, limit: Duration) {
        let mut open = self.open.subscribe();
        let _ = tokio::time::timeout(limit, open.wait_for(|n| *n == 0)).await;
    }

    /// Keeps `line` (cut), dropping the oldest beyond [`STDERR_TAIL_LINES`].
    pub fn push(&self, line: &str) {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        let mut kept: String = line.chars().take(STDERR_TAIL_CHARS).collect();
        if kept.len() < line.len() {
            kept.push('…');
        }
        lines.push_back(kept);
    }

    /// `reason`, followed by the kept lines when there are any.
    pub fn explain(&self, reason: impl std::fmt::Display) -> String {
        let reason = reason.to_string();
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.is_empty() || reason.contains(STDERR_MARKER) {
            return reason;
        }
        let shown: Vec<String> = lines.iter().map(|l| format!("  | {l}")).collect();
        format!("{reason}\n{STDERR_MARKER}\n{}", shown.join("\n"))
    }
}

/// Forwards the plugin's stderr to the host's log, a line at a time, keeping the last
/// lines in `tail`, on a task of its own; the reader counts as open in `tail` from now
/// until it reaches the end.
pub fn drain_stderr<R: tokio::io::AsyncRead + Unpin + Send + 'static>(name: String, stderr: R, tail: StderrTail) {
    /// Counts the reader out however it ends.
    struct Closed(Arc<tokio::sync::watch::Sender<usize>>);
    impl Drop for Closed {
        fn drop(&mut self) {
            self.0.send_modify(|n| *n = n.saturating_sub(1));
        }
    }
    tail.open.send_modify(|n| *n += 1);
    let closed = Closed(Arc::clone(&tail.open));
    tokio::spawn(async move {
        let _closed = closed;
        let mut lines = FramedRead::new(stderr, LinesCodec::new_with_max_length(64 * 1024));
        while let Some(line) = lines.next().await {
            match line {
                Ok(line) => {
                    tail.push(&line);
                    tracing::info!(plugin = %name, "{line}");
                }
                // Keep draining: a plugin blocked on a full stderr pipe would hang.
                Err(LinesCodecError::MaxLineLengthExceeded) => continue,
                Err(_) => break,
            }
        }
    });
}
