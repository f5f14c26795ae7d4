//! The plugin wire format (`protocol/PLUGINS.md`) as typed messages: JSON-RPC 2.0, one
//! message per line, between the host and a plugin (any process plugin, and the
//! JavaScript plugin runtime, whose Rust side builds and reads every message with these
//! types).
//!
//! ```text
//! host   → plugin  requests       initialize, tools/list, tool/call
//! host   → plugin  notification   tool/cancel { id }
//! plugin → host    requests       host/fetch, host/approve, host/sample, host/workspace,
//!                                 host/artifacts (a call's files and artifacts)
//! plugin → host    notifications  host/tools.changed, host/stopping, host/cancel { id },
//!                                 host/progress { call, message, details? }
//! ```
//!
//! [`HostMessage::parse`] reads a line as the plugin sees it, [`PluginMessage::parse`] as
//! the host sees it; each side builds its lines with [`Outgoing`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::mcp::{CallToolResult, Tool};

/// The protocol version the host announces in `initialize`.
pub const PROTOCOL_VERSION: &str = "codemode-plugin/1";

/// Method names.
pub mod method {
    /// Host → plugin: the handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Host → plugin: the plugin's tools.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Host → plugin: run a tool.
    pub const TOOL_CALL: &str = "tool/call";
    /// Host → plugin (notification): a call was given up.
    pub const TOOL_CANCEL: &str = "tool/cancel";
    /// Plugin → host (notification): the tool list changed.
    pub const TOOLS_CHANGED: &str = "host/tools.changed";
    /// Plugin → host (notification): the plugin is about to exit.
    pub const STOPPING: &str = "host/stopping";
    /// Plugin → host (notification): the plugin gave up one of its own requests.
    pub const CANCEL: &str = "host/cancel";
    /// Plugin → host: an HTTP request the host performs against the plugin's allowlist.
    pub const FETCH: &str = "host/fetch";
    /// Plugin → host: ask a person to approve something before the plugin does it.
    pub const APPROVE: &str = "host/approve";
    /// Plugin → host (notification): how one running tool call is going, for whoever
    /// watches the call (an MCP client's progress notifications).
    pub const PROGRESS: &str = "host/progress";
    /// Plugin → host: ask the model of the client the call came from (MCP sampling).
    pub const SAMPLE: &str = "host/sample";
    /// Plugin → host: read, write or list a file in the call's workspace.
    pub const WORKSPACE: &str = "host/workspace";
    /// Plugin → host: write, read or list the session's artifacts.
    pub const ARTIFACTS: &str = "host/artifacts";
}

/// A JSON-RPC id: the host uses numbers, plugins usually strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A number.
    Number(u64),
    /// A string.
    Text(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::Text(t) => write!(f, "{t:?}"),
        }
    }
}

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The code (`-32601` for an unknown method, `-32000` for everything else here).
    pub code: i64,
    /// What went wrong.
    pub message: String,
}

impl RpcError {
    /// An error with the generic code.
    pub fn new(message: impl Into<String>) -> Self {
        Self { code: -32000, message: message.into() }
    }

    /// "method not found".
    pub fn unknown_method(message: impl Into<String>) -> Self {
        Self { code: -32601, message: message.into() }
    }
}

/// Who the host is, in `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `codemode`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// `initialize`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// [`PROTOCOL_VERSION`].
    pub protocol_version: String,
    /// The host.
    pub host: HostInfo,
    /// The plugin's settings from its configuration entry, secrets read from the host's
    /// environment (an addition: JavaScript plugins receive them; others may ignore it).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub settings: Map<String, Value>,
}

/// `initialize`'s result. Every field is optional; a plugin may answer `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The plugin's own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What the plugin's definitions ask for that it cannot honour, one sentence each
    /// (an addition: the host reports them when the plugin loads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Who calls a tool (`tool/call`'s `context`); every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallContext {
    /// The workspace's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// The absolute folder the session works in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The agent, for example `codex` or `claude:work`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The chat, when it is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// This tool call's id: `<the agent's request id>:<the program's call number>` in a
    /// program, the agent's request id for a tool it called directly, or the program's
    /// call number when the agent gave no id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The agent's session (its MCP session id), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent's message that made this call, when the client names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// What the host application passes its tools (the client's `_meta["codemode/context"]`),
    /// as it came; absent when it passed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_context: Option<Value>,
    /// True when `host/progress` for this call reaches someone (an MCP client that asked
    /// for progress); false when it goes only to the log.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub progress_shown: bool,
}

