//! The limits every program runs under: a small, documented contract.
//!
//! | limit          | default  | enforced by                                            | outcome                |
//! |----------------|----------|--------------------------------------------------------|------------------------|
//! | `memory`       | 256 MiB  | everything the worker holds: `RLIMIT_DATA` at its base + the limit + 1/32 + 1 MiB, the engine's heap limit at 3/4 of it | [`OutcomeKind::MemoryLimit`] |
//! | `cpu_step`     | 10 s     | worker watchdog: JS time between two tool answers       | [`OutcomeKind::CpuLimit`] |
//! | `wall_clock`   | 15 min   | the host, which kills the worker                         | [`OutcomeKind::WallClockLimit`] |
//! | `console`      | 64 KiB   | worker and host; the rest is dropped with a marker      | (output cut, outcome unchanged) |
//! | `result`       | 4 MiB    | worker: the returned value's JSON text                  | [`OutcomeKind::ResultTooLarge`] |
//! | `tool_calls_in_flight` | 4096 | host: further calls reject at once              | (the call rejects)     |
//! | `tool_bytes_in_flight` | 32 MiB | worker and host: tool inputs in flight (counted by `protocol::cost::json_cost`) plus answers the worker has not read; a call that would go over rejects at once | (the call rejects) |
//! | `tool_calls`   | 10,000   | host: tool calls in all; each costs the host work the program does not see | [`OutcomeKind::ToolCallLimit`] |
//! | `host_cpu`     | 10 s     | host: CPU its built-in calls (`tools.$search`) took, measured on the thread that ran them | [`OutcomeKind::HostCpuLimit`] |
//!
//! A stuck promise (nothing in flight can settle it) needs no setting: it ends the
//! program at once with [`OutcomeKind::Stuck`].
//!
//! Each limit is a [`Setting`] in one table ([`SETTINGS`]): its name in the
//! configuration file and on the command line, its unit there, and its range. The
//! library's [`Limits::validate`], the configuration and the command line all check
//! against that table, and each says what was wrong in the units its user wrote.
//!
//! [`OutcomeKind::MemoryLimit`]: crate::OutcomeKind::MemoryLimit
//! [`OutcomeKind::CpuLimit`]: crate::OutcomeKind::CpuLimit
//! [`OutcomeKind::WallClockLimit`]: crate::OutcomeKind::WallClockLimit
//! [`OutcomeKind::ResultTooLarge`]: crate::OutcomeKind::ResultTooLarge
//! [`OutcomeKind::ToolCallLimit`]: crate::OutcomeKind::ToolCallLimit
//! [`OutcomeKind::HostCpuLimit`]: crate::OutcomeKind::HostCpuLimit
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
    /// Tool data one program may have in flight: its calls' inputs (JSON text plus what
    /// holding them parsed takes) and the answers its worker has not read yet.
    pub tool_bytes_in_flight: u64,
    /// Tool calls one program may make in all (each costs the host work: reading,
    /// checking and routing the call, writing its answer).
    #[serde(default = "default_tool_calls")]
    pub tool_calls: u64,
    /// CPU the host may spend on the program's built-in calls (`tools.$search`).
    #[serde(with = "millis", default = "default_host_cpu")]
    pub host_cpu: Duration,
}

fn default_tool_calls() -> u64 {
    Limits::default().tool_calls
}

fn default_host_cpu() -> Duration {
    Limits::default().host_cpu
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
            tool_bytes_in_flight: 32 * MIB,
            tool_calls: 10_000,
            host_cpu: Duration::from_secs(10),
        }
    }
}

/// How a setting's value is written where people write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Mebibytes (the library holds bytes).
    Mib,
    /// Milliseconds (the library holds a `Duration`).
    Millis,
    /// Bytes.
    Bytes,
    /// A count.
    Count,
}

/// Which limit a [`Setting`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// [`Limits::memory_bytes`].
    Memory,
    /// [`Limits::cpu_step`].
    CpuStep,
    /// [`Limits::wall_clock`].
    WallClock,
    /// [`Limits::console_bytes`].
    Console,
    /// [`Limits::result_bytes`].
    Result,
    /// [`Limits::tool_calls_in_flight`].
    ToolCalls,
    /// [`Limits::tool_bytes_in_flight`].
    ToolBytes,
    /// [`Limits::tool_calls`].
    ToolCallsTotal,
    /// [`Limits::host_cpu`].
    HostCpu,
}

/// One configurable limit.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// Which field of [`Limits`].
    pub which: Which,
    /// The key in the configuration file's `[limits]` table.
    pub key: &'static str,
    /// The command-line flag.
    pub flag: &'static str,
    /// The unit of `key` and `flag`.
    pub unit: Unit,
    /// Smallest accepted value, in `unit`.
    pub min: u64,
    /// Largest accepted value, in `unit`.
    pub max: u64,
}

