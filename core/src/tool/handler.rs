//! Serving one tool's calls: the [`ToolHandler`] trait, [`FnTool`] for async closures,
//! and the [`CallContext`] every call carries (who runs the program, and a signal that
//! fires when the call is given up).

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ToolResult;

/// Who is calling, and a signal that fires when the call is given up.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The plugin's name.
    pub plugin: String,
    /// The tool's name.
    pub tool: String,
    /// Unique within the program.
    pub call_id: u64,
    /// Who runs the program (workspace, agent, chat), as the caller told the executor.
    pub caller: Arc<Caller>,
    /// Cancelled when the program ends, hits a limit or is cancelled.
    pub cancel: CancellationToken,
    /// Who can ask a person to allow something the call wants to do (a plugin's
    /// `host/approve`); `None` when nobody can be asked.
    pub approver: Option<Arc<dyn Approver>>,
    /// Who hears how the call is going (its server's progress notifications).
    pub progress: Option<Arc<dyn ProgressSink>>,
    /// Who asks a model for the call (a plugin's `host/sample`): the MCP client's
    /// sampling; `None` when the front end has no model (`codemode run`).
    pub sampler: Option<Arc<dyn Sampler>>,
    /// What tools keep for the session (a plugin's `host/artifacts`); `None` when the
    /// front end keeps none.
    pub artifacts: Option<Arc<super::artifacts::Artifacts>>,
}

/// What a tool asks a person during a call: to allow something (a plugin's
/// `host/approve`), to fill in a form, or to visit a page (an MCP server's elicitation).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApprovalQuestion {
    /// The plugin.
    pub plugin: String,
    /// The tool whose call asks.
    pub tool: String,
    /// The question, in a sentence or two.
    pub message: String,
    /// What the plugin wants to do, for the person to read.
    pub details: Option<Value>,
    /// The form to fill in (an elicitation's `requestedSchema`), when the question is
    /// more than yes or no.
    pub form: Option<Value>,
    /// A page the person is asked to open (URL elicitation, for example a sign-in
    /// elsewhere); accepting means they went there.
    pub link: Option<String>,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApprovalAnswer {
    /// True when the person allowed it (or filled in the form).
    pub approved: bool,
    /// Why not, when not (declined, no one to ask, cancelled).
    pub reason: Option<String>,
    /// The filled-in form, when the question had one.
    pub content: Option<serde_json::Map<String, Value>>,
    /// The person dismissed the question without deciding.
    pub cancelled: bool,
}

impl ApprovalAnswer {
    /// Allowed.
    pub fn allowed() -> Self {
        Self { approved: true, ..Self::default() }
    }

    /// A form, filled in.
    pub fn filled(content: serde_json::Map<String, Value>) -> Self {
        Self { approved: true, content: Some(content), ..Self::default() }
    }

    /// Refused, and why.
    pub fn refused(reason: impl Into<String>) -> Self {
        Self { approved: false, reason: Some(reason.into()), ..Self::default() }
    }

    /// Dismissed without a decision, and why.
    pub fn dismissed(reason: impl Into<String>) -> Self {
        Self { cancelled: true, ..Self::refused(reason) }
    }

    /// As `host/approve`'s result for a plugin.
    pub fn wire(&self) -> protocol::plugin::ApproveResult {
        protocol::plugin::ApproveResult { approved: self.approved, reason: self.reason.clone() }
    }
}

/// Asks a person to allow something a tool call wants to do.
pub trait Approver: Send + Sync + 'static {
    /// The person's answer; a refusal when nobody could be asked says why.
    fn ask(&self, question: ApprovalQuestion) -> BoxFuture<'static, ApprovalAnswer>;
}

/// How a long tool call is going, as its server reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallProgress {
    /// The plugin.
    pub plugin: String,
    /// The tool.
    pub tool: String,
    /// Done so far (it only grows).
    pub progress: f64,
    /// Of how much, when known.
    pub total: Option<f64>,
    /// What it is doing.
    pub message: Option<String>,
}

/// What a running call says it is doing (a plugin's `host/progress`: a seed format's
/// status line, a subagent's step or row), without a measure of how far along it is.
#[derive(Debug, Clone, PartialEq)]
pub struct CallStatus {
    /// The plugin.
    pub plugin: String,
    /// The tool.
    pub tool: String,
    /// What it is doing, in a line.
    pub message: String,
    /// Structured details beside it, when the plugin gave some.
    pub details: Option<Value>,
}

/// Hears how the calls of one program are going.
pub trait ProgressSink: Send + Sync + 'static {
    /// A call reported progress.
    fn progress(&self, report: CallProgress);
    /// A call said what it is doing; by default nobody sees it.
    fn status(&self, _status: CallStatus) {}
    /// Whether what [`ProgressSink::progress`] and [`ProgressSink::status`] hear reaches
    /// someone (an MCP client that asked for progress), rather than only the log.
    fn shown(&self) -> bool {
        false
    }
}