/// `tool/call`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallParams {
    /// The tool.
    pub name: String,
    /// Its input (validated against its `inputSchema` by the host).
    #[serde(default)]
    pub input: Value,
    /// Who calls.
    #[serde(default)]
    pub context: CallContext,
}

/// `tools/list`'s result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolsListResult {
    /// The plugin's tools.
    pub tools: Vec<Tool>,
}

/// The id of a request being cancelled (`tool/cancel`, `host/cancel`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelParams {
    /// The request's id.
    pub id: RequestId,
}

/// `host/fetch`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchParams {
    /// The URL (`http` or `https`).
    pub url: String,
    /// The method (`GET` when absent).
    #[serde(default = "get")]
    pub method: String,
    /// Request headers, as pairs.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

fn get() -> String {
    "GET".into()
}

/// `host/fetch`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchResult {
    /// The HTTP status.
    pub status: u16,
    /// Its reason phrase.
    pub status_text: String,
    /// The final URL (after redirects).
    pub url: String,
    /// Response headers, as pairs.
    pub headers: Vec<(String, String)>,
    /// The body as text, when it is UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body as base64, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
}

/// `host/approve`'s parameters: a plugin asks, through the host, whether a person
/// allows something (every seed format's approvals and `ctx.ask` use it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApproveParams {
    /// The tool call this belongs to (its `tool/call` request id).
    pub call: RequestId,
    /// What the person is asked, in one or two sentences.
    pub message: String,
    /// What the plugin wants to do, for the person to read (a permission name, paths,
    /// an input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// `host/approve`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApproveResult {
    /// True when the person allowed it.
    pub approved: bool,
    /// Why not, when not (declined, no one to ask, cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `host/progress`'s parameters: how one running tool call is going (a status line, a
/// subagent's step or row), for whoever watches the call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressParams {
    /// The tool call this belongs to (its `tool/call` request id).
    pub call: RequestId,
    /// What the call is doing, in a line.
    pub message: String,
    /// Structured details to show beside it (a seed format's metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// One message of a `host/sample` conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The message's text.
    pub content: String,
}

/// `host/sample`'s parameters: a plugin asks, through the host, the model of the client
/// whose call is running (seed 003's `host.llm`, `host.session.llm`, `host.decide`, seed
/// 000's `api.models.prompt`); under MCP it is the client's `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SampleParams {
    /// The tool call this belongs to (its `tool/call` request id).
    pub call: RequestId,
    /// The conversation, oldest first; the last is usually the user's.
    pub messages: Vec<SampleMessage>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The most tokens the answer may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Sequences that end the answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Models the plugin would like, as hints (the client chooses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_hints: Vec<String>,
    /// Which host API asked (`host.llm`, `api.models.prompt`, ...), named in errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
}

/// `host/sample`'s result: the model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SampleResult {
    /// The answer's text (its text parts, joined).
    pub text: String,
    /// The model that answered, as the client names it.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`, ...), when the client says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// What a `host/workspace` or `host/artifacts` request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileOp {
    /// Read one file (or artifact).
    Read,
    /// Write one file (or artifact), replacing what was there.
    Write,
    /// List a folder (or every artifact).
    List,
}

/// `host/workspace`'s parameters: a file in the workspace of the call (the host does
/// the file work, beneath the workspace's root, after its checks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceParams {
    /// The tool call this belongs to (its `tool/call` request id).
    pub call: RequestId,
    /// What to do.
    pub op: FileOp,
    /// The path, relative to the workspace's root (`""` for the root, in `list`).
    #[serde(default)]
    pub path: String,
    /// The text to write (`write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// One name in a `host/workspace` listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceEntry {
    /// The name within the folder.
    pub name: String,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: String,
}

/// `host/workspace`'s result: `content` for `read`, `bytes` for `write`, `entries` for
/// `list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceResult {
    /// The file's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// How many bytes were written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The folder's names, sorted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<WorkspaceEntry>>,
}

/// `host/artifacts`' parameters: something a tool keeps for the session (plico's
/// `ctx.artifacts`), which the agent receives as an MCP resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactParams {
    /// The tool call this belongs to (its `tool/call` request id).
    pub call: RequestId,
    /// What to do.
    pub op: FileOp,
    /// The artifact's path (`read`, `write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its content as text (`write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its content as base64 bytes (`write`, when it is not text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
    /// Its media type (`write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One artifact, as `host/artifacts` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactInfo {
    /// Its path.
    pub path: String,
    /// The MCP resource the agent reads it as.
    pub uri: String,
    /// Its media type.
    pub mime_type: String,
    /// Its size.
    pub size: u64,
}

