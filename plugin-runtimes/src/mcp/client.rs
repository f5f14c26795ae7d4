//! What an MCP server sends codemode during a session, and where it goes:
//!
//! - **elicitation** (`elicitation/create`, a form to fill in or a page to open) during a
//!   tool call: to the person behind that call, through the same approval path as a
//!   plugin's `host/approve` ([`Approver`]): the terminal under `codemode run`, the
//!   agent's own MCP client under `codemode mcp`/`serve`. An accepted form is completed
//!   with its defaults before it goes back (SEP-1034);
//! - **sampling** (`sampling/createMessage`, a request for a model's completion) during
//!   a tool call: to the model of the MCP client that runs the program, through the
//!   call's [`Sampler`] (text only; under `codemode run` there is none, and the request
//!   fails saying so) ([`sample`]);
//! - **progress** of a call: to whoever follows that program's calls ([`ProgressSink`];
//!   under the MCP server, the execute request's own progress);
//! - **log messages**: to codemode's log, at their level, under the plugin's name;
//! - **tool list changes**: the host asks for the tools again.
//!
//! Up to 2025-11-25, MCP does not say which of the client's requests a server's
//! elicitation belongs to. codemode asks the person behind the calls in flight when they
//! all have the same one; with calls of several programs in flight it cannot tell whose
//! question it is, and declines rather than ask the wrong person ([`InFlight::asker`]).
//! From 2026-07-28 the question comes back as the call's own answer ("input required"),
//! and goes to that call's person ([`ask_person`], from `McpPlugin::call_tool`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    UrlElicitationCapability,
};
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};

use codemode_core::tool::form::Form;
use codemode_core::tool::{ApprovalQuestion, Approver, CallProgress, ProgressSink, SampleRequest, Sampler};

/// Who is behind one call in flight.
#[derive(Clone)]
pub(super) struct CallPeers {
    /// The tool.
    pub tool: String,
    /// Who answers the person's questions.
    pub approver: Option<Arc<dyn Approver>>,
    /// Who hears its progress.
    pub progress: Option<Arc<dyn ProgressSink>>,
    /// Who asks a model for it (the MCP client's).
    pub sampler: Option<Arc<dyn Sampler>>,
}

/// The calls in flight on one session, by the progress token of their request.
#[derive(Default)]
pub(super) struct InFlight {
    calls: Mutex<HashMap<ProgressToken, CallPeers>>,
}

/// Removes a call from [`InFlight`] when it ends, however it ends.
pub(super) struct Leave {
    calls: Arc<InFlight>,
    token: ProgressToken,
}

impl Drop for Leave {
    fn drop(&mut self) {
        self.calls.calls.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.token);
    }
}

impl InFlight {
    /// Records a call until the returned guard is dropped.
    pub(super) fn enter(self: &Arc<Self>, token: ProgressToken, peers: CallPeers) -> Leave {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).insert(token.clone(), peers);
        Leave { calls: Arc::clone(self), token }
    }

    fn get(&self, token: &ProgressToken) -> Option<CallPeers> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).get(token).cloned()
    }

    /// The one client whose model to ask, with a tool it called; `Err` says why none is
    /// (the same rule as for [`InFlight::asker`]).
    fn sampler(&self) -> Result<(String, Arc<dyn Sampler>), String> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let mut samplers = calls.values().filter_map(|c| Some((c.tool.clone(), Arc::clone(c.sampler.as_ref()?))));
        let Some(first) = samplers.next() else {
            return Err(if calls.is_empty() {
                "no call of its tools is in flight, so there is no client whose model to ask".into()
            } else {
                "its calls in flight come from no MCP client, so there is no model to ask (codemode run has none)"
                    .into()
            });
        };
        // Each request's hooks make their own sampler: calls of one program share the
        // asker, not the sampler, so a model request with several calls in flight is
        // refused unless they are one call.
        if calls.len() == 1 {
            Ok(first)
        } else {
            Err("several calls are in flight and codemode cannot tell which one's client to ask".into())
        }
    }

    /// The one person to ask, with a tool they called; `Err` says why nobody is asked.
    fn asker(&self) -> Result<(String, Arc<dyn Approver>), String> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let mut askers = calls.values().filter_map(|c| Some((c.tool.clone(), Arc::clone(c.approver.as_ref()?))));
        let Some(first) = askers.next() else {
            return Err(if calls.is_empty() {
                "no call of its tools is in flight, so there is nobody to ask".into()
            } else {
                "its calls in flight have nobody to ask".into()
            });
        };
        let same = |other: &Arc<dyn Approver>| Arc::as_ptr(other).cast::<()>() == Arc::as_ptr(&first.1).cast::<()>();
        if askers.all(|(_, a)| same(&a)) {
            Ok(first)
        } else {
            Err("calls of several programs are in flight and codemode cannot tell which one's person it is for".into())
        }
    }
}

