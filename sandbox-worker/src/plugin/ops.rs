//! The plugin runtime's ops: the bridge between `plugin.js` and the host's JSON-RPC
//! stream on standard input and output.
//!
//! Every line is read and written here with the typed messages of
//! [`protocol::plugin`]; `plugin.js` never sees JSON-RPC. It receives [`Delivery`]
//! values (a host request under a *ticket*, a cancellation, the answer to one of its own
//! requests) and answers through one op per kind of answer:
//!
//! - `op_plugin_recv` resolves with the next [`Delivery`]; the event loop's park hook
//!   reads the host's line from standard input ([`PluginLink::wait_for_host`]);
//! - `op_plugin_answer_initialize`, `op_plugin_answer_tools` and `op_plugin_answer_call`
//!   answer the host's requests (a tool's result is checked against MCP's
//!   `CallToolResult` here, so a malformed one fails the call with the reason);
//! - `op_plugin_fetch`, `op_plugin_approve`, `op_plugin_sample` and
//!   `op_plugin_cancel_request` are the plugin's own requests (`host/fetch`,
//!   `host/approve`, `host/sample`, `host/cancel`); `op_plugin_host_service` sends a
//!   call's `host/workspace` and `host/artifacts`;
//!   `op_plugin_tools_changed` announces a changed tool list; `op_plugin_progress`
//!   says how a running call is going (`host/progress`);
//! - `op_plugin_log` writes console output to standard error, which the host logs;
//! - `op_plugin_timers` tells the link the next timer deadline: the wait for the host
//!   ends then, with a `timers` delivery;
//! - `op_plugin_require` and `op_plugin_module_source` serve `plugin.js`'s CommonJS
//!   runtime from the plugin's modules ([`super::modules`]); `op_plugin_random` gives
//!   `crypto` its random bytes; `op_plugin_url_parse` and `op_plugin_url_set` are the
//!   WHATWG URL parser behind `URL`;
//! - `op_plugin_setup` and `op_plugin_register_driver` connect `plugin.js` to
//!   [`super::run`].
//!
//! The link remembers which host requests are unanswered, so that a plugin stopped by a
//! limit still answers each of them with the reason ([`PluginLink::fail_in_flight`]).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use deno_core::{op2, v8, OpState, ToJsBuffer};
use deno_error::JsErrorBox;
use futures::channel::oneshot;
use protocol::mcp::CallToolResult;
use protocol::plugin::{
    ApproveParams, ApproveResult, CallContext, FetchParams, FetchResult, HostMessage, HostRequest, InitializeParams,
    InitializeResult, Outgoing, PluginNotification, PluginRequest, ProgressParams, RequestId, RpcError, SampleParams,
    SampleResult, ToolsListResult,
};
use serde::Serialize;
use serde_json::{Map, Value};

use super::modules::{PluginModules, Required};

use crate::step_clock::StepClock;

/// What `plugin.js` learns about its plugin when it starts.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSetup {
    /// The name the host gives the plugin (`tools.<plugin>`).
    pub plugin: String,
    /// The plugin's version (its manifest's, when it has one).
    pub version: String,
    /// Its format (`manifest`, `zhin`, `plico`, `globals`, `podcode`).
    pub format: &'static str,
    /// It may register tools (a manifest asks for `tools.provide`; the other formats
    /// exist to provide tools).
    pub may_provide_tools: bool,
    /// Its settings, from `initialize`.
    pub settings: Map<String, Value>,
    /// What its layout holds that is not loaded, each with why (reported at load).
    pub skipped: Vec<String>,
}

/// The registered driver function of `plugin.js`.
pub struct PluginDriver(pub v8::Global<v8::Function>);

/// A host request that has not been answered yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    /// Its JSON-RPC id, as the host sent it.
    pub id: RequestId,
    /// The tool, for `tool/call`.
    pub tool: Option<String>,
}

/// One thing for `plugin.js` to handle, already read and checked.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Delivery {
    /// `initialize`: answer with `op_plugin_answer_initialize`.
    Initialize { ticket: u32 },
    /// `tools/list`: answer with `op_plugin_answer_tools`.
    ToolsList { ticket: u32 },
    /// `tool/call`: answer with `op_plugin_answer_call` (the context boxed: it is the
    /// largest part of any delivery).
    Call { ticket: u32, name: String, input: Value, context: Box<CallContext> },
    /// `tool/cancel` of a call still running: abort it (it needs no answer any more).
    Cancel { ticket: u32 },
    /// The earliest timer is due.
    Timers,
    /// The host's answer to `host/fetch` number `request`.
    Fetched { request: u32, response: FetchedResponse },
    /// The host's answer to `host/approve` number `request`.
    Approved { request: u32, approved: bool, reason: Option<String> },
    /// The host refused one of the plugin's own requests, or answered it with
    /// something this runtime cannot read.
    Refused { request: u32, message: String },
    /// The host's answer to `host/sample` number `request`: the model's answer.
    Sampled { request: u32, answer: SampleResult },
    /// The host's answer to `host/workspace` or `host/artifacts` number `request`.
    Served { request: u32, result: Value },
}