/// `host/artifacts`' result: `artifact` for `write`, `artifact` and the content for
/// `read`, `artifacts` for `list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactResult {
    /// The artifact written or read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<ArtifactInfo>,
    /// Its content, when it was written as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its content as base64, when it was written as bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
    /// Every artifact of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<ArtifactInfo>>,
}

/// A request the host sends a plugin.
#[derive(Debug, Clone, PartialEq)]
pub enum HostRequest {
    /// `initialize`.
    Initialize(InitializeParams),
    /// `tools/list`.
    ToolsList,
    /// `tool/call` (boxed: its context is the largest of the host's messages).
    ToolCall(Box<ToolCallParams>),
}

impl HostRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            HostRequest::Initialize(_) => method::INITIALIZE,
            HostRequest::ToolsList => method::TOOLS_LIST,
            HostRequest::ToolCall(_) => method::TOOL_CALL,
        }
    }

    fn params_ref(&self) -> HostParams<'_> {
        match self {
            HostRequest::Initialize(p) => HostParams::Initialize(p),
            HostRequest::ToolsList => HostParams::Empty {},
            HostRequest::ToolCall(p) => HostParams::ToolCall(p),
        }
    }
}

/// A request a plugin sends the host.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginRequest {
    /// `host/fetch`.
    Fetch(FetchParams),
    /// `host/approve`.
    Approve(ApproveParams),
    /// `host/sample`.
    Sample(SampleParams),
    /// `host/workspace`.
    Workspace(WorkspaceParams),
    /// `host/artifacts`.
    Artifacts(ArtifactParams),
}

impl PluginRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            PluginRequest::Fetch(_) => method::FETCH,
            PluginRequest::Approve(_) => method::APPROVE,
            PluginRequest::Sample(_) => method::SAMPLE,
            PluginRequest::Workspace(_) => method::WORKSPACE,
            PluginRequest::Artifacts(_) => method::ARTIFACTS,
        }
    }

    fn params(&self) -> Value {
        match self {
            PluginRequest::Fetch(p) => serde_json::to_value(p).unwrap_or(Value::Null),
            PluginRequest::Approve(p) => serde_json::to_value(p).unwrap_or(Value::Null),
            PluginRequest::Sample(p) => serde_json::to_value(p).unwrap_or(Value::Null),
            PluginRequest::Workspace(p) => serde_json::to_value(p).unwrap_or(Value::Null),
            PluginRequest::Artifacts(p) => serde_json::to_value(p).unwrap_or(Value::Null),
        }
    }
}

/// A notification a plugin sends the host.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginNotification {
    /// `host/tools.changed`.
    ToolsChanged,
    /// `host/stopping`.
    Stopping,
    /// `host/cancel { id }`.
    Cancel(RequestId),
    /// `host/progress { call, message, details? }`.
    Progress(ProgressParams),
}

/// The raw shape of any JSON-RPC message, before it is sorted.
#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// The answer half of a message.
fn response(
    id: RequestId,
    result: Option<Value>,
    error: Option<RpcError>,
) -> Result<(RequestId, Result<Value, RpcError>), String> {
    match (result, error) {
        (_, Some(error)) => Ok((id, Err(error))),
        (Some(result), None) => Ok((id, Ok(result))),
        (None, None) => Err(format!("the answer to request {id} has neither a result nor an error")),
    }
}

fn params<T: serde::de::DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, String> {
    serde_json::from_value(params.unwrap_or(Value::Object(Map::new())))
        .map_err(|e| format!("{method}: invalid parameters: {e}"))
}

/// A line from the host, as a plugin reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum HostMessage {
    /// A request to answer.
    Request(RequestId, HostRequest),
    /// A request for a method this protocol does not have (answer it with
    /// [`RpcError::unknown_method`]).
    UnknownRequest(RequestId, String),
    /// `tool/cancel { id }`.
    Cancel(RequestId),
    /// The answer to one of the plugin's own requests.
    Response(RequestId, Result<Value, RpcError>),
    /// A notification this protocol does not have (ignored).
    Other(String),
}

