//! 3. How long a plugin that keeps failing waits before it is started again: 100 ms
//!    after the first failure, doubling up to 10 s; a plugin that then ran for a minute
//!    starts over. Process plugins and MCP servers share it, through [`Restarts`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::runtime::PluginError;

/// The first restart delay after a failure; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest restart delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// A connection that lived this long resets the backoff when it ends.
pub const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// A plugin's failures, for its restart delay.
#[derive(Debug, Default)]
pub struct Backoff {
    failures: u32,
    last_failure: Option<Instant>,
}

impl Backoff {
    /// How long to wait before the next start (zero: now).
    pub fn delay(&self) -> Duration {
        match self.last_failure {
            None => Duration::ZERO,
            Some(at) => {
                let wanted = FIRST_BACKOFF.saturating_mul(1 << self.failures.min(10)).min(MAX_BACKOFF);
                wanted.saturating_sub(at.elapsed())
            }
        }
    }

    /// Records one more failure, now.
    pub fn failed(&mut self) {
        self.failures = self.failures.saturating_add(1);
        self.last_failure = Some(Instant::now());
    }

    /// Records a failure of something that ran for `lived`: a long healthy run starts
    /// the doubling over.
    pub fn failed_after(&mut self, lived: Duration) {
        if lived > HEALTHY_AFTER {
            *self = Backoff::default();
        }
        self.failed();
    }

    /// Forgets the failures (the plugin works again).
    pub fn succeeded(&mut self) {
        *self = Backoff::default();
    }
}

/// A runtime's restarts: its [`Backoff`], and the gate every start goes through.
#[derive(Debug, Default)]
pub struct Restarts {
    backoff: Mutex<Backoff>,
}

impl Restarts {
    /// How long until the plugin may be started again after a failure (zero: now).
    pub fn retry_in(&self) -> Duration {
        self.backoff.lock().map(|b| b.delay()).unwrap_or_default()
    }

    /// Before a start of `plugin`: waits out the rest of its backoff when `wait`, or
    /// refuses at once while it backs off otherwise.
    pub async fn before_start(&self, plugin: &str, wait: bool) -> Result<(), PluginError> {
        let delay = self.retry_in();
        if !delay.is_zero() {
            if !wait {
                return Err(PluginError::Start {
                    plugin: plugin.to_string(),
                    reason: format!("it failed recently and is tried again in {:.1} s", delay.as_secs_f64()),
                });
            }
            tokio::time::sleep(delay).await;
        }
        Ok(())
    }

    /// Records one more failure, now.
    pub fn failed(&self) {
        if let Ok(mut b) = self.backoff.lock() {
            b.failed();
        }
    }

    /// Records a failure of something that ran for `lived` ([`Backoff::failed_after`]).
    pub fn failed_after(&self, lived: Duration) {
        if let Ok(mut b) = self.backoff.lock() {
            b.failed_after(lived);
        }
    }

    /// Forgets the failures (the plugin works again).
    pub fn succeeded(&self) {
        if let Ok(mut b) = self.backoff.lock() {
            b.succeeded();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_and_starts_at_zero() {
        let mut b = Backoff::default();
        assert_eq!(b.delay(), Duration::ZERO);
        b.failed();
        let d = b.delay();
        assert!(d > Duration::from_millis(150) && d <= Duration::from_millis(200), "{d:?}");
        for _ in 0..30 {
            b.failed();
        }
        assert!(b.delay() <= MAX_BACKOFF && b.delay() > MAX_BACKOFF - Duration::from_millis(50));
        b.failed_after(HEALTHY_AFTER + Duration::from_secs(1));
        assert!(b.delay() <= Duration::from_millis(200));
        b.succeeded();
        assert_eq!(b.delay(), Duration::ZERO);
    }
}
