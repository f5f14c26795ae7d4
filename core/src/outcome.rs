//! How a program ended, as a typed value and as the text an agent reads.
//!
//! [`Outcome::agent_text`] is what `codemode run` prints and what the MCP server
//! returns: the returned value as JSON text (a string as it is), then the console
//! output; or, for a failed program, the reason first. [`OutcomeKind`] gives each way
//! of ending its own variant, and every limit carries the limit's value.
//!
//! The change journal ([`RecordedChange`]): a tool that changes files may list what it
//! changed in its result's `_meta` under [`CHANGES_META`] (Podcode's
//! `ctx.recordChange`); the dispatch collects those of every call of the program, in
//! the order the calls answered, into [`Outcome::changes`]. `codemode run --json` lists
//! them whole; the agent reads one line per change after the value
//! ([`Outcome::changes_text`]), and the MCP server also puts the whole journal in the
//! `execute` result's `_meta` under the same key.

use std::time::Duration;

use serde::Serialize;

use crate::limits::{human_bytes, human_duration};

/// How a program ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutcomeKind {
    /// The program returned. `value` is JSON text, or `None` for `undefined`.
    Ok {
        /// The returned value as JSON text.
        value: Option<String>,
    },
    /// The program threw (or did not compile, or returned something JSON cannot hold).
    Error {
        /// `TypeError`, `SyntaxError`, ... (empty when a non-Error was thrown).
        name: String,
        /// The message.
        message: String,
        /// The JavaScript stack, when there is one.
        stack: Option<String>,
        /// Line in the program, 1-based.
        line: Option<u32>,
        /// Column in the program, 1-based.
        column: Option<u32>,
        /// True when the program's code did not throw this: a promise it left behind
        /// rejected and nothing handled the rejection.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unhandled_rejection: bool,
    },
    /// The JavaScript heap reached the memory limit.
    MemoryLimit {
        /// The limit, in bytes.
        limit_bytes: u64,
    },
    /// JavaScript ran too long between two tool answers.
    CpuLimit {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// The program ran out of total time.
    WallClockLimit {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// The program made more tool calls than it may.
    ToolCallLimit {
        /// The limit, in calls.
        limit: u64,
    },
    /// The host's work for the program's built-in calls (`tools.$search`) took more CPU
    /// than it may.
    HostCpuLimit {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// The returned value's JSON text is larger than the result limit.
    ResultTooLarge {
        /// The limit, in bytes.
        limit_bytes: u64,
        /// The size of the value's JSON text.
        bytes: u64,
    },
    /// The program waited for a promise that nothing could settle.
    Stuck,
    /// The worker died or broke the protocol; the host is unaffected.
    WorkerCrash {
        /// What happened.
        reason: String,
    },
    /// The host could not run the program at all (it could not start a worker).
    Internal {
        /// What went wrong and what to do.
        reason: String,
    },
}

impl OutcomeKind {
    /// The kind's name as it appears in JSON (`ok`, `memory_limit`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            OutcomeKind::Ok { .. } => "ok",
            OutcomeKind::Error { .. } => "error",
            OutcomeKind::MemoryLimit { .. } => "memory_limit",
            OutcomeKind::CpuLimit { .. } => "cpu_limit",
            OutcomeKind::WallClockLimit { .. } => "wall_clock_limit",
            OutcomeKind::ToolCallLimit { .. } => "tool_call_limit",
            OutcomeKind::HostCpuLimit { .. } => "host_cpu_limit",
            OutcomeKind::ResultTooLarge { .. } => "result_too_large",
            OutcomeKind::Stuck => "stuck",
            OutcomeKind::WorkerCrash { .. } => "worker_crash",
            OutcomeKind::Internal { .. } => "internal",
        }
    }

    /// True for the limits.
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            OutcomeKind::MemoryLimit { .. }
                | OutcomeKind::CpuLimit { .. }
                | OutcomeKind::WallClockLimit { .. }
                | OutcomeKind::ToolCallLimit { .. }
                | OutcomeKind::HostCpuLimit { .. }
                | OutcomeKind::ResultTooLarge { .. }
        )
    }
}