/// A `host/fetch` answer as `Response` reads it: the body as text when it is UTF-8,
/// otherwise as bytes (decoded here, not in JavaScript).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchedResponse {
    status: u16,
    status_text: String,
    url: String,
    headers: Vec<(String, String)>,
    text: Option<String>,
    /// Arrives in JavaScript as a `Uint8Array`.
    #[serde(serialize_with = "as_js_bytes")]
    bytes: Option<Vec<u8>>,
}

fn as_js_bytes<S: serde::Serializer>(bytes: &Option<Vec<u8>>, serializer: S) -> Result<S::Ok, S::Error> {
    bytes.clone().map(ToJsBuffer::from).serialize(serializer)
}

impl FetchedResponse {
    fn from_result(result: FetchResult) -> Result<Self, String> {
        let bytes = match result.body_base64 {
            Some(encoded) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(encoded.as_bytes())
                    .map_err(|e| format!("the host's answer carries a body that is not base64: {e}"))?,
            ),
            None => None,
        };
        let text = if bytes.is_none() { Some(result.body.unwrap_or_default()) } else { None };
        Ok(Self {
            status: result.status,
            status_text: result.status_text,
            url: result.url,
            headers: result.headers,
            text,
            bytes,
        })
    }
}

/// What one of the plugin's own requests was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnRequest {
    Fetch,
    Approve,
    Sample,
    Workspace,
    Artifacts,
}

/// The host's stream on standard input, read a line at a time, with a time limit when
/// a timer is waiting.
pub struct HostReader {
    reader: BufReader<std::fs::File>,
}

impl HostReader {
    /// Standard input, which this process reads through nothing else.
    pub fn stdin() -> Self {
        // SAFETY: descriptor 0 is open for the process's whole life (the host holds its
        // other end), and only this reader reads it.
        let fd = unsafe { OwnedFd::from_raw_fd(0) };
        Self { reader: BufReader::new(std::fs::File::from(fd)) }
    }

    /// The host's next line; `None` when `within` passed first. The host closing the
    /// stream ends the plugin.
    fn line(&mut self, within: Option<Duration>) -> Option<String> {
        if let Some(limit) = within {
            let due = Instant::now() + limit;
            while !self.reader.buffer().contains(&b'\n') {
                let left = due.saturating_duration_since(Instant::now());
                let timeout = nix::poll::PollTimeout::try_from(left).unwrap_or(nix::poll::PollTimeout::MAX);
                let file = self.reader.get_ref();
                let mut fds = [nix::poll::PollFd::new(file.as_fd(), nix::poll::PollFlags::POLLIN)];
                match nix::poll::poll(&mut fds, timeout) {
                    Ok(0) => return None,
                    // A signal woke the wait early: wait for the rest of the time.
                    Err(nix::errno::Errno::EINTR) => continue,
                    _ => break,
                }
            }
        }
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => crate::exit_now(0),
            Ok(_) => {
                let trimmed = line.trim_end_matches(['\n', '\r']).len();
                line.truncate(trimmed);
                Some(line)
            }
        }
    }
}

/// The plugin's end of the host's stream.
pub struct PluginLink {
    reader: RefCell<HostReader>,
    /// When the earliest timer is due.
    timer: Cell<Option<Instant>>,
    inbox: RefCell<VecDeque<Delivery>>,
    waiter: RefCell<Option<oneshot::Sender<Delivery>>>,
    /// Unanswered host requests, by ticket.
    in_flight: RefCell<BTreeMap<u32, InFlight>>,
    next_ticket: Cell<u32>,
    /// The plugin's own requests still waiting for the host, by number.
    own: RefCell<BTreeMap<u32, OwnRequest>>,
    next_own: Cell<u32>,
    /// True once an `initialize` request arrived.
    initialize_seen: Cell<bool>,
}

impl PluginLink {
    /// The link over `reader`.
    pub fn new(reader: HostReader) -> Self {
        Self {
            reader: RefCell::new(reader),
            timer: Cell::new(None),
            inbox: RefCell::default(),
            waiter: RefCell::default(),
            in_flight: RefCell::default(),
            next_ticket: Cell::new(0),
            own: RefCell::default(),
            next_own: Cell::new(0),
            initialize_seen: Cell::new(false),
        }
    }

