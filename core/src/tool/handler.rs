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

/// Hears how the calls of one program are going.
pub trait ProgressSink: Send + Sync + 'static {
    /// A call reported progress.
    fn progress(&self, report: CallProgress);
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
}

impl CallContext {
    /// The context as plugins receive it (`tool/call`'s `context`): the caller's fields,
    /// and `callId` (the agent's id when it gave one, else the program's call number).
    pub fn wire(&self) -> protocol::plugin::CallContext {
        let c = &*self.caller;
        protocol::plugin::CallContext {
            workspace_id: c.workspace_id.clone(),
            workspace: c.workspace.clone(),
            agent_id: c.agent_id.clone(),
            chat_id: c.chat_id.clone(),
            call_id: Some(c.call_id.clone().unwrap_or_else(|| self.call_id.to_string())),
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