/// Everything a program produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// How it ended.
    #[serde(flatten)]
    pub kind: OutcomeKind,
    /// What it wrote with `console.*`, one line per call, cut at the console limit.
    pub console: String,
    /// Console bytes dropped after the cut (0 when nothing was cut).
    pub console_dropped_bytes: u64,
    /// Tool calls the program made.
    pub tool_calls: u64,
    /// Time from the call to the outcome.
    #[serde(serialize_with = "micros")]
    pub elapsed: Duration,
    /// Sandbox layers that were not active for this program (only ever non-empty when
    /// the executor was told to accept a weaker sandbox).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sandbox_missing: Vec<protocol::worker::MissingLayer>,
    /// Tool calls the program started and never awaited: still running when it
    /// returned. They were let run to their end (within the wall clock); each says how
    /// it ended.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unawaited_calls: Vec<UnawaitedCall>,
    /// How long each phase took, when a worker ran the program to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<Phases>,
    /// The files the program's tool calls changed, as the tools recorded them (the
    /// change journal), in the order the calls answered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<RecordedChange>,
    /// Changes recorded past the journal's budget and not kept at all.
    #[serde(skip_serializing_if = "is_zero")]
    pub changes_left_out: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The result `_meta` key under which a tool lists the files its call changed (a list
/// of `{ file, op, oldContent, newContent }`).
pub const CHANGES_META: &str = "codemode/changes";

/// One file a tool call changed, as the tool recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedChange {
    /// The call that recorded it: `tools.<plugin>.<tool>` (filled in by the host).
    #[serde(default)]
    pub call: String,
    /// The file, as the tool named it.
    pub file: String,
    /// What happened to it: `create`, `modify`, `delete` (as the tool said).
    pub op: String,
    /// Its content before, when it had one.
    #[serde(default)]
    pub old_content: Option<String>,
    /// Its content after, when it has one.
    #[serde(default)]
    pub new_content: Option<String>,
    /// Set when its contents were not kept (the journal was past its budget, or the
    /// answer past its cap): `oldContent`/`newContent` are null then although the file
    /// may have had them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contents_left_out: bool,
}

impl RecordedChange {
    /// What keeping it costs: its text (names and contents) and a little for the entry.
    fn cost(&self) -> u64 {
        let contents =
            self.old_content.as_ref().map_or(0, String::len) + self.new_content.as_ref().map_or(0, String::len);
        (ENTRY_COST + self.call.len() + self.file.len() + self.op.len() + contents) as u64
    }
}

/// What an entry of the journal costs beside its text (its fields and their JSON keys).
const ENTRY_COST: usize = 96;

/// A program's change journal as the dispatch collects it, bounded by `budget` bytes
/// (the program's `tool_bytes_in_flight`): an entry is kept whole while the journal fits,
/// then with its names only (`contentsLeftOut`), and past the budget not at all (counted
/// in `left_out`). A program can thus hold at most its budget in the journal, whatever
/// its tools record.
#[derive(Debug, Default)]
pub struct ChangeJournal {
    changes: Vec<RecordedChange>,
    kept_bytes: u64,
    budget: u64,
    left_out: u64,
}

impl ChangeJournal {
    /// An empty journal that keeps at most `budget` bytes.
    pub fn new(budget: u64) -> Self {
        Self { budget, ..Self::default() }
    }

    /// Takes the changes a tool result lists under [`CHANGES_META`] out of `meta`, each
    /// marked with `call`; entries that are not `{ file, op, ... }` objects are left out.
    pub fn take_from(&mut self, meta: Option<&mut serde_json::Map<String, serde_json::Value>>, call: &str) {
        let Some(serde_json::Value::Array(list)) = meta.and_then(|m| m.remove(CHANGES_META)) else {
            return;
        };
        for item in list {
            if let Ok(change) = serde_json::from_value::<RecordedChange>(item) {
                self.add(RecordedChange { call: call.to_string(), ..change });
            }
        }
    }

