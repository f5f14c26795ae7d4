//! The plugin runtime's ops: the bridge between `plugin.js` and the host's JSON-RPC
//! stream on standard input and output.
//!
//! `plugin.js` takes these ops out of `Deno.core` before the plugin's modules load:
//!
//! - `op_plugin_recv` resolves with the host's next message (one JSON-RPC line); the
//!   event loop's park hook reads it from standard input ([`PluginLink::wait_for_host`]);
//! - `op_plugin_answer` writes the answer to a host request and marks it settled;
//! - `op_plugin_send` writes a request or notification of the plugin's own
//!   (`host/fetch`, `host/cancel`, `host/tools.changed`);
//! - `op_plugin_log` writes console output to standard error, which the host logs;
//! - `op_plugin_setup` and `op_plugin_register_driver` connect `plugin.js` to
//!   [`super::run`].
//!
//! The link also remembers which host requests are unanswered, so that a plugin stopped
//! by a limit still answers each of them with the reason ([`PluginLink::fail_in_flight`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, Write};
use std::rc::Rc;

use deno_core::{op2, v8, OpState};
use deno_error::JsErrorBox;
use futures::channel::oneshot;
use serde::Serialize;
use serde_json::{json, Value};

use crate::step_clock::StepClock;

/// What `plugin.js` learns about its plugin when it starts.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSetup {
    /// The name the host gives the plugin (`tools.<plugin>`).
    pub plugin: String,
    /// The manifest's version.
    pub version: String,
    /// The manifest asks for `tools.provide`.
    pub may_provide_tools: bool,
    /// The manifest's `net.hosts`.
    pub net_hosts: Vec<String>,
}

/// The registered driver function of `plugin.js`.
pub struct PluginDriver(pub v8::Global<v8::Function>);

/// A host request that has not been answered yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    /// Its JSON-RPC id, as the host sent it.
    pub id: Value,
    /// Its method.
    pub method: String,
    /// The tool, for `tool/call`.
    pub tool: Option<String>,
}

/// The plugin's end of the host's stream.
#[derive(Default)]
pub struct PluginLink {
    inbox: RefCell<VecDeque<String>>,
    waiter: RefCell<Option<oneshot::Sender<String>>>,
    /// Unanswered host requests, by the JSON text of their id.
    in_flight: RefCell<BTreeMap<String, InFlight>>,
    /// True once an `initialize` request arrived.
    initialize_seen: std::cell::Cell<bool>,
}

impl PluginLink {
    /// Writes one message line to the host; a host that stopped reading is gone.
    pub fn write_line(&self, line: &str) {
        let mut out = std::io::stdout().lock();
        if out.write_all(line.as_bytes()).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()).is_err() {
            crate::exit_as(protocol::worker::WorkerExit::HostGone);
        }
    }

    /// The event loop's park hook: nothing in the plugin can run until the host says
    /// something, so read the host's next line and hand it to `op_plugin_recv`. Time
    /// spent waiting does not count towards the CPU limit; each message starts
    /// a new step. The host closing the stream ends the plugin.
    pub fn wait_for_host(&self, clock: &StepClock) {
        clock.on_park();
        let line = read_host_line();
        clock.on_unpark();
        clock.new_step();
        self.note_request(&line);
        match self.waiter.borrow_mut().take() {
            Some(waiter) => {
                if let Err(line) = waiter.send(line) {
                    self.inbox.borrow_mut().push_back(line);
                }
            }
            None => self.inbox.borrow_mut().push_back(line),
        }
    }

    /// Remembers a host request until it is answered.
    fn note_request(&self, line: &str) {
        #[derive(serde::Deserialize)]
        struct Head {
            id: Option<Value>,
            method: Option<String>,
            #[serde(default)]
            params: Value,
        }
        let Ok(Head { id: Some(id), method: Some(method), params }) = serde_json::from_str::<Head>(line) else { return };
        if method == "initialize" {
            self.initialize_seen.set(true);
        }
        let tool = if method == "tool/call" { params.get("name").and_then(Value::as_str).map(str::to_string) } else { None };
        self.in_flight.borrow_mut().insert(id.to_string(), InFlight { id, method, tool });
    }

    /// Answers every unanswered host request with `reason` (a failed tool result for
    /// `tool/call`, a JSON-RPC error for the rest). If `initialize` has not arrived yet,
    /// waits for it and refuses it, so the host learns why the plugin cannot start.
    pub fn fail_in_flight(&self, reason: &dyn Fn(Option<&str>) -> String) {
        // First, so that the host sends no new call to this process: the next call
        // starts a new runtime instead of racing this one's exit.
        self.write_line(r#"{"jsonrpc":"2.0","method":"host/stopping"}"#);
        // Lines already read but not yet handled are requests too.
        let queued: Vec<String> = self.inbox.borrow_mut().drain(..).collect();
        for line in queued {
            self.note_request(&line);
        }
        loop {
            let requests: Vec<InFlight> = std::mem::take(&mut *self.in_flight.borrow_mut()).into_values().collect();
            for request in &requests {
                self.write_line(&failure_answer(request, &reason(request.tool.as_deref())).to_string());
            }
            if self.initialize_seen.get() {
                return;
            }
            self.note_request(&read_host_line());
        }
    }
}

