//! The typed messages of the worker channel, one enum per direction.
//!
//! A program's life on the channel:
//!
//! ```text
//! host   ── Prepare { limits, rehearse } ─────────────────▶ worker    (a warm worker only, ahead of demand)
//! host   ── Start { code, limits, catalog } ──────────────▶ worker
//! worker ── ToolCall { call_id, plugin, tool, input } ────▶ host      (any number, concurrently)
//! host   ── ToolAnswer { call_id, answer } ───────────────▶ worker    (in any order)
//! worker ── Console { level, text } ──────────────────────▶ host      (any number)
//! worker ── Finished { outcome, console_dropped_bytes, unanswered_calls } ──▶ host   (exactly once, then exit)
//! ```
//!
//! Tool inputs and answers stay JSON text ([`RawValue`]): the worker produced them with
//! `JSON.stringify` and the host's tools consume JSON, so neither side parses them twice.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// What the host sends to a worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostToWorker {
    /// Set up for programs with these limits and wait for one (sent first, once, to a
    /// worker of the host's warm pool). The [`HostToWorker::Start`] that follows must
    /// carry the same limits; a worker refuses a program with other limits.
    Prepare {
        /// The limits the worker locks itself down for.
        limits: WorkerLimits,
        /// Whether to rehearse while it waits (a canned program run through every step
        /// a program takes, so that the program's own first touches of the template's
        /// pages are made ahead of it): worth its CPU when the host is idle, skipped
        /// when programs take workers as fast as they are made.
        rehearse: bool,
    },
    /// Run this program; sent once, first or right after [`HostToWorker::Prepare`].
    Start(StartProgram),
    /// The answer to one of the worker's tool calls.
    ToolAnswer {
        /// The `call_id` of the [`WorkerToHost::ToolCall`] being answered.
        call_id: u64,
        /// What the JavaScript call resolves or rejects with.
        answer: ToolAnswer,
    },
}

/// What a worker sends to the host.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerToHost {
    /// The program called `tools.<plugin>.<tool>(input)`.
    ToolCall {
        /// Unique within this program; the answer carries it back.
        call_id: u64,
        /// The plugin's name as the catalog spells it.
        plugin: String,
        /// The tool's name as the catalog spells it.
        tool: String,
        /// The input, as JSON text.
        input: Box<RawValue>,
    },
    /// The program wrote with `console.*`.
    Console {
        /// Which console method it used.
        level: ConsoleLevel,
        /// The formatted text, without a trailing newline.
        text: String,
    },
    /// The program ended; the worker exits right after.
    Finished {
        /// How it ended.
        outcome: WorkerOutcome,
        /// Console bytes the worker did not send because the console cap was reached.
        console_dropped_bytes: u64,
        /// The tool calls the program started whose answers had not arrived when it
        /// ended (it never awaited them), in call order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unanswered_calls: Vec<u64>,
        /// When the worker reached each step of the program (absent when it ended
        /// before it had the program, for example in a panic).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        times: Option<WorkerTimes>,
    },
}

/// When a worker reached each step of its program, on the machine's monotonic clock
/// ([`monotonic_ns`]), which host and worker share: the host turns them into the
/// program's per-phase timings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerTimes {
    /// It was ready for its program: locked down (and, for a warm worker, done with
    /// its rehearsal) and waiting.
    #[serde(default)]
    pub ready_ns: u64,
    /// It had the program.
    pub received_ns: u64,
    /// The program was compiled (or failed to).
    pub compiled_ns: u64,
    /// The program ended, and its outcome was about to be sent.
    pub ended_ns: u64,
}

/// The machine's monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds.
pub fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| (t.tv_sec() as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec() as u64))
        .unwrap_or(0)
}

/// Everything a worker needs to run one program.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StartProgram {
    /// The program text: an async function body, or one expression.
    pub code: String,
    /// The limits the worker enforces on itself.
    pub limits: WorkerLimits,
    /// The tools the program may call, grouped by plugin.
    pub catalog: Vec<PluginTools>,
    /// How long the worker busy-polls for a tool answer before it sleeps, in
    /// microseconds (0: never).
    #[serde(default)]
    pub busy_poll_us: u64,
    /// Fresh randomness from the host's operating system, drawn for this program alone:
    /// the worker reseeds every generator it inherited from the template (`Math.random`)
    /// with it before the program's first instruction, so no two programs share a
    /// sequence.
    pub entropy: [u32; 4],
}