/// Asks the person behind a call of `plugin.tool` what its server asked (an
/// elicitation: a form to fill in or a page to open), through the call's `approver`,
/// and says their answer as the server reads it (an accepted form completed with its
/// defaults, SEP-1034). Both ways a server asks use it: an `elicitation/create` request
/// during the call (up to 2025-11-25), and an "input required" answer to the call
/// (2026-07-28).
pub(super) async fn ask_person(
    plugin: &str,
    tool: String,
    approver: &Arc<dyn Approver>,
    request: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
    let mut question = ApprovalQuestion { plugin: plugin.to_string(), tool, ..ApprovalQuestion::default() };
    let form = match request {
        ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
            question.message = message;
            let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
            let form = Form::from_schema(&schema).map_err(|why| ErrorData::invalid_params(why, None))?;
            question.form = Some(schema);
            Some(form)
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            question.message = message;
            question.link = Some(url);
            None
        }
        _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
    };
    let answer = approver.ask(question).await;
    let action = match (answer.approved, answer.cancelled) {
        (true, _) => ElicitationAction::Accept,
        (false, true) => ElicitationAction::Cancel,
        (false, false) => ElicitationAction::Decline,
    };
    if let Some(reason) = answer.reason.as_deref().filter(|_| !answer.approved) {
        tracing::info!(plugin = %plugin, "the server's question was not accepted: {reason}");
    }
    let mut result = ElicitResult::new(action);
    if let (true, Some(form)) = (answer.approved, form) {
        let content = form.complete(answer.content.unwrap_or_default());
        result = result.with_content(serde_json::Value::Object(content));
    }
    Ok(result)
}

/// A server's `sampling/createMessage` during a call of `plugin.tool`, asked of the
/// call's `sampler` (the model of the MCP client that runs the program, which decides
/// and may ask its person). Only text reaches the model this way; `Err` says why not.
/// Both ways a server asks use it: a request during the call (up to 2025-11-25), and
/// an "input required" answer to the call (2026-07-28).
#[allow(deprecated)] // MCP's sampling (SEP-2577), which servers still send.
pub(super) async fn sample(
    plugin: &str,
    tool: String,
    sampler: Option<Arc<dyn Sampler>>,
    params: rmcp::model::CreateMessageRequestParams,
) -> Result<rmcp::model::CreateMessageResult, String> {
    use rmcp::model::{CreateMessageResult, Role, SamplingMessage, SamplingMessageContentBlock};
    let api = format!("the MCP server of plugin {plugin}");
    let Some(sampler) = sampler else {
        return Err(format!("{api} asked for a model's completion (sampling), and codemode has no model of its own: it asks the model of the MCP client that runs the program, and this program has no MCP client (codemode run)"));
    };
    let mut messages = Vec::new();
    for message in &params.messages {
        let mut text = String::new();
        for block in message.content.iter() {
            let Some(part) = block.as_text() else {
                return Err(format!("{api} asked for a model's completion with content other than text, which codemode does not pass on (it forwards text alone)"));
            };
            text.push_str(&part.text);
        }
        let role = if message.role == Role::Assistant { "assistant" } else { "user" };
        messages.push(protocol::plugin::SampleMessage { role: role.into(), content: text });
    }
    let hints = params.model_preferences.as_ref().and_then(|p| p.hints.as_ref());
    let params = protocol::plugin::SampleParams {
        call: protocol::plugin::RequestId::Number(0),
        messages,
        system_prompt: params.system_prompt.clone(),
        max_tokens: Some(params.max_tokens),
        temperature: params.temperature,
        stop_sequences: params.stop_sequences.clone().unwrap_or_default(),
        model_hints: hints.map(|h| h.iter().filter_map(|h| h.name.clone()).collect()).unwrap_or_default(),
        api: Some(api),
    };
    let answer = sampler.sample(SampleRequest { plugin: plugin.to_string(), tool, params }).await?;
    let message = SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(answer.text));
    let mut result = CreateMessageResult::new(message, answer.model);
    result.stop_reason = answer.stop_reason;
    Ok(result)
}