impl HostMessage {
    /// Reads one line. `Err` says what is wrong with it; a request whose parameters do
    /// not parse is `Err` too (with its id, so it can be answered).
    pub fn parse(line: &str) -> Result<Self, (Option<RequestId>, String)> {
        let raw: Raw = serde_json::from_str(line)
            .map_err(|e| (None, format!("the host sent a line that is not JSON-RPC: {e}")))?;
        match (raw.id, raw.method) {
            (Some(id), Some(method)) => {
                let request = match method.as_str() {
                    method::INITIALIZE => params(&method, raw.params).map(HostRequest::Initialize),
                    method::TOOLS_LIST => Ok(HostRequest::ToolsList),
                    method::TOOL_CALL => params(&method, raw.params).map(|p| HostRequest::ToolCall(Box::new(p))),
                    _ => return Ok(HostMessage::UnknownRequest(id, method)),
                };
                request.map(|r| HostMessage::Request(id.clone(), r)).map_err(|why| (Some(id), why))
            }
            (None, Some(method)) if method == method::TOOL_CANCEL => params::<CancelParams>(&method, raw.params)
                .map(|p| HostMessage::Cancel(p.id))
                .map_err(|why| (None, why)),
            (None, Some(method)) => Ok(HostMessage::Other(method)),
            (Some(id), None) => response(id, raw.result, raw.error)
                .map(|(id, r)| HostMessage::Response(id, r))
                .map_err(|why| (None, why)),
            (None, None) => Err((None, "the host sent a message with neither an id nor a method".into())),
        }
    }
}

/// A line from a plugin, as the host reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginMessage {
    /// The answer to one of the host's requests.
    Response(RequestId, Result<Value, RpcError>),
    /// A request of the plugin's own.
    Request(RequestId, PluginRequest),
    /// A request for a method the host does not serve.
    UnknownRequest(RequestId, String),
    /// A notification.
    Notification(PluginNotification),
    /// A notification this protocol does not have (ignored).
    Other(String),
}

impl PluginMessage {
    /// Reads one line. `Err` says what is wrong with it, with the id of a request whose
    /// parameters do not parse (so it can be answered).
    pub fn parse(line: &str) -> Result<Self, (Option<RequestId>, String)> {
        let raw: Raw =
            serde_json::from_str(line).map_err(|e| (None, format!("it wrote something that is not JSON-RPC: {e}")))?;
        match (raw.id, raw.method) {
            (Some(id), Some(method)) => {
                let request = match method.as_str() {
                    method::FETCH => params(&method, raw.params).map(PluginRequest::Fetch),
                    method::APPROVE => params(&method, raw.params).map(PluginRequest::Approve),
                    method::SAMPLE => params(&method, raw.params).map(PluginRequest::Sample),
                    method::WORKSPACE => params(&method, raw.params).map(PluginRequest::Workspace),
                    method::ARTIFACTS => params(&method, raw.params).map(PluginRequest::Artifacts),
                    _ => return Ok(PluginMessage::UnknownRequest(id, method)),
                };
                request.map(|r| PluginMessage::Request(id.clone(), r)).map_err(|why| (Some(id), why))
            }
            (None, Some(method)) => match method.as_str() {
                method::TOOLS_CHANGED => Ok(PluginMessage::Notification(PluginNotification::ToolsChanged)),
                method::STOPPING => Ok(PluginMessage::Notification(PluginNotification::Stopping)),
                method::CANCEL => params::<CancelParams>(&method, raw.params)
                    .map(|p| PluginMessage::Notification(PluginNotification::Cancel(p.id)))
                    .map_err(|why| (None, why)),
                method::PROGRESS => params::<ProgressParams>(&method, raw.params)
                    .map(|p| PluginMessage::Notification(PluginNotification::Progress(p)))
                    .map_err(|why| (None, why)),
                _ => Ok(PluginMessage::Other(method)),
            },
            (Some(id), None) => response(id, raw.result, raw.error)
                .map(|(id, r)| PluginMessage::Response(id, r))
                .map_err(|why| (None, why)),
            (None, None) => Err((None, "it wrote a message with neither an id nor a method".into())),
        }
    }
}

/// A line to write (without its newline), built from typed parts.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// Host → plugin request.
    HostRequest(RequestId, HostRequest),
    /// Host → plugin `tool/cancel`.
    CancelCall(RequestId),
    /// Plugin → host request.
    PluginRequest(RequestId, PluginRequest),
    /// Plugin → host notification.
    PluginNotification(PluginNotification),
    /// An answer (either direction).
    Answer(RequestId, Result<Value, RpcError>),
}

impl Outgoing {
    /// The answer to a `tool/call`.
    pub fn call_result(id: RequestId, result: &CallToolResult) -> Self {
        Outgoing::Answer(id, Ok(serde_json::to_value(result).unwrap_or(Value::Null)))
    }