/// The limits a worker enforces from the inside. The host enforces the wall clock
/// and backs the memory limit with the operating system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerLimits {
    /// JavaScript heap limit, in bytes.
    pub memory_bytes: u64,
    /// CPU time the program may spend between two tool answers, in milliseconds.
    pub cpu_step_ms: u64,
    /// Console output the worker forwards before it starts dropping, in bytes.
    pub console_bytes: u64,
    /// Largest returned value, as JSON text, in bytes.
    pub result_bytes: u64,
    /// The host's wall-clock limit, in milliseconds (the worker sets its CPU-seconds
    /// backstop from it).
    #[serde(default)]
    pub wall_clock_ms: u64,
    /// Tool data the program may have in flight, as [`crate::cost::json_cost`] counts
    /// it: the worker refuses a call whose input would go over it before sending
    /// anything, and the host enforces the same budget on its side.
    #[serde(default = "default_tool_bytes_in_flight")]
    pub tool_bytes_in_flight: u64,
}

fn default_tool_bytes_in_flight() -> u64 {
    32 * 1024 * 1024
}

/// One plugin's tools as the program sees them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginTools {
    /// The plugin's name (`tools.<plugin>`).
    pub plugin: String,
    /// Its tools' names (`tools.<plugin>.<tool>`).
    pub tools: Vec<String>,
    /// Set when the plugin could not be started: why. Its calls still go to the host,
    /// which tries the plugin again (it may have recovered) or rejects them with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// What a tool call resolves or rejects with in JavaScript.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolAnswer {
    /// The call resolves with this JSON value.
    Resolve(Box<RawValue>),
    /// The call rejects with an `Error` carrying this message.
    Reject(String),
}

/// Which `console` method wrote a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsoleLevel {
    /// `console.log`, `console.info`
    Log,
    /// `console.debug`
    Debug,
    /// `console.warn`
    Warn,
    /// `console.error`
    Error,
}

/// How a program ended, as the worker saw it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerOutcome {
    /// The program returned this value (JSON text; `null` too).
    Returned(Box<RawValue>),
    /// The program returned `undefined` (or nothing).
    ReturnedUndefined,
    /// The program threw, did not compile, or left a promise rejected that nothing
    /// handled ([`JsFailure::unhandled_rejection`]).
    Threw(JsFailure),
    /// The returned value cannot be written as JSON (a cycle, a BigInt, a function).
    Unserializable(String),
    /// The returned value's JSON text is larger than [`WorkerLimits::result_bytes`].
    ResultTooLarge {
        /// Size of the JSON text, when the worker got as far as measuring it.
        bytes: u64,
    },
    /// The JavaScript heap reached [`WorkerLimits::memory_bytes`].
    MemoryLimit,
    /// The program ran JavaScript for longer than [`WorkerLimits::cpu_step_ms`] between two tool answers.
    CpuLimit,
    /// The program waits for a promise that nothing can settle: no tool call is in flight.
    Stuck,
    /// The worker itself failed (a bug in codemode, not in the program): it caught its
    /// own panic and reports it instead of dying silently.
    Internal(String),
}

