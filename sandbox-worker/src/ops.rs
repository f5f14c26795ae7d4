//! The worker's only ops: the bridge between the program's JavaScript and the host.
//!
//! `bootstrap.js` takes these five ops out of `Deno.core` before user code runs, so a
//! program reaches them only through `tools.<plugin>.<tool>(...)` and `console.*`:
//!
//! - `op_codemode_tool_call` writes a tool call to the host and resolves with its answer;
//! - `op_codemode_console` forwards console output up to the console cap;
//! - `op_codemode_register_driver`, `op_codemode_program` and `op_codemode_finish` connect
//!   the bootstrap's driver to [`crate::program`].

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use deno_error::JsErrorBox;
use deno_core::{op2, v8, OpState};
use protocol::{ConsoleLevel, PluginTools, ToolAnswer, WorkerChannel, WorkerToHost};
use serde::Serialize;
use serde_json::value::RawValue;
use futures::channel::oneshot;

/// Per-process link between the ops and the host: present once a program started.
pub struct HostLink {
    /// The worker's end of its channel, for sending.
    pub channel: RefCell<WorkerChannel>,
    /// Tool calls waiting for their answer, by call id.
    pub pending: RefCell<HashMap<u64, oneshot::Sender<ToolAnswer>>>,
    next_call_id: Cell<u64>,
    console_left: Cell<u64>,
    console_dropped: Cell<u64>,
}

impl HostLink {
    /// A link that forwards at most `console_bytes` of console output.
    pub fn new(channel: WorkerChannel, console_bytes: u64) -> Self {
        Self {
            channel: RefCell::new(channel),
            pending: RefCell::new(HashMap::new()),
            next_call_id: Cell::new(1),
            console_left: Cell::new(console_bytes),
            console_dropped: Cell::new(0),
        }
    }

    /// Console bytes not forwarded because the cap was reached.
    pub fn console_dropped(&self) -> u64 {
        self.console_dropped.get()
    }

    /// Sends a message; a host that is gone ends the worker at once (nobody is left to
    /// read the outcome).
    pub fn send(&self, message: &WorkerToHost) {
        if self.channel.borrow_mut().send_to_host(message).is_err() {
            crate::exit_now(crate::EXIT_HOST_GONE);
        }
    }
}

/// What the driver asks for when it starts: the program's catalog and form.
#[derive(Serialize)]
pub struct ProgramSpec {
    /// The tools, grouped by plugin.
    pub catalog: Vec<PluginTools>,
    /// True when the program is one expression (whose function value is called with `tools`).
    pub expression: bool,
    /// Length of the wrapper's text before the program on line 1 (for stack positions).
    pub line1_prefix: usize,
}

/// The registered driver function of `bootstrap.js`.
pub struct Driver(pub v8::Global<v8::Function>);

/// What the driver reported at the end of a program.
#[derive(Debug)]
pub enum Finish {
    /// The program returned `undefined`.
    Undefined,
    /// The program returned this JSON text.
    Json(String),
    /// The returned value cannot be written as JSON.
    Unserializable(String),
}

#[op2]
pub fn op_codemode_register_driver(state: &mut OpState, #[scoped] driver: v8::Global<v8::Function>) {
    state.put(Driver(driver));
}

#[op2]
#[serde]
pub fn op_codemode_program(state: &mut OpState) -> Result<ProgramSpec, JsErrorBox> {
    state.try_take::<ProgramSpec>().ok_or_else(|| JsErrorBox::generic("no program to run"))
}

#[op2(fast)]
pub fn op_codemode_finish(state: &mut OpState, #[string] kind: &str, #[string] payload: String) {
    let finish = match kind {
        "undefined" => Finish::Undefined,
        "json" => Finish::Json(payload),
        _ => Finish::Unserializable(payload),
    };
    state.put(finish);
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
) -> Result<String, JsErrorBox> {
    let link = state.borrow().try_borrow::<Rc<HostLink>>().cloned().ok_or_else(|| JsErrorBox::generic("tools are not available"))?;
    let input = RawValue::from_string(input).map_err(|e| JsErrorBox::type_error(format!("tool input is not JSON: {e}")))?;
    let call_id = link.next_call_id.get();
    link.next_call_id.set(call_id + 1);
    let (tx, rx) = oneshot::channel();
    link.pending.borrow_mut().insert(call_id, tx);
    link.send(&WorkerToHost::ToolCall { call_id, plugin, tool, input });
    match rx.await {
        Ok(ToolAnswer::Resolve(value)) => Ok(value.get().to_string()),
        Ok(ToolAnswer::Reject(message)) => Err(JsErrorBox::generic(message)),
        Err(_) => Err(JsErrorBox::generic("the host dropped this tool call")),
    }
}

deno_core::extension!(
    codemode,
    ops = [
        op_codemode_register_driver,
        op_codemode_program,
        op_codemode_finish,
        op_codemode_console,
        op_codemode_tool_call,
    ],
);