/// A model call a tool makes during its call (a plugin's `host/sample`): the wire
/// parameters, with the plugin and tool that ask.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    /// The plugin.
    pub plugin: String,
    /// The tool whose call asks.
    pub tool: String,
    /// What it asks: messages, system prompt, token bound, hints.
    pub params: protocol::plugin::SampleParams,
}

impl SampleRequest {
    /// The host API the plugin called, for errors (`host/sample` when it did not say).
    pub fn api(&self) -> &str {
        self.params.api.as_deref().unwrap_or(protocol::plugin::method::SAMPLE)
    }
}

/// Asks a model for a tool call: through the MCP client's sampling
/// (`sampling/createMessage`, or an input-required round under 2026-07-28). The client
/// decides which model answers and whether its person approves the request first.
pub trait Sampler: Send + Sync + 'static {
    /// The model's answer; `Err` is the message the plugin's call rejects with (the
    /// client cannot sample, declined, or failed), naming what it could not do.
    fn sample(&self, request: SampleRequest) -> BoxFuture<'static, Result<protocol::plugin::SampleResult, String>>;
}

impl std::fmt::Debug for dyn Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sampler")
    }
}

impl std::fmt::Debug for dyn Approver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Approver")
    }
}

impl std::fmt::Debug for dyn ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Who runs a program: passed to every tool call's context. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Caller {
    /// The absolute folder the session works in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The workspace's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// The agent, for example `codex` or `claude:work`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The chat, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// The agent's id for this `execute` call, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The agent's session (its MCP session id), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent's message that made the request, when the client names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// What the host application passes its tools (plico's `ctx.context`), as the client
    /// sent it; `None` when it sent nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// Why plugins may not work in `workspace`'s files (a path a remote client named
    /// outside the server's allowed roots); `None` when they may.
    #[serde(skip)]
    pub workspace_refused: Option<String>,
    /// `workspace`, opened once when the request came (and, for a remote client,
    /// checked to lie within the server's roots as opened): every file request of the
    /// program resolves beneath this folder, so a root swapped for a link later leads
    /// nowhere new. `None` where the front end opened none (the file work then opens
    /// `workspace` by name).
    #[serde(skip)]
    pub workspace_dir: Option<OpenedFolder>,
}

/// A folder opened once (an `O_PATH` descriptor), shared by every call of a program.
/// Two are equal when they are the same opening.
#[derive(Debug, Clone)]
pub struct OpenedFolder(Arc<std::os::fd::OwnedFd>);

impl OpenedFolder {
    /// Wraps an open folder's descriptor.
    pub fn new(dir: std::os::fd::OwnedFd) -> Self {
        Self(Arc::new(dir))
    }

    /// The folder's descriptor.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&*self.0)
    }
}

impl PartialEq for OpenedFolder {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for OpenedFolder {}

impl CallContext {
    /// The context as plugins receive it (`tool/call`'s `context`): the caller's fields,
    /// this call's id ([`CallContext::wire_call_id`]), and whether its progress is shown.
    pub fn wire(&self) -> protocol::plugin::CallContext {
        let c = &*self.caller;
        protocol::plugin::CallContext {
            workspace_id: c.workspace_id.clone(),
            workspace: c.workspace.clone(),
            agent_id: c.agent_id.clone(),
            chat_id: c.chat_id.clone(),
            call_id: Some(self.wire_call_id()),
            session_id: c.session_id.clone(),
            message_id: c.message_id.clone(),
            host_context: c.context.clone(),
            progress_shown: self.progress.as_ref().is_some_and(|p| p.shown()),
        }
    }

    /// This tool call's id, one per call and the same for the whole call (a plugin tried
    /// again keeps it), traceable to the agent's request: `<request id>:<call number>`
    /// for a program's call, the request id for a tool the agent called directly (call
    /// number 0), and the program's call number when the agent gave no id.
    pub fn wire_call_id(&self) -> String {
        match (&self.caller.call_id, self.call_id) {
            (Some(request), 0) => request.clone(),
            (Some(request), number) => format!("{request}:{number}"),
            (None, number) => number.to_string(),
        }
    }
}

/// Serves calls to one tool.
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs the tool. Errors are results with `is_error` set, never panics.
    fn call(&self, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult>;
}

/// A [`ToolHandler`] made from an async closure.
pub struct FnTool<F>(pub F);

impl<F, Fut> ToolHandler for FnTool<F>
where
    F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    fn call(&self, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin((self.0)(input, context))
    }
}