    /// Reads the host's messages until `initialize` arrives (it carries the plugin's
    /// settings, which the plugin's code may read as soon as it runs) and returns its
    /// parameters; it and anything before it wait in the inbox for `plugin.js`.
    pub fn wait_for_initialize(&self) -> InitializeParams {
        loop {
            let line = self.reader.borrow_mut().line(None).unwrap_or_default();
            let params = match HostMessage::parse(&line) {
                Ok(HostMessage::Request(_, HostRequest::Initialize(params))) => Some(params),
                _ => None,
            };
            if let Some(delivery) = self.read(&line) {
                self.inbox.borrow_mut().push_back(delivery);
            }
            if let Some(params) = params {
                return params;
            }
        }
    }

    /// Writes one message to the host; a host that stopped reading is gone.
    fn write(&self, message: &Outgoing) {
        let line = message.to_line();
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
        let within = self.timer.get().map(|due| due.saturating_duration_since(Instant::now()));
        let line = self.reader.borrow_mut().line(within);
        clock.on_unpark();
        let delivery = match line {
            Some(line) => {
                // Only a host message starts a new step: JavaScript run by timers counts
                // towards the step it runs in, so a plugin cannot keep a core busy
                // between calls with an interval.
                clock.new_step();
                self.read(&line)
            }
            None => {
                self.timer.set(None);
                Some(Delivery::Timers)
            }
        };
        let Some(delivery) = delivery else { return };
        match self.waiter.borrow_mut().take() {
            Some(waiter) => {
                if let Err(delivery) = waiter.send(delivery) {
                    self.inbox.borrow_mut().push_back(delivery);
                }
            }
            None => self.inbox.borrow_mut().push_back(delivery),
        }
    }

    /// Reads one host line: remembers a request until it is answered and returns what
    /// `plugin.js` must handle. What needs no JavaScript (an unknown method, a request
    /// whose parameters do not parse, a stray answer) is answered or dropped here.
    fn read(&self, line: &str) -> Option<Delivery> {
        let message = match HostMessage::parse(line) {
            Ok(message) => message,
            Err((id, why)) => {
                log(3, &why);
                if let Some(id) = id {
                    self.write(&Outgoing::Answer(id, Err(RpcError::new(why))));
                }
                return None;
            }
        };
        match message {
            HostMessage::Request(id, request) => {
                let ticket = self.next_ticket.get().wrapping_add(1);
                self.next_ticket.set(ticket);
                let (tool, delivery) = match request {
                    HostRequest::Initialize(_) => {
                        self.initialize_seen.set(true);
                        (None, Delivery::Initialize { ticket })
                    }
                    HostRequest::ToolsList => (None, Delivery::ToolsList { ticket }),
                    HostRequest::ToolCall(call) => (
                        Some(call.name.clone()),
                        Delivery::Call { ticket, name: call.name, input: call.input, context: Box::new(call.context) },
                    ),
                };
                self.in_flight.borrow_mut().insert(ticket, InFlight { id, tool });
                Some(delivery)
            }
            HostMessage::UnknownRequest(id, method) => {
                self.write(&Outgoing::Answer(
                    id,
                    Err(RpcError::unknown_method(format!("this plugin runtime does not know the method {method}"))),
                ));
                None
            }
            HostMessage::Cancel(id) => {
                let mut in_flight = self.in_flight.borrow_mut();
                let ticket = in_flight
                    .iter()
                    .find(|(_, request)| request.id == id && request.tool.is_some())
                    .map(|(ticket, _)| *ticket)?;
                // Given up by the host: it reads no answer, so none is written.
                in_flight.remove(&ticket);
                Some(Delivery::Cancel { ticket })
            }
            HostMessage::Response(id, answer) => {
                let request = own_number(&id)?;
                let kind = self.own.borrow_mut().remove(&request)?;
                Some(match (kind, answer) {
                    (_, Err(error)) => Delivery::Refused { request, message: error.message },
                    (OwnRequest::Fetch, Ok(result)) => {
                        match serde_json::from_value::<FetchResult>(result)
                            .map_err(|e| format!("the host's answer to host/fetch is malformed: {e}"))
                            .and_then(FetchedResponse::from_result)
                        {
                            Ok(response) => Delivery::Fetched { request, response },
                            Err(message) => Delivery::Refused { request, message },
                        }
                    }
                    (OwnRequest::Sample, Ok(result)) => match serde_json::from_value::<SampleResult>(result) {
                        Ok(answer) => Delivery::Sampled { request, answer },
                        Err(e) => Delivery::Refused {
                            request,
                            message: format!("the host's answer to host/sample is malformed: {e}"),
                        },
                    },
                    (OwnRequest::Approve, Ok(result)) => match serde_json::from_value::<ApproveResult>(result) {
                        Ok(answer) => Delivery::Approved { request, approved: answer.approved, reason: answer.reason },
                        Err(e) => Delivery::Refused {
                            request,
                            message: format!("the host's answer to host/approve is malformed: {e}"),
                        },
                    },
                    (OwnRequest::Workspace | OwnRequest::Artifacts, Ok(result)) => Delivery::Served { request, result },
                })
            }
            HostMessage::Other(_) => None,
        }
    }

