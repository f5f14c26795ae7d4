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
//! configuration file and on the command line, its unit there, its default, its range
//! and its help. The table is declared once (`limit_table!`), and from it come the
//! defaults, [`LimitOverrides`] (both the `[limits]` table of `crate::config` and the
//! flags `codemode run` flattens into its arguments) and [`Limits::validate`]; each
//! check says what was wrong in the units its user wrote. Adding a limit is a field of
//! [`Limits`] and a row of the table (and the code that enforces it).
//!
//! Where it sits: the command line and the configuration file fill [`LimitOverrides`];
//! `crate::app` turns them into the [`Limits`] every program of the executor runs under.
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
/// Each field is one row of [`SETTINGS`] (declared in `limit_table!` below), which
/// also holds its default.
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

impl Unit {
    /// The placeholder of a flag's value in `--help` (`--memory-mib <MIB>`).
    pub const fn value_name(self) -> &'static str {
        match self {
            Unit::Mib => "MIB",
            Unit::Millis => "MS",
            Unit::Bytes => "BYTES",
            Unit::Count => "N",
        }
    }
}

/// One configurable limit.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// Which field of [`Limits`].
    pub which: Which,
    /// The field's name in [`Limits`] (what [`Limits::validate`] names).
    pub field: &'static str,
    /// The key in the configuration file's `[limits]` table.
    pub key: &'static str,
    /// The command-line flag.
    pub flag: &'static str,
    /// The unit of `key` and `flag`.
    pub unit: Unit,
    /// The default, in `unit`.
    pub default: u64,
    /// Smallest accepted value, in `unit`.
    pub min: u64,
    /// Largest accepted value, in `unit`.
    pub max: u64,
}

/// A field of [`Limits`] as people write it: its value in a [`Unit`], and in the
/// library's own unit (bytes, milliseconds, a count) for [`Limits::validate`].
trait InUnit: Copy {
    /// The value written in `unit`.
    fn to_unit(self, unit: Unit) -> u64;
    /// The field's value from one written in `unit` (unchecked; saturating).
    fn from_unit(value: u64, unit: Unit) -> Self;
    /// The value in the library's unit.
    fn base(self) -> u64;
}

impl InUnit for u64 {
    fn to_unit(self, unit: Unit) -> u64 {
        if unit == Unit::Mib {
            self / MIB
        } else {
            self
        }
    }
    fn from_unit(value: u64, unit: Unit) -> Self {
        if unit == Unit::Mib {
            value.saturating_mul(MIB)
        } else {
            value
        }
    }
    fn base(self) -> u64 {
        self
    }
}

impl InUnit for usize {
    fn to_unit(self, _: Unit) -> u64 {
        self as u64
    }
    fn from_unit(value: u64, _: Unit) -> Self {
        usize::try_from(value).unwrap_or(usize::MAX)
    }
    fn base(self) -> u64 {
        self as u64
    }
}

impl InUnit for Duration {
    fn to_unit(self, _: Unit) -> u64 {
        millis_of(self)
    }
    fn from_unit(value: u64, _: Unit) -> Self {
        Duration::from_millis(value)
    }
    fn base(self) -> u64 {
        millis_of(self)
    }
}