/// Every limit people can set, with its names and range.
pub const SETTINGS: [Setting; 9] = [
    Setting { which: Which::Memory, key: "memory_mib", flag: "--memory-mib", unit: Unit::Mib, min: 16, max: 64 * 1024 },
    Setting {
        which: Which::CpuStep,
        key: "cpu_step_ms",
        flag: "--cpu-step-ms",
        unit: Unit::Millis,
        min: 10,
        max: 24 * 3600 * 1000,
    },
    Setting {
        which: Which::WallClock,
        key: "wall_clock_ms",
        flag: "--wall-clock-ms",
        unit: Unit::Millis,
        min: 10,
        max: 7 * 24 * 3600 * 1000,
    },
    Setting {
        which: Which::Console,
        key: "console_bytes",
        flag: "--console-bytes",
        unit: Unit::Bytes,
        min: 0,
        max: 16 * MIB,
    },
    Setting {
        which: Which::Result,
        key: "result_bytes",
        flag: "--result-bytes",
        unit: Unit::Bytes,
        min: 16,
        max: 48 * MIB,
    },
    Setting {
        which: Which::ToolCalls,
        key: "tool_calls_in_flight",
        flag: "--tool-calls-in-flight",
        unit: Unit::Count,
        min: 1,
        max: 1 << 20,
    },
    Setting {
        which: Which::ToolBytes,
        key: "tool_bytes_in_flight",
        flag: "--tool-bytes-in-flight",
        unit: Unit::Bytes,
        min: MIB,
        max: 48 * MIB,
    },
    Setting {
        which: Which::ToolCallsTotal,
        key: "tool_calls",
        flag: "--tool-calls",
        unit: Unit::Count,
        min: 1,
        max: 10_000_000,
    },
    Setting {
        which: Which::HostCpu,
        key: "host_cpu_ms",
        flag: "--host-cpu-ms",
        unit: Unit::Millis,
        min: 10,
        max: 7 * 24 * 3600 * 1000,
    },
];

impl Setting {
    /// The setting for one field.
    pub fn of(which: Which) -> &'static Setting {
        SETTINGS.iter().find(|s| s.which == which).unwrap_or(&SETTINGS[0])
    }

    /// The field's value in this setting's unit.
    pub fn get(&self, limits: &Limits) -> u64 {
        match self.which {
            Which::Memory => limits.memory_bytes / MIB,
            Which::CpuStep => millis_of(limits.cpu_step),
            Which::WallClock => millis_of(limits.wall_clock),
            Which::Console => limits.console_bytes,
            Which::Result => limits.result_bytes,
            Which::ToolCalls => limits.tool_calls_in_flight as u64,
            Which::ToolBytes => limits.tool_bytes_in_flight,
            Which::ToolCallsTotal => limits.tool_calls,
            Which::HostCpu => millis_of(limits.host_cpu),
        }
    }

    /// `limits` with this field set from `value` in this setting's unit (unchecked).
    pub fn set(&self, limits: &mut Limits, value: u64) {
        match self.which {
            Which::Memory => limits.memory_bytes = value.saturating_mul(MIB),
            Which::CpuStep => limits.cpu_step = Duration::from_millis(value),
            Which::WallClock => limits.wall_clock = Duration::from_millis(value),
            Which::Console => limits.console_bytes = value,
            Which::Result => limits.result_bytes = value,
            Which::ToolCalls => limits.tool_calls_in_flight = usize::try_from(value).unwrap_or(usize::MAX),
            Which::ToolBytes => limits.tool_bytes_in_flight = value,
            Which::ToolCallsTotal => limits.tool_calls = value,
            Which::HostCpu => limits.host_cpu = Duration::from_millis(value),
        }
    }

    /// Checks a value written in this setting's unit; the error names it as `written`
    /// (the flag or the key) in the same unit.
    pub fn check(&self, value: u64, written: LimitSource) -> Result<(), LimitError> {
        if (self.min..=self.max).contains(&value) {
            return Ok(());
        }
        let name = match written {
            LimitSource::CommandLine => format!("{} {value}", self.flag),
            LimitSource::ConfigFile => format!("[limits] {} = {value}", self.key),
        };
        Err(LimitError { setting: name, range: format!("must be between {} and {}", self.min, self.max) })
    }
}

/// Where a limit's value was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSource {
    /// A command-line flag.
    CommandLine,
    /// The configuration file's `[limits]` table.
    ConfigFile,
}

/// A limit outside what the executor can honour, named as its user wrote it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{setting}: {range}")]
pub struct LimitError {
    /// The setting and its value (`--memory-mib 0`, `[limits] memory_mib = 0`,
    /// `memory_bytes = 1024`).
    pub setting: String,
    /// What it must be.
    pub range: String,
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
    /// Sets the budget of tool data in flight.
    pub fn with_tool_bytes_in_flight(mut self, bytes: u64) -> Self {
        self.tool_bytes_in_flight = bytes;
        self
    }