    /// Takes a host request out of the unanswered ones; `None` when it was given up.
    fn settle(&self, ticket: u32) -> Option<InFlight> {
        self.in_flight.borrow_mut().remove(&ticket)
    }

    /// Sends one of the plugin's own requests and returns its number.
    fn ask(&self, kind: OwnRequest, request: PluginRequest) -> u32 {
        let number = self.next_own.get().wrapping_add(1);
        self.next_own.set(number);
        self.own.borrow_mut().insert(number, kind);
        self.write(&Outgoing::PluginRequest(own_id(request.method(), number), request));
        number
    }

    /// Answers every unanswered host request with `reason` (a failed tool result for
    /// `tool/call`, a JSON-RPC error for the rest). If `initialize` has not arrived yet,
    /// waits for it and refuses it, so the host learns why the plugin cannot start.
    pub fn fail_in_flight(&self, reason: &dyn Fn(Option<&str>) -> String) {
        // First, so that the host sends no new call to this process: the next call
        // starts a new runtime instead of racing this one's exit.
        self.write(&Outgoing::PluginNotification(PluginNotification::Stopping));
        // Deliveries not handled yet were noted when they were read.
        self.inbox.borrow_mut().clear();
        loop {
            let requests: Vec<InFlight> = std::mem::take(&mut *self.in_flight.borrow_mut()).into_values().collect();
            for request in requests {
                self.write(&failure_answer(request.id, request.tool.as_deref(), &reason(request.tool.as_deref())));
            }
            if self.initialize_seen.get() {
                return;
            }
            let line = self.reader.borrow_mut().line(None).unwrap_or_default();
            let _ = self.read(&line);
        }
    }
}

/// The id of the plugin's own request number `number`: `host/fetch-3`.
fn own_id(method: &str, number: u32) -> RequestId {
    RequestId::Text(format!("{method}-{number}"))
}

/// The number in an id made by [`own_id`].
fn own_number(id: &RequestId) -> Option<u32> {
    match id {
        RequestId::Text(text) => text.rsplit_once('-').and_then(|(_, n)| n.parse().ok()),
        RequestId::Number(_) => None,
    }
}

/// The answer that fails a request with `reason`: a failed tool result for a call, a
/// JSON-RPC error for the rest.
fn failure_answer(id: RequestId, tool: Option<&str>, reason: &str) -> Outgoing {
    match tool {
        Some(_) => Outgoing::call_result(id, &CallToolResult::error(reason)),
        None => Outgoing::Answer(id, Err(RpcError::new(reason))),
    }
}

