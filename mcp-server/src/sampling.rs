//! A plugin's model calls, answered by the MCP client's model: step 4 of one tool call
//! (the tool runs) when its plugin asks `host/sample` (seed 003's `host.llm`,
//! `host.session.llm` and `host.decide`, seed 000's `api.models.prompt`, a process
//! plugin's own request). The plugin runtime finds the call's [`Sampler`]
//! (`CallContext::sampler`, from the dispatch hooks of the request that runs the
//! program); this is the one the MCP server gives, per request.
//!
//! codemode has no model of its own. The client's is asked the way the client's
//! revision allows ([`Asker`], as for approvals):
//! - up to 2025-11-25, a `sampling/createMessage` request to the client in the middle
//!   of the `tools/call`;
//! - from 2026-07-28, the round ends "input required" with the same request
//!   ([`super::rounds`]), and the client's next call brings the model's answer.
//!
//! Either way the client decides: which model answers, and whether its person sees and
//! approves the request first (codemode asks nobody of its own about it). The program
//! is paused meanwhile ([`super::slots::Seat::pause`]). A client that did not declare
//! the sampling capability is not asked: the plugin's call fails naming what it needs.
//!
//! Questions waiting for the client's model are bounded ([`Waiting`]): per program
//! ([`MAX_PER_PROGRAM`]), per session ([`MAX_PER_SESSION`]) and for the whole server
//! ([`MAX_WAITING`] questions, [`MAX_WAITING_BYTES`] of their text). A question past a
//! bound is not sent: the plugin's call rejects, naming the bound.

// MCP's sampling is deprecated by SEP-2577 for revisions after 2025-11-25, the newest
// one codemode speaks without rounds; 2026-07-28 still carries it as an input request.
#![allow(deprecated)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, InputRequest, ModelHint, ModelPreferences,
    Role, SamplingMessage, SamplingMessageContentBlock,
};
use tokio::sync::oneshot;

use super::approvals::{Asker, Question};
use codemode_core::tool::{SampleRequest, Sampler};
use protocol::plugin::{SampleParams, SampleResult};

/// The token bound of a request that gives none (MCP requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// Questions one program may have waiting for the client's model at once.
pub const MAX_PER_PROGRAM: usize = 8;
/// Questions one session (a 2026-07-28 program: its own) may have waiting at once.
pub const MAX_PER_SESSION: usize = 16;
/// Questions waiting for all clients' models together.
pub const MAX_WAITING: usize = 128;
/// Bytes of question text (messages and system prompt) waiting, for all clients
/// together: what the host holds for sampling is at most this.
pub const MAX_WAITING_BYTES: usize = 64 << 20;

/// What the whole server has waiting (one server per process).
static SERVER_QUESTIONS: AtomicUsize = AtomicUsize::new(0);
static SERVER_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The counts a question is held under: its program's and its session's.
#[derive(Clone, Default)]
pub struct Waiting {
    /// The program's (one request's) questions waiting.
    pub program: Arc<AtomicUsize>,
    /// The session's questions waiting.
    pub session: Arc<AtomicUsize>,
}

/// One question counted as waiting, until dropped.
struct Held {
    counts: [Arc<AtomicUsize>; 2],
    bytes: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        for count in &self.counts {
            count.fetch_sub(1, Ordering::AcqRel);
        }
        SERVER_QUESTIONS.fetch_sub(1, Ordering::AcqRel);
        SERVER_BYTES.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Takes `amount` of `count` if it stays within `max`.
fn take(count: &AtomicUsize, amount: usize, max: usize) -> bool {
    count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_add(amount).filter(|t| *t <= max)).is_ok()
}

impl Waiting {
    /// Counts a question of `bytes` as waiting, or says which bound it would pass.
    fn hold(&self, api: &str, bytes: usize) -> Result<Held, String> {
        let refuse = |what: String| {
            format!("{api}: {what}; await the model's answers before asking more (the bounds are in docs/limits.md)")
        };
        if !take(&self.program, 1, MAX_PER_PROGRAM) {
            return Err(refuse(format!("this program has {MAX_PER_PROGRAM} questions waiting for the client's model already, the most one program may")));
        }
        if !take(&self.session, 1, MAX_PER_SESSION) {
            self.program.fetch_sub(1, Ordering::AcqRel);
            return Err(refuse(format!("this session has {MAX_PER_SESSION} questions waiting for the client's model already, the most one session may")));
        }
        let server = take(&SERVER_QUESTIONS, 1, MAX_WAITING);
        if !server || !take(&SERVER_BYTES, bytes, MAX_WAITING_BYTES) {
            if server {
                SERVER_QUESTIONS.fetch_sub(1, Ordering::AcqRel);
            }
            self.program.fetch_sub(1, Ordering::AcqRel);
            self.session.fetch_sub(1, Ordering::AcqRel);
            return Err(refuse(format!("the server holds {MAX_WAITING} questions or {} MiB of question text for clients' models already, the most it keeps", MAX_WAITING_BYTES >> 20)));
        }
        Ok(Held { counts: [Arc::clone(&self.program), Arc::clone(&self.session)], bytes })
    }
}

/// Asks the model of the client behind one request.
pub struct ClientSampler {
    asker: Asker,
    waiting: Waiting,
}

impl ClientSampler {
    /// A sampler reaching the client the way `asker` reaches its person, its questions
    /// counted under `waiting`.
    pub fn new(asker: Asker, waiting: Waiting) -> Self {
        Self { asker, waiting }
    }
}

