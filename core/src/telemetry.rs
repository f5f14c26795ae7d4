//! What codemode reports about its work to an operator: metrics and one log event per
//! program.
//!
//! The library records through the `metrics` facade, which does nothing until a
//! recorder is installed: `codemode serve --ops-listen` installs the Prometheus one
//! (the MCP server's operations listener, `codemode::serve::operations`, serves it). Recorded here and at their sources:
//!
//! | metric | kind | labels | recorded by |
//! |---|---|---|---|
//! | `codemode_programs_total` | counter | `outcome` (the outcome kind) | [`program_ended`] |
//! | `codemode_program_duration_seconds` | histogram | | [`program_ended`] |
//! | `codemode_programs_running` | gauge | | set when scraped |
//! | `codemode_tool_calls_total` | counter | `plugin`, `outcome` (`ok`, `tool_error`, `rejected`) | [`tool_call_ended`] |
//! | `codemode_plugin_restarts_total` | counter | `plugin` | process and MCP plugins (a new session after one closed) |
//! | `codemode_warm_workers`, `codemode_template_rss_bytes` | gauges | | set when scraped |
//! | `codemode_worker_peak_rss_bytes` | summary | | [`worker_reaped`] (each worker's peak RSS, from the kernel when it is reaped) |
//!
//! The gauges are read from the executor when scraped (`codemode::serve::operations`), not
//! kept up to date beside it.
//!
//! Labels carry only names from the configuration and the fixed outcome kinds: a
//! program calling a tool that does not exist is counted under `plugin="unknown"`, so
//! programs cannot grow the number of series.
//!
//! The program event ([`program_ended`]) goes to the log at `info` under the target
//! [`PROGRAM_LOG_TARGET`] with the program's id, caller, outcome kind, duration, tool
//! calls and sizes; the program's text only when [`set_log_program_text`] asked for it.
//! Tool inputs are never logged. It is for the operator's log, never sent to MCP
//! clients.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::outcome::{Outcome, OutcomeKind};
use crate::tool::Caller;

/// The log target of the one event per program.
pub const PROGRAM_LOG_TARGET: &str = "codemode::program";

/// Programs that ended, by outcome kind.
pub const PROGRAMS_TOTAL: &str = "codemode_programs_total";
/// How long programs took, call to outcome.
pub const PROGRAM_DURATION: &str = "codemode_program_duration_seconds";
/// Programs running now.
pub const PROGRAMS_RUNNING: &str = "codemode_programs_running";
/// Tool calls that ended, by plugin and outcome.
pub const TOOL_CALLS_TOTAL: &str = "codemode_tool_calls_total";
/// Plugins started again (or, for MCP servers, reconnected) after their process or
/// session ended, by plugin.
pub const PLUGIN_RESTARTS_TOTAL: &str = "codemode_plugin_restarts_total";
/// Workers waiting in the warm pool.
pub const WARM_WORKERS: &str = "codemode_warm_workers";
/// The template's resident memory.
pub const TEMPLATE_RSS: &str = "codemode_template_rss_bytes";

/// Each worker's peak resident memory, as the kernel reports it when the worker is
/// reaped (a summary: its `quantile="1"` is the largest).
pub const WORKER_PEAK_RSS: &str = "codemode_worker_peak_rss_bytes";

/// The buckets of [`PROGRAM_DURATION`], in seconds: 0.5 ms to 60 s.
pub const DURATION_BUCKETS: &[f64] =
    &[0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

static LOG_PROGRAM_TEXT: AtomicBool = AtomicBool::new(false);

/// Whether the program event carries the program's text (off by default: programs may
/// hold what agents read from tools).
pub fn set_log_program_text(on: bool) {
    LOG_PROGRAM_TEXT.store(on, Ordering::Relaxed);
}

/// Describes every metric once, so a scrape shows their help text.
pub fn describe() {
    metrics::describe_counter!(PROGRAMS_TOTAL, "Programs that ended, by outcome kind");
    metrics::describe_histogram!(PROGRAM_DURATION, metrics::Unit::Seconds, "Time from the call to the outcome");
    metrics::describe_gauge!(PROGRAMS_RUNNING, "Programs running now");
    metrics::describe_counter!(TOOL_CALLS_TOTAL, "Tool calls that ended, by plugin and outcome");
    metrics::describe_counter!(PLUGIN_RESTARTS_TOTAL, "Plugin processes started again after a failure");
    metrics::describe_gauge!(WARM_WORKERS, "Workers forked, locked down and waiting for a program");
    metrics::describe_gauge!(TEMPLATE_RSS, metrics::Unit::Bytes, "Resident memory of the template process");
    metrics::describe_histogram!(
        WORKER_PEAK_RSS,
        metrics::Unit::Bytes,
        "Peak resident memory of each worker, read when it was reaped"
    );
}

/// Records a reaped worker's peak resident memory (and logs it at `debug`).
pub fn worker_reaped(peak_rss_bytes: u64) {
    metrics::histogram!(WORKER_PEAK_RSS).record(peak_rss_bytes as f64);
    tracing::debug!(peak_rss_bytes, "worker peak RSS");
}

/// True when the program event carries the program's text ([`set_log_program_text`]).
pub fn logs_program_text() -> bool {
    LOG_PROGRAM_TEXT.load(Ordering::Relaxed)
}

/// Records program `id`'s end: its metrics and its log event. `code` is the program's
/// text when [`logs_program_text`], and `code_bytes` its size.
pub fn program_ended(id: u64, caller: &Caller, code_bytes: usize, code: Option<&str>, outcome: &Outcome) {
    let kind = outcome.kind.name();
    metrics::counter!(PROGRAMS_TOTAL, "outcome" => kind).increment(1);
    metrics::histogram!(PROGRAM_DURATION).record(outcome.elapsed.as_secs_f64());
    let result_bytes = match &outcome.kind {
        OutcomeKind::Ok { value } => value.as_ref().map_or(0, String::len),
        _ => 0,
    };
    tracing::info!(
        target: PROGRAM_LOG_TARGET,
        program = id,
        agent = caller.agent_id.as_deref(),
        chat = caller.chat_id.as_deref(),
        call = caller.call_id.as_deref(),
        outcome = kind,
        duration_ms = outcome.elapsed.as_secs_f64() * 1000.0,
        tool_calls = outcome.tool_calls,
        code_bytes,
        result_bytes,
        console_bytes = outcome.console.len(),
        code,
        "program ended"
    );
}

/// How a tool call ended, for [`TOOL_CALLS_TOTAL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallEnd {
    /// The tool answered.
    Ok,
    /// The tool answered with an error result.
    ToolError,
    /// The call never ran or failed: unknown tool, bad input, refused approval, a
    /// plugin failure.
    Rejected,
}

impl ToolCallEnd {
    fn label(self) -> &'static str {
        match self {
            ToolCallEnd::Ok => "ok",
            ToolCallEnd::ToolError => "tool_error",
            ToolCallEnd::Rejected => "rejected",
        }
    }
}

/// Records a tool call's end; `plugin` is `None` when no such tool exists.
pub fn tool_call_ended(plugin: Option<&str>, end: ToolCallEnd) {
    let plugin = plugin.unwrap_or("unknown").to_string();
    metrics::counter!(TOOL_CALLS_TOTAL, "plugin" => plugin, "outcome" => end.label()).increment(1);
}

/// Records that plugin `name` was started again (or reconnected) after it ended.
pub fn plugin_restarted(name: &str) {
    metrics::counter!(PLUGIN_RESTARTS_TOTAL, "plugin" => name.to_string()).increment(1);
}