/// Writes one console line to standard error. Levels: 0 log, 1 debug, 2 warn, 3 error.
fn log(level: u32, text: &str) {
    let label = match level {
        1 => "debug",
        2 => "warn",
        3 => "error",
        _ => "log",
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "[{label}] {text}");
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
#[serde]
pub async fn op_plugin_recv(state: Rc<RefCell<OpState>>) -> Result<Delivery, JsErrorBox> {
    let link = link(&state.borrow())?;
    if let Some(delivery) = link.inbox.borrow_mut().pop_front() {
        return Ok(delivery);
    }
    let (tx, rx) = oneshot::channel();
    *link.waiter.borrow_mut() = Some(tx);
    rx.await.map_err(|_| JsErrorBox::generic("the host stream closed"))
}

/// Answers `initialize` with the plugin's name, version and load notes, or refuses it
/// with `error` (the plugin could not load).
#[op2]
pub fn op_plugin_answer_initialize(
    state: &mut OpState,
    #[smi] ticket: u32,
    #[string] error: Option<String>,
    #[serde] notes: Vec<String>,
) -> Result<(), JsErrorBox> {
    let link = link(state)?;
    let Some(request) = link.settle(ticket) else { return Ok(()) };
    let answer = match error {
        Some(error) => Err(RpcError::new(error)),
        None => {
            let setup =
                state.try_borrow::<PluginSetup>().ok_or_else(|| JsErrorBox::generic("the plugin setup is missing"))?;
            let result =
                InitializeResult { name: Some(setup.plugin.clone()), version: Some(setup.version.clone()), notes };
            Ok(serde_json::to_value(result).unwrap_or(Value::Null))
        }
    };
    link.write(&Outgoing::Answer(request.id, answer));
    Ok(())
}

/// Answers `tools/list` with the definitions as JSON text (the host checks each one and
/// names any field that is wrong).
#[op2(fast)]
pub fn op_plugin_answer_tools(
    state: &mut OpState,
    #[smi] ticket: u32,
    #[string] tools_json: &str,
) -> Result<(), JsErrorBox> {
    let link = link(state)?;
    let Some(request) = link.settle(ticket) else { return Ok(()) };
    let answer = serde_json::from_str(tools_json)
        .map(|tools| ToolsListResult { tools })
        .map_err(|e| RpcError::new(format!("the plugin's tool list cannot be read: {e}")))
        .and_then(|list| serde_json::to_value(list).map_err(|e| RpcError::new(e.to_string())));
    link.write(&Outgoing::Answer(request.id, answer));
    Ok(())
}

/// Answers a `tool/call` with the tool's result as JSON text. A result that is not an
/// MCP `CallToolResult` fails the call with the reason; a call the host gave up is not
/// answered.
#[op2(fast)]
pub fn op_plugin_answer_call(
    state: &mut OpState,
    #[smi] ticket: u32,
    #[string] result_json: &str,
) -> Result<(), JsErrorBox> {
    let link = link(state)?;
    let Some(request) = link.settle(ticket) else { return Ok(()) };
    let tool = request.tool.clone().unwrap_or_default();
    let result = serde_json::from_str::<CallToolResult>(result_json).unwrap_or_else(|e| {
        CallToolResult::error(format!(
            "tool {tool} returned a result that is not an MCP tool result ({e}); return a value, a string, or {{ content: [{{ type: \"text\", text }}, …] }}"
        ))
    });
    link.write(&Outgoing::call_result(request.id, &result));
    Ok(())
}

/// Sends `host/fetch`; the answer arrives as [`Delivery::Fetched`] or
/// [`Delivery::Refused`] with the returned number.
#[op2]
#[smi]
pub fn op_plugin_fetch(state: &mut OpState, #[serde] params: FetchParams) -> Result<u32, JsErrorBox> {
    Ok(link(state)?.ask(OwnRequest::Fetch, PluginRequest::Fetch(params)))
}

/// Sends `host/approve` for the call with `ticket`; the answer arrives as
/// [`Delivery::Approved`] or [`Delivery::Refused`] with the returned number.
#[op2]
#[smi]
pub fn op_plugin_approve(
    state: &mut OpState,
    #[smi] ticket: u32,
    #[string] message: String,
    #[string] details_json: Option<String>,
) -> Result<u32, JsErrorBox> {
    let link = link(state)?;
    let call = link.in_flight.borrow().get(&ticket).map(|request| request.id.clone());
    let Some(call) = call else {
        return Err(JsErrorBox::generic("approval was asked for a call that already ended"));
    };
    let details = match details_json {
        Some(text) => Some(
            serde_json::from_str(&text)
                .map_err(|e| JsErrorBox::type_error(format!("the approval's details are not JSON: {e}")))?,
        ),
        None => None,
    };
    Ok(link.ask(OwnRequest::Approve, PluginRequest::Approve(ApproveParams { call, message, details })))
}

/// Sends `host/progress` for the call with `ticket`: what it is doing, with details
/// (JSON text) beside it. A call that already ended says nothing more (returns false).
#[op2]
pub fn op_plugin_progress(
    state: &mut OpState,
    #[smi] ticket: u32,
    #[string] message: String,
    #[string] details_json: Option<String>,
) -> Result<bool, JsErrorBox> {
    let link = link(state)?;
    let call = link.in_flight.borrow().get(&ticket).map(|request| request.id.clone());
    let Some(call) = call else { return Ok(false) };
    let details = match details_json {
        Some(text) => Some(
            serde_json::from_str(&text)
                .map_err(|e| JsErrorBox::type_error(format!("the progress details are not JSON: {e}")))?,
        ),
        None => None,
    };
    link.write(&Outgoing::PluginNotification(PluginNotification::Progress(ProgressParams { call, message, details })));
    Ok(true)
}

/// Sends `host/sample` for the call with `ticket` (`params` as JSON text, its `call`
/// filled in here); the answer arrives as [`Delivery::Sampled`] or
/// [`Delivery::Refused`] with the returned number.
#[op2(fast)]
#[smi]
pub fn op_plugin_sample(
    state: &mut OpState,
    #[smi] ticket: u32,
    #[string] params_json: String,
) -> Result<u32, JsErrorBox> {
    let link = link(state)?;
    let call = link.in_flight.borrow().get(&ticket).map(|request| request.id.clone());
    let Some(call) = call else {
        return Err(JsErrorBox::generic("a model was asked for a call that already ended"));
    };
    let mut params: Value = serde_json::from_str(&params_json)
        .map_err(|e| JsErrorBox::type_error(format!("the model request is not JSON: {e}")))?;
    if let Value::Object(fields) = &mut params {
        fields.insert("call".into(), serde_json::to_value(&call).unwrap_or(Value::Null));
    }
    let params: SampleParams = serde_json::from_value(params)
        .map_err(|e| JsErrorBox::type_error(format!("the model request is malformed: {e}")))?;
    Ok(link.ask(OwnRequest::Sample, PluginRequest::Sample(params)))
}

/// Sends `host/workspace` or `host/artifacts` (`method`) for the call with `ticket`,
/// with `params_json` (the request's parameters but `call`); the answer arrives as
/// [`Delivery::Served`] or [`Delivery::Refused`] with the returned number.
#[op2(fast)]
#[smi]
pub fn op_plugin_host_service(
    state: &mut OpState,
    #[smi] ticket: u32,
    #[string] method: &str,
    #[string] params_json: &str,
) -> Result<u32, JsErrorBox> {
    let link = link(state)?;
    let call = link.in_flight.borrow().get(&ticket).map(|request| request.id.clone());
    let Some(call) = call else {
        return Err(JsErrorBox::generic(format!("{method} was asked for a call that already ended")));
    };
    let mut params: Map<String, Value> = serde_json::from_str(params_json)
        .map_err(|e| JsErrorBox::type_error(format!("the {method} parameters are not a JSON object: {e}")))?;
    params.insert("call".into(), serde_json::to_value(&call).unwrap_or(Value::Null));
    let invalid = |e: serde_json::Error| JsErrorBox::type_error(format!("{method}: {e}"));
    let (kind, request) = match method {
        protocol::plugin::method::WORKSPACE => (
            OwnRequest::Workspace,
            PluginRequest::Workspace(serde_json::from_value(Value::Object(params)).map_err(invalid)?),
        ),
        protocol::plugin::method::ARTIFACTS => (
            OwnRequest::Artifacts,
            PluginRequest::Artifacts(serde_json::from_value(Value::Object(params)).map_err(invalid)?),
        ),
        other => return Err(JsErrorBox::type_error(format!("the host offers no service {other}"))),
    };
    Ok(link.ask(kind, request))
}

/// Gives up one of the plugin's own requests (`host/cancel`).
#[op2(fast)]
pub fn op_plugin_cancel_request(state: &mut OpState, #[smi] request: u32) -> Result<(), JsErrorBox> {
    let link = link(state)?;
    let Some(kind) = link.own.borrow_mut().remove(&request) else { return Ok(()) };
    let method = match kind {
        OwnRequest::Fetch => protocol::plugin::method::FETCH,
        OwnRequest::Approve => protocol::plugin::method::APPROVE,
        OwnRequest::Sample => protocol::plugin::method::SAMPLE,
        OwnRequest::Workspace => protocol::plugin::method::WORKSPACE,
        OwnRequest::Artifacts => protocol::plugin::method::ARTIFACTS,
    };
    link.write(&Outgoing::PluginNotification(PluginNotification::Cancel(own_id(method, request))));
    Ok(())
}

/// `host/tools.changed`.
#[op2(fast)]
pub fn op_plugin_tools_changed(state: &mut OpState) -> Result<(), JsErrorBox> {
    link(state)?.write(&Outgoing::PluginNotification(PluginNotification::ToolsChanged));
    Ok(())
}

#[op2(fast)]
pub fn op_plugin_log(#[smi] level: u32, #[string] text: &str) {
    log(level, text);
}

/// When the plugin runtime started, for its monotonic clock.
static STARTED: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Milliseconds on the runtime's monotonic clock (`performance.now()`, timers).
#[op2(fast)]
pub fn op_plugin_now() -> f64 {
    STARTED.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
}

/// The earliest timer is due in `delay_ms` (negative: no timer is waiting).
#[op2(fast)]
pub fn op_plugin_timers(state: &mut OpState, delay_ms: f64) -> Result<(), JsErrorBox> {
    let due = (delay_ms >= 0.0).then(|| Instant::now() + Duration::from_secs_f64(delay_ms.min(1e9) / 1000.0));
    link(state)?.timer.set(due);
    Ok(())
}

fn modules(state: &OpState) -> Result<Rc<PluginModules>, JsErrorBox> {
    state
        .try_borrow::<Rc<PluginModules>>()
        .cloned()
        .ok_or_else(|| JsErrorBox::generic("the plugin's modules are missing"))
}

/// Where `require(specifier)` in the CommonJS module at `referrer` leads.
#[op2]
#[serde]
pub fn op_plugin_require(
    state: &mut OpState,
    #[string] specifier: &str,
    #[string] referrer: &str,
) -> Result<Required, JsErrorBox> {
    modules(state)?.require(specifier, referrer).map_err(JsErrorBox::generic)
}

/// The text of a CommonJS or JSON module (TypeScript stripped), for `require`.
#[op2]
#[string]
pub fn op_plugin_module_source(state: &mut OpState, #[string] url: &str) -> Result<String, JsErrorBox> {
    let url = deno_core::ModuleSpecifier::parse(url).map_err(JsErrorBox::from_err)?;
    modules(state)?.source(&url).map_err(JsErrorBox::generic)
}

/// A URL's parts, as the WHATWG URL API reads them.
#[derive(Debug, Serialize)]
pub struct UrlParts {
    href: String,
    origin: String,
    protocol: String,
    username: String,
    password: String,
    host: String,
    hostname: String,
    port: String,
    pathname: String,
    search: String,
    hash: String,
}

impl UrlParts {
    fn of(url: &deno_core::url::Url) -> Self {
        use deno_core::url::quirks;
        Self {
            href: quirks::href(url).into(),
            origin: quirks::origin(url),
            protocol: quirks::protocol(url).into(),
            username: quirks::username(url).into(),
            password: quirks::password(url).into(),
            host: quirks::host(url).into(),
            hostname: quirks::hostname(url).into(),
            port: quirks::port(url).into(),
            pathname: quirks::pathname(url).into(),
            search: quirks::search(url).into(),
            hash: quirks::hash(url).into(),
        }
    }
}

fn invalid_url(input: &str) -> JsErrorBox {
    JsErrorBox::type_error(format!("Invalid URL: {input:?}"))
}

/// Parses `input` (against `base`) as `new URL(input, base)` does.
#[op2]
#[serde]
pub fn op_plugin_url_parse(#[string] input: &str, #[string] base: Option<String>) -> Result<UrlParts, JsErrorBox> {
    use deno_core::url::Url;
    let url = match base {
        Some(base) => Url::parse(&base).and_then(|b| b.join(input)),
        None => Url::parse(input),
    }
    .map_err(|_| invalid_url(input))?;
    Ok(UrlParts::of(&url))
}

/// `href` with one part set as the URL API's setters do (a value the part cannot take
/// leaves the URL as it was).
#[op2]
#[serde]
pub fn op_plugin_url_set(
    #[string] href: &str,
    #[string] part: &str,
    #[string] value: &str,
) -> Result<UrlParts, JsErrorBox> {
    use deno_core::url::{quirks, Url};
    let mut url = Url::parse(href).map_err(|_| invalid_url(href))?;
    // The URL API ignores a value a part cannot take (the setters' `Err(())`, which
    // says nothing more); only `href` throws.
    match part {
        "href" => quirks::set_href(&mut url, value).map_err(|_| invalid_url(value))?,
        "protocol" => quirks::set_protocol(&mut url, value).unwrap_or_default(),
        "username" => quirks::set_username(&mut url, value).unwrap_or_default(),
        "password" => quirks::set_password(&mut url, value).unwrap_or_default(),
        "host" => quirks::set_host(&mut url, value).unwrap_or_default(),
        "hostname" => quirks::set_hostname(&mut url, value).unwrap_or_default(),
        "port" => quirks::set_port(&mut url, value).unwrap_or_default(),
        "pathname" => quirks::set_pathname(&mut url, value),
        "search" => quirks::set_search(&mut url, value),
        "hash" => quirks::set_hash(&mut url, value),
        other => return Err(JsErrorBox::type_error(format!("a URL has no part named {other}"))),
    }
    Ok(UrlParts::of(&url))
}

/// `length` random bytes from the kernel (`crypto.getRandomValues`, `randomUUID`).
#[op2]
#[buffer]
pub fn op_plugin_random(#[smi] length: u32) -> Result<Vec<u8>, JsErrorBox> {
    if length > 65536 {
        return Err(JsErrorBox::new(
            "QuotaExceededError",
            "crypto.getRandomValues gives at most 65536 bytes at a time",
        ));
    }
    let mut bytes = vec![0u8; length as usize];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: the buffer is valid for `len - filled` bytes from `filled`.
        let n = unsafe { libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0) };
        if n <= 0 {
            return Err(JsErrorBox::generic("the kernel gave no random bytes"));
        }
        filled += n as usize;
    }
    Ok(bytes)
}