impl Sampler for ClientSampler {
    fn sample(&self, request: SampleRequest) -> BoxFuture<'static, Result<SampleResult, String>> {
        let asker = self.asker.clone();
        let waiting = self.waiting.clone();
        Box::pin(async move { sample(asker, waiting, request).await })
    }
}

/// What the plugin's call rejects with when the client cannot sample.
pub fn unsupported(api: &str) -> String {
    format!(
        "this MCP client does not support sampling (sampling/createMessage), which {api} needs: codemode has no model of its own and asks the model of the client that runs the program; use a client that offers sampling"
    )
}

async fn sample(asker: Asker, waiting: Waiting, request: SampleRequest) -> Result<SampleResult, String> {
    let api = request.api().to_string();
    if asker.capabilities().is_none_or(|c| c.sampling.is_none()) {
        return Err(unsupported(&api));
    }
    let text = &request.params;
    let bytes = text.messages.iter().map(|m| m.content.len()).sum::<usize>()
        + text.system_prompt.as_ref().map_or(0, String::len);
    if let Some(gone) = asker.wait().gone() {
        return Err(format!("{api}: {gone}"));
    }
    let _held = waiting.hold(&api, bytes)?;
    let params = create_message(request.params);
    let seat = asker.seat();
    if let Some(living) = seat.as_ref().and_then(Weak::upgrade) {
        if let Err(refused) = living.pause().await {
            return Err(format!("{api}: {refused}"));
        }
    }
    let answered = ask(&asker, params).await;
    if let Some(living) = seat.as_ref().and_then(Weak::upgrade) {
        living.resume().await;
    }
    let result = answered.map_err(|e| format!("{api}: the client did not answer with its model: {e}"))?;
    Ok(answer(result))
}

/// Sends the request the client's revision allows and reads its answer.
async fn ask(asker: &Asker, params: CreateMessageRequestParams) -> Result<CreateMessageResult, String> {
    match asker {
        Asker::Session { peer, wait, .. } => {
            wait.within(peer.create_message(params)).await.and_then(|answer| answer.map_err(|e| e.to_string()))
        }
        Asker::Rounds { questions, wait, .. } => {
            let (answer, answered) = oneshot::channel();
            let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
            if questions.send(Question { request, answer }).is_err() {
                return Err("the program's requests are over".into());
            }
            match wait.within(answered).await {
                Ok(Ok(answer)) => serde_json::from_value::<CreateMessageResult>(answer)
                    .map_err(|e| format!("its answer is not a sampling result: {e}")),
                Ok(Err(_)) => Err("the program's requests ended before the client answered".into()),
                Err(late) => Err(format!("the client did not come back with its model's answer: {late}")),
            }
        }
    }
}

/// The plugin's request as MCP's `sampling/createMessage` parameters, its text moved
/// (a question is held once while it waits).
fn create_message(params: SampleParams) -> CreateMessageRequestParams {
    let messages = params
        .messages
        .into_iter()
        .map(|m| {
            let role = if m.role == "assistant" { Role::Assistant } else { Role::User };
            SamplingMessage::new(role, SamplingMessageContentBlock::text(m.content))
        })
        .collect();
    let mut request = CreateMessageRequestParams::new(messages, params.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS));
    request.system_prompt = params.system_prompt;
    request.temperature = params.temperature;
    if !params.stop_sequences.is_empty() {
        request.stop_sequences = Some(params.stop_sequences);
    }
    if !params.model_hints.is_empty() {
        request.model_preferences =
            Some(ModelPreferences::new().with_hints(params.model_hints.iter().map(ModelHint::new).collect()));
    }
    request
}

/// The client's answer as the plugin reads it: its text parts joined.
fn answer(result: CreateMessageResult) -> SampleResult {
    let text: String = result.message.content.iter().filter_map(|c| c.as_text().map(|t| t.text.as_str())).collect();
    SampleResult { text, model: result.model, stop_reason: result.stop_reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::plugin::{RequestId, SampleMessage};

    #[test]
    fn a_plugin_request_becomes_mcp_sampling_parameters() {
        let params = SampleParams {
            call: RequestId::Number(1),
            messages: vec![
                SampleMessage { role: "user".into(), content: "Hi".into() },
                SampleMessage { role: "assistant".into(), content: "Hello".into() },
            ],
            system_prompt: Some("Be brief.".into()),
            max_tokens: None,
            temperature: Some(0.5),
            stop_sequences: vec![],
            model_hints: vec!["gpt-5.5".into()],
            api: Some("host.llm".into()),
        };
        let value = serde_json::to_value(create_message(params.clone())).unwrap_or_default();
        assert_eq!(
            value,
            serde_json::json!({
                "messages": [
                    { "role": "user", "content": { "type": "text", "text": "Hi" } },
                    { "role": "assistant", "content": { "type": "text", "text": "Hello" } },
                ],
                "modelPreferences": { "hints": [{ "name": "gpt-5.5" }] },
                "systemPrompt": "Be brief.",
                "temperature": 0.5,
                "maxTokens": DEFAULT_MAX_TOKENS,
            })
        );
    }

    #[test]
    fn the_answer_is_its_text_the_model_and_why_it_stopped() {
        let result = CreateMessageResult::new(
            SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text("Blue.")),
            "claude-x".into(),
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN);
        assert_eq!(
            answer(result),
            SampleResult { text: "Blue.".into(), model: "claude-x".into(), stop_reason: Some("endTurn".into()) }
        );
    }
}