    /// Keeps `change` whole, by its names only, or not at all: whatever fits.
    fn add(&mut self, mut change: RecordedChange) {
        let room = self.budget.saturating_sub(self.kept_bytes);
        if change.cost() > room {
            change.old_content = None;
            change.new_content = None;
            change.contents_left_out = true;
        }
        let cost = change.cost();
        if cost > room {
            self.left_out += 1;
            return;
        }
        self.kept_bytes += cost;
        self.changes.push(change);
    }

    /// The kept changes and how many were left out.
    pub fn into_parts(self) -> (Vec<RecordedChange>, u64) {
        (self.changes, self.left_out)
    }
}

/// How long each phase of a program took: the call to the worker holding the program,
/// compiling it, running it, and its outcome's way back. (Reaping the worker happens
/// after the outcome, off the program's path.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Phases {
    /// From the call until the worker had the program: a free slot, a warm worker (or
    /// a fork), and sending the program.
    #[serde(serialize_with = "micros")]
    pub to_worker: Duration,
    /// The part of `to_worker` spent waiting for the worker to be ready (locked down,
    /// and a warm worker done with its rehearsal); zero when it was waiting already.
    #[serde(serialize_with = "micros")]
    pub worker_not_ready: Duration,
    /// Reading the program's form and compiling it.
    #[serde(serialize_with = "micros")]
    pub compile: Duration,
    /// Running it, its tool calls included.
    #[serde(serialize_with = "micros")]
    pub run: Duration,
    /// From its end until the host held the outcome.
    #[serde(serialize_with = "micros")]
    pub report: Duration,
}

impl Phases {
    /// The phases from the clock readings (`protocol::monotonic_ns`) of the call
    /// (`called_ns`), the worker's steps, and the outcome's arrival (`arrived_ns`).
    pub fn from_clock(called_ns: u64, worker: protocol::WorkerTimes, arrived_ns: u64) -> Self {
        let span = |from: u64, to: u64| Duration::from_nanos(to.saturating_sub(from));
        Self {
            to_worker: span(called_ns, worker.received_ns),
            worker_not_ready: span(called_ns, worker.ready_ns.min(worker.received_ns)),
            compile: span(worker.received_ns, worker.compiled_ns),
            run: span(worker.compiled_ns, worker.ended_ns),
            report: span(worker.ended_ns, arrived_ns),
        }
    }
}

/// A tool call still running when its program returned, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnawaitedCall {
    /// `tools.<plugin>.<tool>`.
    pub call: String,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// True when it was still running at the wall-clock limit (or a cancellation) and
    /// was stopped.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

impl UnawaitedCall {
    /// `call`, which ended with `answer`.
    pub fn ended(call: String, answer: &protocol::ToolAnswer) -> Self {
        let failure = match answer {
            protocol::ToolAnswer::Reject(why) => Some(why.clone()),
            protocol::ToolAnswer::Resolve(_) => None,
        };
        Self { call, failure, stopped: false }
    }
}

/// Longest failure message quoted in the note about calls never awaited.
const MAX_FAILURE_CHARS: usize = 300;

/// The note an agent reads about calls its program never awaited: how many, and what
/// became of the ones that did not simply succeed; `None` when there were none.
pub fn unawaited_note(calls: &[UnawaitedCall]) -> Option<String> {
    if calls.is_empty() {
        return None;
    }
    let plural = |n: usize, one: &str, many: &str| if n == 1 { format!("{n} {one}") } else { format!("{n} {many}") };
    let mut note = format!(
        "[{} never awaited: the program returned while {} running",
        plural(calls.len(), "tool call was", "tool calls were"),
        if calls.len() == 1 { "it was" } else { "they were" }
    );
    let brief = |why: &str| {
        if why.chars().count() <= MAX_FAILURE_CHARS {
            why.to_string()
        } else {
            format!("{}…", why.chars().take(MAX_FAILURE_CHARS).collect::<String>())
        }
    };
    let failed: Vec<String> =
        calls.iter().filter_map(|c| c.failure.as_ref().map(|why| format!("{}: {}", c.call, brief(why)))).collect();
    let stopped: Vec<&str> = calls.iter().filter(|c| c.stopped).map(|c| c.call.as_str()).collect();
    let succeeded = calls.len() - failed.len() - stopped.len();
    if succeeded > 0 {
        note.push_str(&format!("; {succeeded} succeeded"));
    }
    if !failed.is_empty() {
        note.push_str(&format!("; {} failed: {}", failed.len(), failed.join("; ")));
    }
    if !stopped.is_empty() {
        note.push_str(&format!(
            "; {} stopped unfinished at the wall-clock limit: {}",
            stopped.len(),
            stopped.join(", ")
        ));
    }
    note.push_str(". Await every call whose result matters.]");
    Some(note)
}

fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

impl Outcome {
    /// True when the program returned normally.
    pub fn is_ok(&self) -> bool {
        matches!(self.kind, OutcomeKind::Ok { .. })
    }

    /// The returned value parsed back into JSON (`None` for failures and `undefined`).
    pub fn value(&self) -> Option<serde_json::Value> {
        match &self.kind {
            OutcomeKind::Ok { value: Some(v) } => serde_json::from_str(v).ok(),
            _ => None,
        }
    }

    /// The failure's reason, as the first line(s) the agent reads; `None` when ok.
    pub fn failure_text(&self) -> Option<String> {
        Some(match &self.kind {
            OutcomeKind::Ok { .. } => return None,
            OutcomeKind::Error { name, message, stack, line, column, unhandled_rejection } => {
                let mut text = String::from(if *unhandled_rejection {
                    "Error: a promise the program did not handle rejected with "
                } else {
                    "Error: the program threw "
                });
                if name.is_empty() {
                    text.push_str(&format!("a value: {message}"));
                } else {
                    text.push_str(&format!("{name}: {message}"));
                }
                if let (Some(l), Some(c)) = (line, column) {
                    text.push_str(&format!(" (line {l}, column {c})"));
                }
                if let Some(stack) = stack {
                    let frames: Vec<&str> = stack.lines().filter(|l| l.trim_start().starts_with("at ")).collect();
                    if !frames.is_empty() {
                        text.push('\n');
                        text.push_str(&frames.join("\n"));
                    }
                }
                text
            }
            OutcomeKind::MemoryLimit { limit_bytes } => {
                format!("Memory limit: the program used more than its {} of memory and was stopped.", human_bytes(*limit_bytes))
            }
            OutcomeKind::CpuLimit { limit_ms } => format!(
                "CPU limit: the program ran JavaScript for more than {} without waiting for a tool answer and was stopped.",
                human_duration(Duration::from_millis(*limit_ms))
            ),
            OutcomeKind::WallClockLimit { limit_ms } => {
                format!("Wall-clock limit: the program ran for more than {} in all and was stopped.", human_duration(Duration::from_millis(*limit_ms)))
            }
            OutcomeKind::ToolCallLimit { limit } => format!(
                "Tool-call limit: the program made more than {limit} tool calls and was stopped. Do more in each call, or split the work into several programs."
            ),
            OutcomeKind::HostCpuLimit { limit_ms } => format!(
                "Host CPU limit: the host spent more than {} of CPU on the program's built-in calls (tools.$search) and it was stopped. Search less often, with fewer words.",
                human_duration(Duration::from_millis(*limit_ms))
            ),
            OutcomeKind::ResultTooLarge { limit_bytes, bytes } => format!(
                "Result limit: the returned value is {bytes} bytes of JSON, more than the {} limit. Return less: filter or summarise in the program.",
                human_bytes(*limit_bytes)
            ),
            OutcomeKind::Stuck => {
                "Stuck: the program waits for a promise that nothing will settle (no tool call is in flight), so it was ended.".to_string()
            }
            OutcomeKind::WorkerCrash { reason } => format!("Worker crash: {reason}"),
            OutcomeKind::Internal { reason } => format!("Internal error: {reason}"),
        })
    }