    /// The line, as JSON text, with room for its newline.
    pub fn to_line(&self) -> String {
        let value = match self {
            // A tool call's input may be tens of MiB: written straight from its parts
            // (no copy of the input as a JSON tree, no growing buffer).
            Outgoing::HostRequest(id, request) => {
                return exact_line(&Envelope {
                    jsonrpc: "2.0",
                    id,
                    method: request.method(),
                    params: request.params_ref(),
                })
            }
            Outgoing::CancelCall(id) => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::TOOL_CANCEL, "params": { "id": id } })
            }
            Outgoing::PluginRequest(id, request) => {
                serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": request.method(), "params": request.params() })
            }
            Outgoing::PluginNotification(PluginNotification::ToolsChanged) => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::TOOLS_CHANGED })
            }
            Outgoing::PluginNotification(PluginNotification::Stopping) => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::STOPPING })
            }
            Outgoing::PluginNotification(PluginNotification::Cancel(id)) => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::CANCEL, "params": { "id": id } })
            }
            Outgoing::PluginNotification(PluginNotification::Progress(params)) => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::PROGRESS, "params": params })
            }
            Outgoing::Answer(id, Ok(result)) => serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Outgoing::Answer(id, Err(error)) => serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        };
        exact_line(&value)
    }
}

/// A request line's parts, serialised in place.
#[derive(Serialize)]
struct Envelope<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'static str,
    params: P,
}