/// Declares every limit people can set, once: from one row per limit it makes
/// [`Which`], [`SETTINGS`], [`Limits::default`], the field access of [`Setting`],
/// and [`LimitOverrides`] (the `[limits]` table and the command line's flags, whose
/// help is the row's doc comment).
macro_rules! limit_table {
    ($(
        $(#[doc = $help:literal])*
        $which:ident {
            field: $field:ident,
            key: $key:ident,
            flag: $flag:literal,
            unit: $unit:ident,
            default: $default:expr,
            range: $min:expr, $max:expr $(,)?
        }
    )*) => {
        /// Which limit a [`Setting`] is: one per field of [`Limits`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Which {
            $(
                #[doc = concat!("[`Limits::", stringify!($field), "`].")]
                $which,
            )*
        }

        /// Every limit people can set, with its names, unit, default and range.
        pub const SETTINGS: [Setting; [$(stringify!($which)),*].len()] = [$(
            Setting {
                which: Which::$which,
                field: stringify!($field),
                key: stringify!($key),
                flag: $flag,
                unit: Unit::$unit,
                default: $default,
                min: $min,
                max: $max,
            },
        )*];

        impl Default for Limits {
            fn default() -> Self {
                Self { $($field: InUnit::from_unit($default, Unit::$unit),)* }
            }
        }

        impl Setting {
            /// The field's value in this setting's unit.
            pub fn get(&self, limits: &Limits) -> u64 {
                match self.which {
                    $(Which::$which => limits.$field.to_unit(self.unit),)*
                }
            }

            /// `limits` with this field set from `value` in this setting's unit (unchecked).
            pub fn set(&self, limits: &mut Limits, value: u64) {
                match self.which {
                    $(Which::$which => limits.$field = InUnit::from_unit(value, self.unit),)*
                }
            }

            /// The field's value in the library's unit (bytes, milliseconds, a count).
            fn base(&self, limits: &Limits) -> u64 {
                match self.which {
                    $(Which::$which => limits.$field.base(),)*
                }
            }
        }

        /// The limits a person set, each optional, in its [`Setting`]'s unit: the
        /// configuration file's `[limits]` table, and the same values as `codemode run`'s
        /// flags (flattened into its arguments). A flag overrides the file, which
        /// overrides the default: [`LimitOverrides::apply`] over the file's limits.
        /// (Flags only with this crate's `clap` feature: the core knows no command line
        /// unless its front end asks.)
        #[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
        #[cfg_attr(feature = "clap", derive(clap::Args))]
        #[serde(deny_unknown_fields)]
        pub struct LimitOverrides {
            $(
                $(#[doc = $help])*
                #[cfg_attr(feature = "clap", arg(long, value_name = Unit::$unit.value_name()))]
                pub $key: Option<u64>,
            )*
        }

        impl LimitOverrides {
            /// Each value that is set, with its setting.
            fn values(&self) -> impl Iterator<Item = (&'static Setting, u64)> + '_ {
                [$((Which::$which, self.$key)),*]
                    .into_iter()
                    .filter_map(|(which, value)| value.map(|v| (Setting::of(which), v)))
            }
        }
    };
}

limit_table! {
    /// Memory limit in MiB.
    Memory { field: memory_bytes, key: memory_mib, flag: "--memory-mib", unit: Mib, default: 256, range: 16, 64 * 1024 }
    /// JavaScript time between two tool answers, in milliseconds.
    CpuStep {
        field: cpu_step,
        key: cpu_step_ms,
        flag: "--cpu-step-ms",
        unit: Millis,
        default: 10_000,
        range: 10, 24 * 3600 * 1000,
    }
    /// Total time, in milliseconds.
    WallClock {
        field: wall_clock,
        key: wall_clock_ms,
        flag: "--wall-clock-ms",
        unit: Millis,
        default: 15 * 60 * 1000,
        range: 10, 7 * 24 * 3600 * 1000,
    }
    /// Console output kept, in bytes.
    Console {
        field: console_bytes,
        key: console_bytes,
        flag: "--console-bytes",
        unit: Bytes,
        default: 64 * 1024,
        range: 0, 16 * MIB,
    }
    /// Largest returned value, as JSON text, in bytes.
    Result {
        field: result_bytes,
        key: result_bytes,
        flag: "--result-bytes",
        unit: Bytes,
        default: 4 * MIB,
        range: 16, 48 * MIB,
    }
    /// Tool calls in flight at once.
    ToolCalls {
        field: tool_calls_in_flight,
        key: tool_calls_in_flight,
        flag: "--tool-calls-in-flight",
        unit: Count,
        default: 4096,
        range: 1, 1 << 20,
    }
    /// Tool data in flight (inputs and unread answers), in bytes.
    ToolBytes {
        field: tool_bytes_in_flight,
        key: tool_bytes_in_flight,
        flag: "--tool-bytes-in-flight",
        unit: Bytes,
        default: 32 * MIB,
        range: MIB, 48 * MIB,
    }
    /// Tool calls in all.
    ToolCallsTotal {
        field: tool_calls,
        key: tool_calls,
        flag: "--tool-calls",
        unit: Count,
        default: 10_000,
        range: 1, 10_000_000,
    }
    /// CPU the host may spend on the program's built-in calls (tools.$search), in
    /// milliseconds.
    HostCpu {
        field: host_cpu,
        key: host_cpu_ms,
        flag: "--host-cpu-ms",
        unit: Millis,
        default: 10_000,
        range: 10, 7 * 24 * 3600 * 1000,
    }
}

impl LimitOverrides {
    /// `limits` with every value this holds put in place, each checked against its
    /// range; the error names the value as it was written (`source`).
    pub fn apply(&self, mut limits: Limits, source: LimitSource) -> Result<Limits, LimitError> {
        for (setting, value) in self.values() {
            setting.check(value, source)?;
            setting.set(&mut limits, value);
        }
        Ok(limits)
    }
}

impl Setting {
    /// The setting for one field.
    pub fn of(which: Which) -> &'static Setting {
        SETTINGS.iter().find(|s| s.which == which).unwrap_or(&SETTINGS[0])
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
            let (field, value) = (setting.field, setting.base(self));
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
    #[cfg(feature = "clap")]
    fn flags_and_keys_come_from_the_table_and_flags_override_the_file() {
        use clap::{Args, FromArgMatches};
        let command = LimitOverrides::augment_args(clap::Command::new("run"));
        let flags: Vec<String> =
            command.get_arguments().filter_map(|a| a.get_long()).map(|l| format!("--{l}")).collect();
        assert_eq!(flags, SETTINGS.iter().map(|s| s.flag).collect::<Vec<_>>());
        let keys: String = SETTINGS.iter().map(|s| format!("{} = {}\n", s.key, s.default)).collect();
        let file: LimitOverrides = toml::from_str(&keys).unwrap();
        assert_eq!(file.apply(Limits::default(), LimitSource::ConfigFile), Ok(Limits::default()));

        let file: LimitOverrides = toml::from_str("memory_mib = 64\ncpu_step_ms = 500\n").unwrap();
        let matches = command.try_get_matches_from(["run", "--memory-mib", "32", "--host-cpu-ms", "20"]).unwrap();
        let flags = LimitOverrides::from_arg_matches(&matches).unwrap();
        let limits =
            flags.apply(file.apply(Limits::default(), LimitSource::ConfigFile).unwrap(), LimitSource::CommandLine);
        let expected = Limits {
            memory_bytes: 32 * MIB,
            cpu_step: Duration::from_millis(500),
            host_cpu: Duration::from_millis(20),
            ..Limits::default()
        };
        assert_eq!(limits, Ok(expected));
        let e = toml::from_str::<LimitOverrides>("memory = 3\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `memory`"), "{e}");
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
