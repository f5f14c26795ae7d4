//! The worker's only ops: the bridge between the program's JavaScript and the host.
//!
//! `bootstrap.js` takes these ops out of `Deno.core` before user code runs, so a
//! program reaches them only through `tools.<plugin>.<tool>(...)` and `console.*`:
//!
//! - `op_codemode_tool_call` writes a tool call to the host and resolves with its
//!   answer, after checking the input against the program's budget of tool data in
//!   flight (an input over it never leaves the worker);
//! - `op_codemode_console` forwards console output up to the console cap;
//! - `op_codemode_register_entropy` hands Rust the bootstrap's reseeder, which every
//!   program's fresh entropy goes through before the program is compiled;
//! - `op_codemode_register_driver`, `op_codemode_register_describer`,
//!   `op_codemode_program` and `op_codemode_finish` connect the bootstrap's driver to
//!   [`crate::program`]: the driver reports every way a program ends through
//!   `op_codemode_finish`, which [`crate::program`] waits for;
//! - `op_codemode_out_of_memory` stops the program at its memory limit when the engine
//!   failed an allocation it does not count in its heap.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use deno_core::{op2, v8, OpState};
use deno_error::JsErrorBox;
use futures::channel::oneshot;
use protocol::cost::{json_cost, mib};
use protocol::{ConsoleLevel, JsFailure, PluginTools, ToolAnswer, WorkerChannel, WorkerToHost};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::memory::MemoryTrip;
use crate::step_clock::StepClock;

/// Per-process link between the ops and the host: present once a program started.
pub struct HostLink {
    /// The worker's end of its channel, for sending.
    pub channel: RefCell<WorkerChannel>,
    /// Tool calls waiting for their answer, by call id.
    pub pending: RefCell<HashMap<u64, oneshot::Sender<ToolAnswer>>>,
    /// The calls whose answers the program's JavaScript had not seen when it ended
    /// (reported by the driver before the outcome; the first report counts).
    pub in_flight_at_end: RefCell<Option<Vec<u64>>>,
    console_left: Cell<u64>,
    console_dropped: Cell<u64>,
    /// The program's budget of tool data in flight ([`json_cost`] of the inputs).
    tool_budget: u64,
    /// What the calls in flight use of it.
    tool_in_flight: Cell<u64>,
    /// When the program reached each step (sent with its outcome).
    pub times: Cell<protocol::WorkerTimes>,
}

impl HostLink {
    /// A link that forwards at most `console_bytes` of console output and lets the
    /// program have `tool_budget` of tool inputs in flight.
    pub fn new(channel: WorkerChannel, console_bytes: u64, tool_budget: u64) -> Self {
        Self {
            channel: RefCell::new(channel),
            pending: RefCell::new(HashMap::new()),
            in_flight_at_end: RefCell::new(None),
            console_left: Cell::new(console_bytes),
            console_dropped: Cell::new(0),
            tool_budget,
            tool_in_flight: Cell::new(0),
            times: Cell::new(protocol::WorkerTimes::default()),
        }
    }

    /// Reserves `cost` of the tool budget for a call of `plugin.tool`, or says why not.
    fn reserve(&self, plugin: &str, tool: &str, cost: u64) -> Result<(), String> {
        let used = self.tool_in_flight.get();
        if cost > self.tool_budget {
            return Err(format!(
                "tools.{plugin}.{tool}: the input is {} (its JSON text plus what holding it parsed takes), more than the {} of tool data a program may have in flight; send less per call",
                mib(cost),
                mib(self.tool_budget)
            ));
        }
        if cost > self.tool_budget - used.min(self.tool_budget) {
            return Err(format!(
                "tools.{plugin}.{tool}: {} of tool data is already in flight and this input adds {}, more than the {} a program may have in flight; await some calls before starting more",
                mib(used),
                mib(cost),
                mib(self.tool_budget)
            ));
        }
        self.tool_in_flight.set(used + cost);
        Ok(())
    }

    /// Console bytes not forwarded because the cap was reached.
    pub fn console_dropped(&self) -> u64 {
        self.console_dropped.get()
    }