/// `Atomics.wait` is about to block the thread, or is back (see [`StepClock::report_blocking`]).
#[op2(fast)]
pub fn op_plugin_blocking(state: &mut OpState, blocking: bool) {
    StepClock::report_blocking(state, blocking);
}

deno_core::extension!(
    codemode_plugin,
    ops = [
        op_plugin_blocking,
        op_plugin_register_driver,
        op_plugin_setup,
        op_plugin_recv,
        op_plugin_answer_initialize,
        op_plugin_answer_tools,
        op_plugin_answer_call,
        op_plugin_fetch,
        op_plugin_approve,
        op_plugin_sample,
        op_plugin_host_service,
        op_plugin_cancel_request,
        op_plugin_tools_changed,
        op_plugin_progress,
        op_plugin_log,
        op_plugin_timers,
        op_plugin_require,
        op_plugin_module_source,
        op_plugin_random,
        op_plugin_now,
        op_plugin_url_parse,
        op_plugin_url_set,
    ],
);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    /// A link whose reader is never read in these tests.
    fn test_link() -> PluginLink {
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        PluginLink::new(HostReader { reader: BufReader::new(std::fs::File::from(OwnedFd::from(ours))) })
    }

    #[test]
    fn requests_are_remembered_until_answered_and_calls_until_cancelled() {
        let link = test_link();
        let call = link
            .read(r#"{"jsonrpc":"2.0","id":7,"method":"tool/call","params":{"name":"greet","input":{"name":"Ann"}}}"#);
        assert!(matches!(call, Some(Delivery::Call { ticket: 1, ref name, .. }) if name == "greet"), "{call:?}");
        assert!(link.read(r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#).is_some());
        // A stray answer and an unknown notification are dropped.
        assert!(link.read(r#"{"jsonrpc":"2.0","id":"host/fetch-9","result":{}}"#).is_none());
        assert!(link.read(r#"{"jsonrpc":"2.0","method":"something/else"}"#).is_none());
        assert_eq!(link.in_flight.borrow().len(), 2);
        assert_eq!(link.in_flight.borrow()[&1], InFlight { id: RequestId::Number(7), tool: Some("greet".into()) });
        // Cancelling the call settles it; cancelling a non-call changes nothing.
        assert!(link.read(r#"{"jsonrpc":"2.0","method":"tool/cancel","params":{"id":8}}"#).is_none());
        assert!(matches!(
            link.read(r#"{"jsonrpc":"2.0","method":"tool/cancel","params":{"id":7}}"#),
            Some(Delivery::Cancel { ticket: 1 })
        ));
        assert!(link.settle(1).is_none());
        assert_eq!(link.settle(2), Some(InFlight { id: RequestId::Number(8), tool: None }));
    }

    #[test]
    fn own_requests_are_matched_to_their_answers_by_number() {
        let link = test_link();
        link.own.borrow_mut().insert(3, OwnRequest::Fetch);
        link.own.borrow_mut().insert(4, OwnRequest::Approve);
        link.own.borrow_mut().insert(5, OwnRequest::Fetch);
        let fetched = link.read(r#"{"jsonrpc":"2.0","id":"host/fetch-3","result":{"status":200,"statusText":"OK","url":"https://a/","headers":[],"bodyBase64":"AP8="}}"#);
        let Some(Delivery::Fetched { request: 3, response }) = fetched else { panic!("{fetched:?}") };
        assert_eq!(response.text, None);
        assert_eq!(response.bytes, Some(vec![0, 255]));
        let approved =
            link.read(r#"{"jsonrpc":"2.0","id":"host/approve-4","result":{"approved":false,"reason":"declined"}}"#);
        assert!(
            matches!(approved, Some(Delivery::Approved { request: 4, approved: false, reason: Some(ref r) }) if r == "declined")
        );
        let refused =
            link.read(r#"{"jsonrpc":"2.0","id":"host/fetch-5","error":{"code":-32000,"message":"not allowed"}}"#);
        assert!(matches!(refused, Some(Delivery::Refused { request: 5, ref message }) if message == "not allowed"));
        assert!(link.own.borrow().is_empty());
    }

    #[test]
    fn failures_are_tool_results_for_calls_and_errors_for_the_rest() {
        assert_eq!(
            failure_answer(RequestId::Number(4), Some("spin"), "stopped").to_line(),
            json!({ "jsonrpc": "2.0", "id": 4, "result": { "content": [{ "type": "text", "text": "stopped" }], "isError": true } }).to_string()
        );
        assert_eq!(
            failure_answer(RequestId::Number(1), None, "bad").to_line(),
            json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32000, "message": "bad" } }).to_string()
        );
    }
}
