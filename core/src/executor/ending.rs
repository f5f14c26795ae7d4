//! How a program's end becomes its [`Outcome`]: what the worker reported, or how serving
//! it stopped (the wall clock, a cancellation, a broken or vanished worker, read with
//! its exit status). One function decides it all ([`outcome_kind`]).

use std::time::{Duration, Instant};

use protocol::worker::WorkerExit;
use protocol::WorkerOutcome;

use crate::limits::Limits;
use crate::outcome::{Outcome, OutcomeKind};
use crate::worker_process::ExitStatus;

/// How serving a worker stopped.
pub(super) enum Ended {
    /// The worker reported its outcome (and dropped this many console bytes).
    Finished(WorkerOutcome, u64),
    /// The wall-clock limit passed.
    WallClock,
    /// The program made more tool calls than it may.
    ToolCalls,
    /// The host's CPU for the program's built-in calls passed its limit.
    HostCpu,
    /// The caller cancelled.
    Cancelled,
    /// The worker broke the protocol (garbage, oversized frame, wrong message).
    Broken(String),
    /// The channel closed without an outcome.
    Disconnected(String),
}

/// The outcome kind for how serving stopped (`ended`), given how the worker exited
/// (waited for only when the channel closed without an outcome), and the console bytes
/// the worker dropped.
pub(super) fn outcome_kind(
    ended: Ended,
    status: Option<&std::io::Result<ExitStatus>>,
    limits: &Limits,
) -> (OutcomeKind, u64) {
    match ended {
        Ended::Finished(outcome, dropped) => (from_worker(outcome, limits), dropped),
        Ended::WallClock => (OutcomeKind::WallClockLimit { limit_ms: millis(limits.wall_clock) }, 0),
        Ended::ToolCalls => (OutcomeKind::ToolCallLimit { limit: limits.tool_calls }, 0),
        Ended::HostCpu => (OutcomeKind::HostCpuLimit { limit_ms: millis(limits.host_cpu) }, 0),
        Ended::Cancelled => (error("Cancelled", "the program was cancelled"), 0),
        Ended::Broken(reason) => (OutcomeKind::WorkerCrash { reason }, 0),
        Ended::Disconnected(_) if exited_as(status, WorkerExit::CpuLimit) => (OutcomeKind::CpuLimit { limit_ms: millis(limits.cpu_step) }, 0),
        Ended::Disconnected(_) if exited_as(status, WorkerExit::SetupFailed) => (
            OutcomeKind::Internal { reason: "the worker could not set up its sandbox or engine; run `codemode sandbox-check`, and see the worker's message above".into() },
            0,
        ),
        Ended::Disconnected(_) if exited_as(status, WorkerExit::Aborted) => (OutcomeKind::MemoryLimit { limit_bytes: limits.memory_bytes }, 0),
        Ended::Disconnected(_) if exited_as(status, WorkerExit::Panicked) => (
            OutcomeKind::Internal { reason: "the worker failed (a bug in codemode, not in the program) before it could report; its message is in codemode's log".into() },
            0,
        ),
        Ended::Disconnected(detail) => (
            OutcomeKind::WorkerCrash {
                reason: match status {
                    Some(Ok(status)) => {
                        format!("the worker ended with {status} before reporting an outcome ({detail})")
                    }
                    Some(Err(e)) => {
                        format!("the worker vanished before reporting an outcome ({detail}; wait failed: {e})")
                    }
                    None => format!("the worker vanished before reporting an outcome ({detail})"),
                },
            },
            0,
        ),
    }
}

/// True when the worker exited with the code that stands for `reason`.
fn exited_as(status: Option<&std::io::Result<ExitStatus>>, reason: WorkerExit) -> bool {
    matches!(status, Some(Ok(ExitStatus::Code(code))) if WorkerExit::from_code(*code) == Some(reason))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// An error outcome with no position.
pub(super) fn error(name: &str, message: &str) -> OutcomeKind {
    OutcomeKind::Error {
        name: name.into(),
        message: message.into(),
        stack: None,
        line: None,
        column: None,
        unhandled_rejection: false,
    }
}

/// The outcome of a program that ended before it reached a worker.
pub(super) fn without_worker(started: Instant, kind: OutcomeKind) -> Outcome {
    Outcome {
        kind,
        console: String::new(),
        console_dropped_bytes: 0,
        tool_calls: 0,
        elapsed: started.elapsed(),
        sandbox_missing: Vec::new(),
        unawaited_calls: Vec::new(),
        phases: None,
        changes: Vec::new(),
        changes_left_out: 0,
    }
}

fn from_worker(outcome: WorkerOutcome, limits: &Limits) -> OutcomeKind {
    match outcome {
        WorkerOutcome::Returned(value) => OutcomeKind::Ok { value: Some(value.get().to_string()) },
        WorkerOutcome::ReturnedUndefined => OutcomeKind::Ok { value: None },
        WorkerOutcome::Threw(f) => OutcomeKind::Error {
            name: f.name,
            message: f.message,
            stack: f.stack,
            line: f.line,
            column: f.column,
            unhandled_rejection: f.unhandled_rejection,
        },
        WorkerOutcome::Unserializable(message) => error("TypeError", &message),
        WorkerOutcome::Internal(reason) => OutcomeKind::Internal { reason },
        WorkerOutcome::ResultTooLarge { bytes } => {
            OutcomeKind::ResultTooLarge { limit_bytes: limits.result_bytes, bytes }
        }
        WorkerOutcome::MemoryLimit => OutcomeKind::MemoryLimit { limit_bytes: limits.memory_bytes },
        WorkerOutcome::CpuLimit => OutcomeKind::CpuLimit { limit_ms: millis(limits.cpu_step) },
        WorkerOutcome::Stuck => OutcomeKind::Stuck,
    }
}