    /// Checks every limit against what the executor can honour ([`SETTINGS`]); the
    /// error names the field of this struct with its value in readable units.
    pub fn validate(&self) -> Result<(), LimitError> {
        for setting in &SETTINGS {
            let scale = if setting.unit == Unit::Mib { MIB } else { 1 };
            let (field, value) = match setting.which {
                Which::Memory => ("memory_bytes", self.memory_bytes),
                Which::CpuStep => ("cpu_step", millis_of(self.cpu_step)),
                Which::WallClock => ("wall_clock", millis_of(self.wall_clock)),
                Which::HostCpu => ("host_cpu", millis_of(self.host_cpu)),
                _ => (setting.key, setting.get(self)),
            };
            let (min, max) = (setting.min.saturating_mul(scale), setting.max.saturating_mul(scale));
            if (min..=max).contains(&value) {
                continue;
            }
            let show = |v: u64| match setting.unit {
                Unit::Mib | Unit::Bytes => human_bytes(v),
                Unit::Millis => human_duration(Duration::from_millis(v)),
                Unit::Count => v.to_string(),
            };
            return Err(LimitError {
                setting: format!("{field} = {}", show(value)),
                range: format!("must be between {} and {}", show(min), show(max)),
            });
        }
        Ok(())
    }

    /// The part of the limits the worker enforces itself.
    pub fn worker_limits(&self) -> protocol::WorkerLimits {
        protocol::WorkerLimits {
            memory_bytes: self.memory_bytes,
            cpu_step_ms: millis_of(self.cpu_step),
            console_bytes: self.console_bytes,
            result_bytes: self.result_bytes,
            wall_clock_ms: millis_of(self.wall_clock),
            tool_bytes_in_flight: self.tool_bytes_in_flight,
        }
    }
}

fn millis_of(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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

/// Formats a byte count the way people read it (`256 MiB`, `64 KiB`, `17 bytes`,
/// `64 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const GIB: u64 = 1024 * MIB;
    if bytes >= GIB && bytes.is_multiple_of(GIB) {
        format!("{} GiB", bytes / GIB)
    } else if bytes >= MIB && bytes.is_multiple_of(MIB) {
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
    if ms >= 3_600_000 && ms.is_multiple_of(3_600_000) {
        format!("{} h", ms / 3_600_000)
    } else if ms >= 60_000 && ms.is_multiple_of(60_000) {
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
        assert_eq!(l.tool_bytes_in_flight, 32 * MIB);
        assert_eq!(l.validate(), Ok(()));
    }

    #[test]
    fn out_of_range_limits_say_which_and_why_in_readable_units() {
        let err = Limits::default().with_memory_bytes(1024).validate().unwrap_err();
        assert_eq!(err.to_string(), "memory_bytes = 1 KiB: must be between 16 MiB and 64 GiB");
        let err = Limits::default().with_cpu_step(Duration::from_millis(5)).validate().unwrap_err();
        assert_eq!(err.to_string(), "cpu_step = 5 ms: must be between 10 ms and 24 h");
        let err = Limits::default().with_tool_bytes_in_flight(100 * MIB).validate().unwrap_err();
        assert_eq!(err.to_string(), "tool_bytes_in_flight = 100 MiB: must be between 1 MiB and 48 MiB");
    }

    #[test]
    fn settings_speak_the_units_their_user_wrote() {
        let memory = Setting::of(Which::Memory);
        assert_eq!(
            memory.check(0, LimitSource::CommandLine).unwrap_err().to_string(),
            "--memory-mib 0: must be between 16 and 65536"
        );
        assert_eq!(
            memory.check(0, LimitSource::ConfigFile).unwrap_err().to_string(),
            "[limits] memory_mib = 0: must be between 16 and 65536"
        );
        assert!(memory.check(64, LimitSource::CommandLine).is_ok());
        let mut limits = Limits::default();
        for setting in &SETTINGS {
            setting.set(&mut limits, setting.min);
            assert_eq!(setting.get(&limits), setting.min, "{}", setting.key);
        }
        assert_eq!(limits.validate(), Ok(()));
        for setting in &SETTINGS {
            let mut limits = Limits::default();
            setting.set(&mut limits, setting.max + 1);
            assert!(limits.validate().is_err(), "{} above its maximum passed", setting.key);
        }
    }

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(256 * MIB), "256 MiB");
        assert_eq!(human_bytes(65536), "64 KiB");
        assert_eq!(human_bytes(17), "17 bytes");
        assert_eq!(human_bytes(64 * 1024 * MIB), "64 GiB");
        assert_eq!(human_duration(Duration::from_secs(900)), "15 min");
        assert_eq!(human_duration(Duration::from_secs(10)), "10 s");
        assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
    }
}