    /// The text an agent reads: the value (a string as it is) or the failure, then the
    /// console output with a marker where it was cut.
    pub fn agent_text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        match (&self.kind, self.failure_text()) {
            (OutcomeKind::Ok { value: Some(v) }, _) => match serde_json::from_str::<serde_json::Value>(v) {
                Ok(serde_json::Value::String(s)) => parts.push(s),
                _ => parts.push(v.clone()),
            },
            (OutcomeKind::Ok { value: None }, _) => {}
            (_, Some(failure)) => parts.push(failure),
            (_, None) => {}
        }
        parts.extend(self.console_text());
        parts.extend(self.changes_text());
        parts.extend(unawaited_note(&self.unawaited_calls));
        parts.extend(self.sandbox_warning());
        parts.join("\n\n")
    }

    /// The console section an agent reads after the value, with a marker where the
    /// output was cut; `None` when the program wrote nothing.
    pub fn console_text(&self) -> Option<String> {
        if self.console.is_empty() && self.console_dropped_bytes == 0 {
            return None;
        }
        let mut console = format!("Console output:\n{}", self.console);
        if self.console_dropped_bytes > 0 {
            if !console.ends_with('\n') {
                console.push('\n');
            }
            console.push_str(&format!(
                "[console output cut here: {} more bytes were dropped]",
                self.console_dropped_bytes
            ));
        }
        Some(console.trim_end_matches('\n').to_string())
    }

    /// The change journal as an agent reads it: one line per change (what, which file,
    /// which call); `None` when no call recorded a change.
    pub fn changes_text(&self) -> Option<String> {
        if self.changes.is_empty() && self.changes_left_out == 0 {
            return None;
        }
        let mut text = format!("Changes recorded by tools ({}):", self.changes.len() as u64 + self.changes_left_out);
        for change in &self.changes {
            text.push_str(&format!("\n- {} {} ({})", change.op, change.file, change.call));
        }
        if self.changes_left_out > 0 {
            text.push_str(&format!(
                "\n[{} more changes were recorded past the journal's budget of this program and not kept]",
                self.changes_left_out
            ));
        }
        Some(text)
    }

    /// The warning an agent reads when the program ran with sandbox layers missing.
    pub fn sandbox_warning(&self) -> Option<String> {
        (!self.sandbox_missing.is_empty()).then(|| {
            let layers: Vec<String> = self.sandbox_missing.iter().map(ToString::to_string).collect();
            format!("[warning: this program ran with a weaker sandbox; missing layers: {}]", layers.join("; "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(kind: OutcomeKind, console: &str, dropped: u64) -> Outcome {
        Outcome {
            kind,
            console: console.into(),
            console_dropped_bytes: dropped,
            tool_calls: 0,
            elapsed: Duration::ZERO,
            sandbox_missing: Vec::new(),
            unawaited_calls: Vec::new(),
            phases: None,
            changes: Vec::new(),
            changes_left_out: 0,
        }
    }

    #[test]
    fn a_string_is_shown_as_it_is_and_other_values_as_json() {
        assert_eq!(outcome(OutcomeKind::Ok { value: Some("\"hi\\nthere\"".into()) }, "", 0).agent_text(), "hi\nthere");
        assert_eq!(
            outcome(OutcomeKind::Ok { value: Some("{\"a\":1}".into()) }, "log\n", 0).agent_text(),
            "{\"a\":1}\n\nConsole output:\nlog"
        );
    }

    #[test]
    fn limits_name_their_value_and_cut_console_is_marked() {
        let text = outcome(OutcomeKind::MemoryLimit { limit_bytes: 256 * crate::limits::MIB }, "a\n", 5).agent_text();
        assert_eq!(
            text,
            "Memory limit: the program used more than its 256 MiB of memory and was stopped.\n\nConsole output:\na\n[console output cut here: 5 more bytes were dropped]"
        );
        assert!(outcome(OutcomeKind::CpuLimit { limit_ms: 10_000 }, "", 0).agent_text().contains("more than 10 s"));
        assert!(outcome(OutcomeKind::WallClockLimit { limit_ms: 900_000 }, "", 0)
            .agent_text()
            .contains("more than 15 min"));
    }

    #[test]
    fn errors_show_position_and_frames() {
        let kind = OutcomeKind::Error {
            name: "TypeError".into(),
            message: "x is not a function".into(),
            stack: Some("TypeError: x is not a function\n    at program.js:2:3".into()),
            line: Some(2),
            column: Some(3),
            unhandled_rejection: false,
        };
        assert_eq!(
            outcome(kind, "", 0).agent_text(),
            "Error: the program threw TypeError: x is not a function (line 2, column 3)\n    at program.js:2:3"
        );
        let kind = OutcomeKind::Error {
            name: "Error".into(),
            message: "left".into(),
            stack: None,
            line: Some(1),
            column: Some(16),
            unhandled_rejection: true,
        };
        assert_eq!(
            outcome(kind, "", 0).agent_text(),
            "Error: a promise the program did not handle rejected with Error: left (line 1, column 16)"
        );
    }

    #[test]
    fn the_change_journal_is_read_from_a_result_and_listed_after_the_console() {
        let meta = serde_json::json!({ "codemode/changes": [
            { "file": "notes/a.md", "op": "create", "oldContent": null, "newContent": "hi" },
            { "nonsense": true },
        ] });
        let mut meta = meta.as_object().cloned();
        let mut journal = ChangeJournal::new(1 << 20);
        journal.take_from(meta.as_mut(), "tools.notes.write");
        assert_eq!(meta, Some(serde_json::Map::new()), "the journal is taken out of the result");
        let (changes, left_out) = journal.into_parts();
        assert_eq!(left_out, 0);
        assert_eq!(
            changes,
            [RecordedChange {
                call: "tools.notes.write".into(),
                file: "notes/a.md".into(),
                op: "create".into(),
                old_content: None,
                new_content: Some("hi".into()),
                contents_left_out: false,
            }]
        );
        let mut done = outcome(OutcomeKind::Ok { value: Some("\"ok\"".into()) }, "log\n", 0);
        done.changes = changes;
        assert_eq!(
            done.agent_text(),
            "ok\n\nConsole output:\nlog\n\nChanges recorded by tools (1):\n- create notes/a.md (tools.notes.write)"
        );
        let json = serde_json::to_value(&done).unwrap_or_default();
        assert_eq!(
            json["changes"],
            serde_json::json!([{ "call": "tools.notes.write", "file": "notes/a.md", "op": "create", "oldContent": null, "newContent": "hi" }])
        );
    }

    #[test]
    fn the_journal_keeps_contents_while_they_fit_then_names_then_nothing() {
        let change = |file: &str, bytes: usize| serde_json::json!({ "file": file, "op": "modify", "oldContent": "o".repeat(bytes), "newContent": "n".repeat(bytes) });
        let mut journal = ChangeJournal::new(10_000);
        let mut meta =
            serde_json::json!({ "codemode/changes": [change("a", 3000), change("b", 3000), change("c", 10)] });
        journal.take_from(meta.as_object_mut(), "tools.p.t");
        let mut names = serde_json::json!({ "codemode/changes": [change(&"d".repeat(20_000), 1)] });
        journal.take_from(names.as_object_mut(), "tools.p.t");
        let (kept, left_out) = journal.into_parts();
        let shape: Vec<_> = kept
            .iter()
            .map(|c| (c.file.as_str(), c.new_content.as_ref().map(String::len), c.contents_left_out))
            .collect();
        assert_eq!(shape, [("a", Some(3000), false), ("b", None, true), ("c", Some(10), false)]);
        assert_eq!(left_out, 1, "an entry whose names alone pass the budget is counted, not kept");
        let mut done = outcome(OutcomeKind::Ok { value: None }, "", 0);
        (done.changes, done.changes_left_out) = (kept, left_out);
        assert!(done.agent_text().starts_with("Changes recorded by tools (4):\n- modify a (tools.p.t)"));
        assert!(done
            .agent_text()
            .ends_with("[1 more changes were recorded past the journal's budget of this program and not kept]"));
    }

    #[test]
    fn json_form_names_the_kind() {
        let json = serde_json::to_value(outcome(OutcomeKind::CpuLimit { limit_ms: 5 }, "", 0)).unwrap_or_default();
        assert_eq!(json["kind"], "cpu_limit");
        assert_eq!(json["limit_ms"], 5);
    }
}