    /// Sends a message; a host that is gone ends the worker at once (nobody is left to
    /// read the outcome).
    pub fn send(&self, message: &WorkerToHost) {
        if self.channel.borrow_mut().send_to_host(message).is_err() {
            crate::exit_as(protocol::worker::WorkerExit::HostGone);
        }
    }
}

/// What the driver asks for when it starts: the program's catalog and form.
#[derive(Serialize)]
pub struct ProgramSpec {
    /// The tools, grouped by plugin.
    pub catalog: Vec<PluginTools>,
    /// True when a function value the program evaluates to is called with `tools` (one
    /// expression, or `export default`).
    pub calls_function_value: bool,
    /// Text inserted around the program, `[line, at, by, ...]` (for stack positions).
    pub positions: Vec<u32>,
    /// A warm worker's rehearsal ([`crate::program::rehearse`]): `tools` is built but not
    /// made a global, so the program that follows defines it.
    pub rehearsal: bool,
}

/// The registered driver function of `bootstrap.js`.
pub struct Driver(pub v8::Global<v8::Function>);

/// The registered describer of `bootstrap.js`: thrown value and insertions in, JSON out.
pub struct Describer(pub v8::Global<v8::Function>);

/// The registered reseeder of `bootstrap.js`: four 32-bit words of fresh entropy in,
/// `Math.random`'s state replaced.
pub struct Reseeder(pub v8::Global<v8::Function>);

/// What the driver reported at the end of a program.
#[derive(Debug)]
pub enum Finish {
    /// The program returned `undefined`.
    Undefined,
    /// The program returned this JSON text.
    Json(String),
    /// The returned value cannot be written as JSON.
    Unserializable(String),
    /// The program threw.
    Threw(JsFailure),
}

/// How a program ended, as the driver reported it; [`crate::program`] waits for
/// `done`.
#[derive(Default)]
pub struct Finishing {
    /// The program's own end: its value or what it threw (the first report).
    pub finish: Option<Finish>,
    /// The first promise it left rejected with nothing to handle it.
    pub unhandled: Option<JsFailure>,
    /// Fired at the first report.
    pub done: Option<oneshot::Sender<()>>,
}

#[op2]
pub fn op_codemode_register_driver(state: &mut OpState, #[scoped] driver: v8::Global<v8::Function>) {
    state.put(Driver(driver));
}

#[op2]
pub fn op_codemode_register_describer(state: &mut OpState, #[scoped] describer: v8::Global<v8::Function>) {
    state.put(Describer(describer));
}

#[op2]
pub fn op_codemode_register_entropy(state: &mut OpState, #[scoped] reseed: v8::Global<v8::Function>) {
    state.put(Reseeder(reseed));
}

#[op2]
#[serde]
pub fn op_codemode_program(state: &mut OpState) -> Result<ProgramSpec, JsErrorBox> {
    state.try_take::<ProgramSpec>().ok_or_else(|| JsErrorBox::generic("no program to run"))
}

/// A failure as the driver wrote it (JSON); a report that does not parse is described
/// as such instead of being lost.
fn failure(payload: &str) -> JsFailure {
    serde_json::from_str(payload).unwrap_or_else(|e| JsFailure {
        name: "Error".into(),
        message: format!("the program threw something its description could not carry: {e}"),
        stack: None,
        line: None,
        column: None,
        unhandled_rejection: false,
    })
}

#[op2(fast)]
pub fn op_codemode_finish(state: &mut OpState, #[string] kind: &str, #[string] payload: String) {
    let Some(finishing) = state.try_borrow_mut::<Finishing>() else { return };
    if kind == "unhandled" {
        if finishing.unhandled.is_none() {
            finishing.unhandled = Some(JsFailure { unhandled_rejection: true, ..failure(&payload) });
        }
    } else if finishing.finish.is_none() {
        finishing.finish = Some(match kind {
            "undefined" => Finish::Undefined,
            "json" => Finish::Json(payload),
            "threw" => Finish::Threw(failure(&payload)),
            _ => Finish::Unserializable(payload),
        });
    }
    if let Some(done) = finishing.done.take() {
        let _ = done.send(());
    }
}

