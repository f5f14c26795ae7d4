//! The limits every program runs under: a small, documented contract.
//!
//! | limit          | default  | enforced by                                            | outcome                |
//! |----------------|----------|--------------------------------------------------------|------------------------|
//! | `memory`       | 256 MiB  | the engine's heap limit; `RLIMIT_DATA` as OS backstop   | [`OutcomeKind::MemoryLimit`] |
//! | `cpu_step`     | 10 s     | worker watchdog: JS time between two tool answers       | [`OutcomeKind::CpuLimit`] |
//! | `wall_clock`   | 15 min   | the host, which kills the worker                         | [`OutcomeKind::WallClockLimit`] |
//! | `console`      | 64 KiB   | worker and host; the rest is dropped with a marker      | (output cut, outcome unchanged) |
//! | `result`       | 4 MiB    | worker: the returned value's JSON text                  | [`OutcomeKind::ResultTooLarge`] |
//! | `tool_calls_in_flight` | 4096 | host: further calls reject at once              | (the call rejects)     |
//!
//! A stuck promise (nothing in flight can settle it) needs no setting: it ends the
//! program at once with [`OutcomeKind::Stuck`].
//!
//! [`OutcomeKind::MemoryLimit`]: crate::OutcomeKind::MemoryLimit
//! [`OutcomeKind::CpuLimit`]: crate::OutcomeKind::CpuLimit
//! [`OutcomeKind::WallClockLimit`]: crate::OutcomeKind::WallClockLimit
//! [`OutcomeKind::ResultTooLarge`]: crate::OutcomeKind::ResultTooLarge
//! [`OutcomeKind::Stuck`]: crate::OutcomeKind::Stuck

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One MiB.
pub const MIB: u64 = 1024 * 1024;

/// The limits of one program. Build with [`Limits::default`] and the `with_*` setters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// JavaScript heap, in bytes.
    pub memory_bytes: u64,
    /// JavaScript time between two tool answers.
    #[serde(with = "millis")]
    pub cpu_step: Duration,
    /// Total time from start to outcome.
    #[serde(with = "millis")]
    pub wall_clock: Duration,
    /// Console output kept, in bytes.
    pub console_bytes: u64,
    /// Largest returned value (JSON text), in bytes.
    pub result_bytes: u64,
    /// Tool calls one program may have in flight at once.
    pub tool_calls_in_flight: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 256 * MIB,
            cpu_step: Duration::from_secs(10),
            wall_clock: Duration::from_secs(15 * 60),
            console_bytes: 64 * 1024,
            result_bytes: 4 * MIB,
            tool_calls_in_flight: 4096,
        }
    }
}

/// A limit outside what the executor can honour.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("limit {name} = {value} is out of range: it must be between {min} and {max}")]
pub struct LimitError {
    /// The limit's name.
    pub name: &'static str,
    /// The value given.
    pub value: String,
    /// Smallest accepted value.
    pub min: String,
    /// Largest accepted value.
    pub max: String,
}

impl Limits {
    /// Sets the memory limit.
    pub fn with_memory_bytes(mut self, bytes: u64) -> Self {
        self.memory_bytes = bytes;
        self
    }
    /// Sets the per-step CPU limit.
    pub fn with_cpu_step(mut self, d: Duration) -> Self {
        self.cpu_step = d;
        self
    }
    /// Sets the wall-clock limit.
    pub fn with_wall_clock(mut self, d: Duration) -> Self {
        self.wall_clock = d;
        self
    }
    /// Sets the console cap.
    pub fn with_console_bytes(mut self, bytes: u64) -> Self {
        self.console_bytes = bytes;
        self
    }
    /// Sets the result cap.
    pub fn with_result_bytes(mut self, bytes: u64) -> Self {
        self.result_bytes = bytes;
        self
    }

    /// Checks every limit against what the executor can honour.
    pub fn validate(&self) -> Result<(), LimitError> {
        fn range<T: PartialOrd + std::fmt::Debug>(name: &'static str, v: T, min: T, max: T) -> Result<(), LimitError> {
            if v < min || v > max {
                return Err(LimitError { name, value: format!("{v:?}"), min: format!("{min:?}"), max: format!("{max:?}") });
            }
            Ok(())
        }
        range("memory_bytes", self.memory_bytes, 16 * MIB, 64 * 1024 * MIB)?;
        range("cpu_step", self.cpu_step, Duration::from_millis(10), Duration::from_secs(24 * 3600))?;
        range("wall_clock", self.wall_clock, Duration::from_millis(10), Duration::from_secs(7 * 24 * 3600))?;
        range("console_bytes", self.console_bytes, 0, 16 * MIB)?;
        range("result_bytes", self.result_bytes, 16, 48 * MIB)?;
        range("tool_calls_in_flight", self.tool_calls_in_flight, 1, 1 << 20)?;
        Ok(())
    }

    /// The part of the limits the worker enforces itself.
    pub fn worker_limits(&self) -> protocol::WorkerLimits {
        protocol::WorkerLimits {
            memory_bytes: self.memory_bytes,
            cpu_step_ms: u64::try_from(self.cpu_step.as_millis()).unwrap_or(u64::MAX),
            console_bytes: self.console_bytes,
            result_bytes: self.result_bytes,
            wall_clock_ms: u64::try_from(self.wall_clock.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// Formats a byte count the way people read it (`256 MiB`, `64 KiB`, `17 bytes`).
pub fn human_bytes(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// Formats a duration the way people read it (`10 s`, `15 min`, `250 ms`).
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms >= 60_000 && ms.is_multiple_of(60_000) {
        format!("{} min", ms / 60_000)
    } else if ms >= 1000 && ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones() {
        let l = Limits::default();
        assert_eq!(l.memory_bytes, 256 * MIB);
        assert_eq!(l.cpu_step, Duration::from_secs(10));
        assert_eq!(l.wall_clock, Duration::from_secs(900));
        assert_eq!(l.console_bytes, 65536);
        assert_eq!(l.validate(), Ok(()));
    }

    #[test]
    fn out_of_range_limits_say_which_and_why() {
        let err = Limits::default().with_memory_bytes(1024).validate().unwrap_err();
        assert_eq!(err.to_string(), "limit memory_bytes = 1024 is out of range: it must be between 16777216 and 68719476736");
    }

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(256 * MIB), "256 MiB");
        assert_eq!(human_bytes(65536), "64 KiB");
        assert_eq!(human_bytes(17), "17 bytes");
        assert_eq!(human_duration(Duration::from_secs(900)), "15 min");
        assert_eq!(human_duration(Duration::from_secs(10)), "10 s");
        assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
    }
}