/// A JavaScript exception, as the program's author needs to see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsFailure {
    /// `SyntaxError`, `TypeError`, `Error`, ... (empty when a non-Error was thrown).
    pub name: String,
    /// The exception's message, or the thrown value as text.
    pub message: String,
    /// The stack trace, with the program's own line numbers.
    pub stack: Option<String>,
    /// Line in the program (1-based), when known.
    pub line: Option<u32>,
    /// Column in the program (1-based), when known.
    pub column: Option<u32>,
    /// True when no code of the program threw this: a promise it created rejected and
    /// nothing handled the rejection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unhandled_rejection: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::frame::{encode, read_frame, MAX_FRAME_BYTES};

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn tool_call_input_passes_through_unchanged() {
        let msg = WorkerToHost::ToolCall {
            call_id: 3,
            plugin: "my-db".into(),
            tool: "q".into(),
            input: raw(r#"{"a":[1,2,{"b":"é"}]}"#),
        };
        let buf = encode(&msg).unwrap();
        match read_frame::<_, WorkerToHost>(&mut &buf[..], MAX_FRAME_BYTES).unwrap() {
            WorkerToHost::ToolCall { call_id, plugin, tool, input } => {
                assert_eq!((call_id, plugin.as_str(), tool.as_str()), (3, "my-db", "q"));
                assert_eq!(input.get(), r#"{"a":[1,2,{"b":"é"}]}"#);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn every_outcome_round_trips() {
        let outcomes = vec![
            WorkerOutcome::Returned(raw("[1,2]")),
            WorkerOutcome::Returned(raw("null")),
            WorkerOutcome::ReturnedUndefined,
            WorkerOutcome::Threw(JsFailure {
                name: "TypeError".into(),
                message: "x".into(),
                stack: Some("at y".into()),
                line: Some(2),
                column: Some(5),
                unhandled_rejection: false,
            }),
            WorkerOutcome::Internal("a bug".into()),
            WorkerOutcome::Unserializable("cycle".into()),
            WorkerOutcome::ResultTooLarge { bytes: 9 },
            WorkerOutcome::MemoryLimit,
            WorkerOutcome::CpuLimit,
            WorkerOutcome::Stuck,
        ];
        for outcome in outcomes {
            let text = format!("{outcome:?}");
            let buf = encode(&WorkerToHost::Finished {
                outcome,
                console_dropped_bytes: 4,
                unanswered_calls: vec![3],
                times: Some(WorkerTimes { ready_ns: 0, received_ns: 1, compiled_ns: 2, ended_ns: 3 }),
            })
            .unwrap();
            match read_frame::<_, WorkerToHost>(&mut &buf[..], MAX_FRAME_BYTES).unwrap() {
                WorkerToHost::Finished { outcome, console_dropped_bytes, unanswered_calls, times } => {
                    assert_eq!(times, Some(WorkerTimes { ready_ns: 0, received_ns: 1, compiled_ns: 2, ended_ns: 3 }));
                    assert_eq!(unanswered_calls, vec![3]);
                    assert_eq!(format!("{outcome:?}"), text);
                    assert_eq!(console_dropped_bytes, 4);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn start_and_answers_round_trip() {
        let start = HostToWorker::Start(StartProgram {
            code: "return 1".into(),
            limits: WorkerLimits {
                memory_bytes: 1,
                cpu_step_ms: 2,
                console_bytes: 3,
                result_bytes: 4,
                wall_clock_ms: 5,
                tool_bytes_in_flight: 6,
            },
            catalog: vec![PluginTools { plugin: "math".into(), tools: vec!["add".into()], unavailable: None }],
            busy_poll_us: 50,
            entropy: [1, 2, 3, 4],
        });
        let buf = encode(&start).unwrap();
        let HostToWorker::Start(back) = read_frame::<_, HostToWorker>(&mut &buf[..], MAX_FRAME_BYTES).unwrap() else {
            panic!()
        };
        assert_eq!(back.catalog[0].tools, vec!["add".to_string()]);
        assert_eq!(back.limits.result_bytes, 4);
        for answer in [ToolAnswer::Resolve(raw("\"ok\"")), ToolAnswer::Reject("boom".into())] {
            let buf = encode(&HostToWorker::ToolAnswer { call_id: 1, answer }).unwrap();
            assert!(matches!(
                read_frame::<_, HostToWorker>(&mut &buf[..], MAX_FRAME_BYTES).unwrap(),
                HostToWorker::ToolAnswer { call_id: 1, .. }
            ));
        }
    }

    #[test]
    fn a_returned_null_stays_null() {
        let buf = encode(&WorkerToHost::Finished {
            outcome: WorkerOutcome::Returned(raw("null")),
            console_dropped_bytes: 0,
            unanswered_calls: Vec::new(),
            times: None,
        })
        .unwrap();
        match read_frame::<_, WorkerToHost>(&mut &buf[..], MAX_FRAME_BYTES).unwrap() {
            WorkerToHost::Finished { outcome: WorkerOutcome::Returned(value), .. } => assert_eq!(value.get(), "null"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_message_of_the_other_direction_is_refused() {
        let buf = encode(&HostToWorker::ToolAnswer { call_id: 1, answer: ToolAnswer::Reject("x".into()) }).unwrap();
        assert!(read_frame::<_, WorkerToHost>(&mut &buf[..], MAX_FRAME_BYTES).is_err());
    }
}