/// codemode's side of one MCP session with a plugin's server.
#[derive(Clone)]
pub(super) struct ServerMessages {
    /// The plugin.
    pub plugin: String,
    /// Bumped when the server's tool list changes.
    pub changed: tokio::sync::watch::Sender<u64>,
    /// The calls in flight.
    pub calls: Arc<InFlight>,
}

impl ClientHandler for ServerMessages {
    fn get_info(&self) -> ClientConfig {
        let elicitation = ElicitationCapability::new()
            .with_form(FormElicitationCapability::new().with_schema_validation(true))
            .with_url(UrlElicitationCapability::new());
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        // A server's model requests go to the model of the MCP client running the
        // program ([`sample`]).
        #[allow(deprecated)]
        {
            capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        // The handshake's revision, for servers that answer `initialize` (those that
        // speak 2026-07-28 are found with `server/discover`: see `McpPlugin::connect`).
        ClientConfig::new(capabilities, Implementation::new("codemode", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (tool, approver) = match self.calls.asker() {
            Ok(found) => found,
            Err(why) => {
                tracing::warn!(plugin = %self.plugin, "the server asked a person something and codemode declined: {why}");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        ask_person(&self.plugin, tool, &approver, request).await
    }

    #[allow(deprecated)] // MCP's sampling (SEP-2577), which servers of 2025-11-25 still send.
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let (tool, sampler) = self.calls.sampler().map_err(|why| {
            ErrorData::invalid_request(format!("codemode cannot ask a model for this request: {why}"), None)
        })?;
        sample(&self.plugin, tool, Some(sampler), params).await.map_err(|why| ErrorData::internal_error(why, None))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let Some(call) = self.calls.get(&params.progress_token) else { return };
        if let Some(sink) = &call.progress {
            sink.progress(CallProgress {
                plugin: self.plugin.clone(),
                tool: call.tool,
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }

    // MCP's logging is deprecated by SEP-2577 for later revisions; servers speaking the
    // revisions codemode negotiates (up to 2025-11-25) still send it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = match &params.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let logger = params.logger.as_deref().unwrap_or("");
        match params.level {
            LoggingLevel::Debug => tracing::debug!(plugin = %self.plugin, logger, "{text}"),
            LoggingLevel::Info | LoggingLevel::Notice => tracing::info!(plugin = %self.plugin, logger, "{text}"),
            LoggingLevel::Warning => tracing::warn!(plugin = %self.plugin, logger, "{text}"),
            _ => tracing::error!(plugin = %self.plugin, logger, "{text}"),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use codemode_core::tool::ApprovalAnswer;
    use futures::future::BoxFuture;

    struct Yes;
    impl Approver for Yes {
        fn ask(&self, _question: ApprovalQuestion) -> BoxFuture<'static, ApprovalAnswer> {
            Box::pin(async { ApprovalAnswer::allowed() })
        }
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(n))
    }

    #[test]
    fn questions_go_to_the_one_person_behind_the_calls_or_to_nobody() {
        let calls = Arc::new(InFlight::default());
        assert!(calls.asker().unwrap_err().contains("no call"));
        let person: Arc<dyn Approver> = Arc::new(Yes);
        let peers = |approver: Option<Arc<dyn Approver>>| CallPeers {
            tool: "t".into(),
            approver,
            progress: None,
            sampler: None,
        };
        let unattended = calls.enter(token(1), peers(None));
        assert!(calls.asker().unwrap_err().contains("nobody to ask"));
        let a = calls.enter(token(2), peers(Some(Arc::clone(&person))));
        let b = calls.enter(token(3), peers(Some(Arc::clone(&person))));
        assert!(calls.asker().is_ok(), "two calls of one program share their person");
        let other = calls.enter(token(4), peers(Some(Arc::new(Yes))));
        assert!(calls.asker().unwrap_err().contains("several programs"));
        drop(other);
        assert!(calls.asker().is_ok());
        drop((a, b, unattended));
        assert!(calls.calls.lock().unwrap().is_empty(), "every call leaves when it ends");
    }
}