/// A host request's params, borrowed.
#[derive(Serialize)]
#[serde(untagged)]
enum HostParams<'a> {
    Initialize(&'a InitializeParams),
    Empty {},
    ToolCall(&'a ToolCallParams),
}

/// `value` as compact JSON text in a buffer of exactly its length and one byte more
/// (for the newline the writer adds): measured first, so a large line is never copied
/// while it grows.
fn exact_line(value: &impl Serialize) -> String {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    if serde_json::to_writer(&mut count, value).is_err() {
        return "null".to_string();
    }
    let mut line = Vec::with_capacity(count.0 + 1);
    if serde_json::to_writer(&mut line, value).is_err() {
        return "null".to_string();
    }
    String::from_utf8(line).unwrap_or_else(|_| "null".to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn every_host_message_reads_back_as_the_plugin_sees_it() {
        let init = HostRequest::Initialize(InitializeParams {
            protocol_version: PROTOCOL_VERSION.into(),
            host: HostInfo { name: "codemode".into(), version: "1".into() },
            settings: [("token".to_string(), json!("s3cret"))].into_iter().collect(),
        });
        let call = HostRequest::ToolCall(Box::new(ToolCallParams {
            name: "greet".into(),
            input: json!({ "name": "Ann" }),
            context: CallContext { call_id: Some("7".into()), ..CallContext::default() },
        }));
        for (id, request) in [(1, init), (2, HostRequest::ToolsList), (3, call)] {
            let line = Outgoing::HostRequest(RequestId::Number(id), request.clone()).to_line();
            assert_eq!(HostMessage::parse(&line), Ok(HostMessage::Request(RequestId::Number(id), request)), "{line}");
        }
        assert_eq!(
            HostMessage::parse(&Outgoing::CancelCall(RequestId::Number(3)).to_line()),
            Ok(HostMessage::Cancel(RequestId::Number(3)))
        );
        let answer = Outgoing::Answer(RequestId::Text("host/fetch-1".into()), Err(RpcError::new("no"))).to_line();
        assert_eq!(
            HostMessage::parse(&answer),
            Ok(HostMessage::Response(RequestId::Text("host/fetch-1".into()), Err(RpcError::new("no"))))
        );
        assert_eq!(
            HostMessage::parse(r#"{"jsonrpc":"2.0","id":4,"method":"tools/destroy"}"#),
            Ok(HostMessage::UnknownRequest(RequestId::Number(4), "tools/destroy".into()))
        );
    }

    #[test]
    fn every_plugin_message_reads_back_as_the_host_sees_it() {
        let fetch = PluginRequest::Fetch(FetchParams {
            url: "https://a.example/".into(),
            method: "POST".into(),
            headers: vec![("x".into(), "1".into())],
            body: Some("b".into()),
        });
        let approve = PluginRequest::Approve(ApproveParams {
            call: RequestId::Number(9),
            message: "Delete?".into(),
            details: Some(json!(["a.txt"])),
        });
        let sample = PluginRequest::Sample(SampleParams {
            call: RequestId::Number(9),
            messages: vec![SampleMessage { role: "user".into(), content: "Hi?".into() }],
            system_prompt: Some("Be brief.".into()),
            max_tokens: Some(50),
            temperature: None,
            stop_sequences: vec![],
            model_hints: vec!["gpt-5.5".into()],
            api: Some("host.llm".into()),
        });
        let workspace = PluginRequest::Workspace(WorkspaceParams {
            call: RequestId::Number(9),
            op: FileOp::Write,
            path: "notes/a.md".into(),
            content: Some("hi".into()),
        });
        let artifacts = PluginRequest::Artifacts(ArtifactParams {
            call: RequestId::Number(9),
            op: FileOp::Write,
            path: Some("report.csv".into()),
            text: Some("a,b".into()),
            base64: None,
            mime_type: Some("text/csv".into()),
        });
        for request in [fetch, approve, sample, workspace, artifacts] {
            let line = Outgoing::PluginRequest(RequestId::Text("r".into()), request.clone()).to_line();
            assert_eq!(PluginMessage::parse(&line), Ok(PluginMessage::Request(RequestId::Text("r".into()), request)));
        }
        for notification in [
            PluginNotification::ToolsChanged,
            PluginNotification::Stopping,
            PluginNotification::Cancel(RequestId::Text("r".into())),
            PluginNotification::Progress(ProgressParams {
                call: RequestId::Number(3),
                message: "subagent Research: step Reading the docs".into(),
                details: Some(json!({ "release": "v42" })),
            }),
        ] {
            let line = Outgoing::PluginNotification(notification.clone()).to_line();
            assert_eq!(PluginMessage::parse(&line), Ok(PluginMessage::Notification(notification)));
        }
        let result = CallToolResult::text("hi");
        let line = Outgoing::call_result(RequestId::Number(5), &result).to_line();
        match PluginMessage::parse(&line).unwrap() {
            PluginMessage::Response(RequestId::Number(5), Ok(value)) => {
                assert_eq!(serde_json::from_value::<CallToolResult>(value).unwrap(), result)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn broken_lines_say_what_is_wrong() {
        assert!(PluginMessage::parse("not json").unwrap_err().1.starts_with("it wrote something that is not JSON-RPC"));
        assert_eq!(
            PluginMessage::parse(r#"{"jsonrpc":"2.0","id":1}"#).unwrap_err().1,
            "the answer to request 1 has neither a result nor an error"
        );
        let (id, why) =
            PluginMessage::parse(r#"{"jsonrpc":"2.0","id":"f","method":"host/fetch","params":{"method":"GET"}}"#)
                .unwrap_err();
        assert_eq!(id, Some(RequestId::Text("f".into())));
        assert!(why.starts_with("host/fetch: invalid parameters: missing field `url`"), "{why}");
    }

    #[test]
    fn a_call_context_carries_only_what_is_known() {
        let context = CallContext {
            call_id: Some("7:2".into()),
            host_context: Some(json!({ "userId": "u-1" })),
            progress_shown: true,
            ..CallContext::default()
        };
        let wire = serde_json::to_value(&context).unwrap();
        assert_eq!(wire, json!({ "callId": "7:2", "hostContext": { "userId": "u-1" }, "progressShown": true }));
        assert_eq!(serde_json::from_value::<CallContext>(wire).unwrap(), context);
        assert_eq!(serde_json::to_value(CallContext::default()).unwrap(), json!({}));
    }

    #[test]
    fn file_requests_have_their_documented_shape() {
        let line = Outgoing::PluginRequest(
            RequestId::Text("host/workspace-1".into()),
            PluginRequest::Workspace(WorkspaceParams {
                call: RequestId::Number(3),
                op: FileOp::List,
                path: String::new(),
                content: None,
            }),
        )
        .to_line();
        assert_eq!(
            line,
            r#"{"jsonrpc":"2.0","id":"host/workspace-1","method":"host/workspace","params":{"call":3,"op":"list","path":""}}"#
        );
    }

    #[test]
    fn the_wire_matches_the_documented_examples() {
        // protocol/PLUGINS.md's shapes, byte for byte where it shows them.
        let line = Outgoing::HostRequest(RequestId::Number(1), HostRequest::ToolsList).to_line();
        assert_eq!(line, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
        assert_eq!(
            Outgoing::CancelCall(RequestId::Number(3)).to_line(),
            r#"{"jsonrpc":"2.0","method":"tool/cancel","params":{"id":3}}"#
        );
    }
}