/// The answer that fails `request` with `reason`.
fn failure_answer(request: &InFlight, reason: &str) -> Value {
    if request.method == "tool/call" {
        json!({ "jsonrpc": "2.0", "id": request.id, "result": { "content": [{ "type": "text", "text": reason }], "isError": true } })
    } else {
        json!({ "jsonrpc": "2.0", "id": request.id, "error": { "code": -32000, "message": reason } })
    }
}

/// Reads the host's next line from standard input; the host closing it ends the plugin.
fn read_host_line() -> String {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => crate::exit_now(0),
        Ok(_) => {
            let trimmed = line.trim_end_matches(['\n', '\r']).len();
            line.truncate(trimmed);
            line
        }
    }
}

fn link(state: &OpState) -> Result<Rc<PluginLink>, JsErrorBox> {
    state.try_borrow::<Rc<PluginLink>>().cloned().ok_or_else(|| JsErrorBox::generic("the plugin link is missing"))
}

#[op2]
pub fn op_plugin_register_driver(state: &mut OpState, #[scoped] driver: v8::Global<v8::Function>) {
    state.put(PluginDriver(driver));
}

#[op2]
#[serde]
pub fn op_plugin_setup(state: &mut OpState) -> Result<PluginSetup, JsErrorBox> {
    state.try_borrow::<PluginSetup>().cloned().ok_or_else(|| JsErrorBox::generic("the plugin setup is missing"))
}

#[op2]
#[string]
pub async fn op_plugin_recv(state: Rc<RefCell<OpState>>) -> Result<String, JsErrorBox> {
    let link = link(&state.borrow())?;
    if let Some(line) = link.inbox.borrow_mut().pop_front() {
        return Ok(line);
    }
    let (tx, rx) = oneshot::channel();
    *link.waiter.borrow_mut() = Some(tx);
    rx.await.map_err(|_| JsErrorBox::generic("the host stream closed"))
}

#[op2(fast)]
pub fn op_plugin_answer(state: &mut OpState, #[string] id_key: &str, #[string] line: &str) -> Result<(), JsErrorBox> {
    let link = link(state)?;
    let known = link.in_flight.borrow_mut().remove(id_key).is_some();
    // A request the runtime gave up (cancelled) is settled without an answer.
    if known && !line.is_empty() {
        link.write_line(line);
    }
    Ok(())
}

#[op2(fast)]
pub fn op_plugin_send(state: &mut OpState, #[string] line: &str) -> Result<(), JsErrorBox> {
    link(state)?.write_line(line);
    Ok(())
}

#[op2(fast)]
pub fn op_plugin_log(#[smi] level: u32, #[string] text: &str) {
    let label = match level {
        1 => "debug",
        2 => "warn",
        3 => "error",
        _ => "log",
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "[{label}] {text}");
}

deno_core::extension!(
    codemode_plugin,
    ops = [op_plugin_register_driver, op_plugin_setup, op_plugin_recv, op_plugin_answer, op_plugin_send, op_plugin_log],
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_remembered_until_answered() {
        let link = PluginLink::default();
        link.note_request(r#"{"jsonrpc":"2.0","id":7,"method":"tool/call","params":{"name":"greet","input":{}}}"#);
        link.note_request(r#"{"jsonrpc":"2.0","method":"tool/cancel","params":{"id":3}}"#);
        link.note_request(r#"{"jsonrpc":"2.0","id":"f1","result":{}}"#);
        link.note_request(r#"{"jsonrpc":"2.0","id":8,"method":"tool/call","params":[1]}"#);
        let in_flight = link.in_flight.borrow();
        assert_eq!(in_flight.len(), 2);
        assert_eq!(in_flight["8"].tool, None);
        assert_eq!(in_flight["7"], InFlight { id: json!(7), method: "tool/call".into(), tool: Some("greet".into()) });
    }

    #[test]
    fn failures_are_tool_results_for_calls_and_errors_for_the_rest() {
        let call = InFlight { id: json!(4), method: "tool/call".into(), tool: Some("spin".into()) };
        assert_eq!(failure_answer(&call, "stopped"), json!({ "jsonrpc": "2.0", "id": 4, "result": { "content": [{ "type": "text", "text": "stopped" }], "isError": true } }));
        let init = InFlight { id: json!(1), method: "initialize".into(), tool: None };
        assert_eq!(failure_answer(&init, "bad"), json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32000, "message": "bad" } }));
    }
}