/// The calls in flight as the program ends, as its JavaScript sees them: `ids`
/// separated by commas.
#[op2(fast)]
pub fn op_codemode_calls_in_flight(state: &mut OpState, #[string] ids: &str) {
    let Some(link) = state.try_borrow::<Rc<HostLink>>() else { return };
    let mut kept = link.in_flight_at_end.borrow_mut();
    if kept.is_none() {
        *kept = Some(ids.split(',').filter_map(|id| id.parse().ok()).collect());
    }
}

#[op2(fast)]
pub fn op_codemode_out_of_memory(state: &mut OpState) {
    if let Some(trip) = state.try_borrow::<MemoryTrip>() {
        trip.trip();
    }
}

#[op2(fast)]
pub fn op_codemode_console(state: &mut OpState, level: u32, #[string] text: String) {
    let Some(link) = state.try_borrow::<Rc<HostLink>>() else { return };
    let level = match level {
        1 => ConsoleLevel::Debug,
        2 => ConsoleLevel::Warn,
        3 => ConsoleLevel::Error,
        _ => ConsoleLevel::Log,
    };
    // One byte for the newline the host puts after each line.
    let cost = text.len() as u64 + 1;
    let left = link.console_left.get();
    if cost <= left {
        link.console_left.set(left - cost);
        link.send(&WorkerToHost::Console { level, text });
    } else {
        // Forward what fits (cut on a character boundary), drop and count the rest.
        let mut cut = usize::try_from(left.saturating_sub(1)).unwrap_or(usize::MAX).min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let kept = if cut > 0 {
            link.send(&WorkerToHost::Console { level, text: text[..cut].to_string() });
            cut as u64 + 1
        } else {
            0
        };
        link.console_left.set(0);
        link.console_dropped.set(link.console_dropped.get() + cost - kept);
    }
}

#[op2]
#[string]
pub async fn op_codemode_tool_call(
    state: Rc<RefCell<OpState>>,
    #[string] plugin: String,
    #[string] tool: String,
    #[string] input: String,
    call_id: f64,
) -> Result<String, JsErrorBox> {
    let link = state
        .borrow()
        .try_borrow::<Rc<HostLink>>()
        .cloned()
        .ok_or_else(|| JsErrorBox::generic("tools are not available"))?;
    let cost = json_cost(&input);
    link.reserve(&plugin, &tool, cost).map_err(JsErrorBox::range_error)?;
    let input = match RawValue::from_string(input) {
        Ok(input) => input,
        Err(e) => {
            link.tool_in_flight.set(link.tool_in_flight.get().saturating_sub(cost));
            return Err(JsErrorBox::type_error(format!("tool input is not JSON: {e}")));
        }
    };
    // The driver numbers the calls (1, 2, ...), so that it can say which it has not
    // seen answered when the program ends.
    let call_id = call_id as u64;
    if link.pending.borrow().contains_key(&call_id) {
        link.tool_in_flight.set(link.tool_in_flight.get().saturating_sub(cost));
        return Err(JsErrorBox::generic(format!("tool call {call_id} is already in flight")));
    }
    let (tx, rx) = oneshot::channel();
    link.pending.borrow_mut().insert(call_id, tx);
    link.send(&WorkerToHost::ToolCall { call_id, plugin, tool, input });
    let answer = rx.await;
    link.tool_in_flight.set(link.tool_in_flight.get().saturating_sub(cost));
    match answer {
        Ok(ToolAnswer::Resolve(value)) => Ok(value.get().to_string()),
        Ok(ToolAnswer::Reject(message)) => Err(JsErrorBox::generic(message)),
        Err(_) => Err(JsErrorBox::generic("the host dropped this tool call")),
    }
}

/// `Atomics.wait` is about to block the thread, or is back (see [`StepClock::report_blocking`]).
#[op2(fast)]
pub fn op_codemode_blocking(state: &mut OpState, blocking: bool) {
    StepClock::report_blocking(state, blocking);
}

deno_core::extension!(
    codemode,
    ops = [
        op_codemode_blocking,
        op_codemode_register_driver,
        op_codemode_register_describer,
        op_codemode_register_entropy,
        op_codemode_program,
        op_codemode_finish,
        op_codemode_calls_in_flight,
        op_codemode_out_of_memory,
        op_codemode_console,
        op_codemode_tool_call,
    ],
);
