//! Asking the person behind an MCP client: whether a tool call may run, and what a
//! plugin (or a plugin's own MCP server) asks during a call.
//!
//! Two revisions of MCP, two ways to reach the person ([`Asker`]):
//! - up to 2025-11-25, the server sends the client an `elicitation/create` request in
//!   the middle of the `tools/call` ([`Asker::Session`]);
//! - from 2026-07-28, servers send clients no requests: the `tools/call` answers "input
//!   required" with the question, and the client asks the person and calls again with
//!   the answer (Multi Round-Trip Requests). [`Asker::Rounds`] hands the question to the
//!   paused program's rounds ([`super::rounds`]) and waits for the answer they bring.
//!
//! The questions are the same either way: a yes-or-no question, a form, or a page to
//! open, with the text a person can trust ([`codemode_core::tool::shown`]).
//!
//! Either way the program waits for a person, and its worker is idle meanwhile: the
//! program pauses ([`super::slots::Seat::pause`], giving its slot back) before its
//! question goes out, and resumes (waiting for a slot) once the answer is in. A
//! question that would pause a program beyond the caps of paused programs is not
//! asked; the call rejects saying why.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest,
};
use rmcp::{Peer, RoleServer};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::slots::Seat;
use codemode_core::tool::form::Form;
use codemode_core::tool::{ApprovalAnswer, ApprovalQuestion};

/// How long a question waits for its answer by default (`[server] answer_wait_ms`):
/// a 2026-07-28 client coming back with it, or a client with sessions answering its
/// `elicitation/create` or `sampling/createMessage` (within the program's wall clock).
pub const ANSWER_WAIT: Duration = Duration::from_secs(5 * 60);

/// How long one program's questions wait for their answers, and whether one already
/// went unanswered: then its client is taken to be gone, and the program's later
/// questions are refused at once instead of pausing it again. So a program whose client
/// dropped away is paused for at most one wait, and then runs to its end.
#[derive(Debug)]
pub struct AnswerWait {
    limit: Duration,
    unanswered: std::sync::atomic::AtomicBool,
}

impl AnswerWait {
    /// A program's wait of `limit` per question.
    pub fn new(limit: Duration) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self { limit, unanswered: std::sync::atomic::AtomicBool::new(false) })
    }

    /// Why nothing more is asked, once a question went unanswered.
    pub(crate) fn gone(&self) -> Option<String> {
        self.unanswered.load(std::sync::atomic::Ordering::Acquire).then(|| {
            format!(
                "an earlier question of this program went unanswered for {}, so its client is taken to be gone and nothing more is asked",
                codemode_core::limits::human_duration(self.limit)
            )
        })
    }

    /// `answer` within the limit; past it, `Err` says so and the program's later
    /// questions are not asked.
    pub(crate) async fn within<T>(&self, answer: impl std::future::Future<Output = T>) -> Result<T, String> {
        match tokio::time::timeout(self.limit, answer).await {
            Ok(answer) => Ok(answer),
            Err(_) => {
                self.unanswered.store(true, std::sync::atomic::Ordering::Release);
                Err(format!(
                    "no answer came within {} (`[server] answer_wait_ms`)",
                    codemode_core::limits::human_duration(self.limit)
                ))
            }
        }
    }
}

/// A question for the client, on its way to the rounds of a paused program, with where
/// the answer goes: an elicitation for the person, or a sampling request for the
/// client's model ([`super::sampling`]).
pub struct Question {
    /// What to ask (`elicitation/create` or `sampling/createMessage`).
    pub request: InputRequest,
    /// Where the client's answer goes, as it sent it (the asker reads it).
    pub answer: oneshot::Sender<Value>,
}

impl Question {
    /// An elicitation for the person, and where its answer arrives.
    pub fn elicitation(request: ElicitRequestParams) -> (Self, oneshot::Receiver<Value>) {
        let (answer, answered) = oneshot::channel();
        (Self { request: InputRequest::Elicitation(ElicitRequest::new(request)), answer }, answered)
    }
}

/// Who carries a question to the person.
#[derive(Clone)]
pub enum Asker {
    /// A client of a revision with sessions: an `elicitation/create` request to it.
    Session {
        /// The client.
        peer: Peer<RoleServer>,
        /// The asking program's seat (none for a tool called directly, which holds no
        /// program slot).
        seat: Option<Weak<Seat>>,
        /// How long its questions wait.
        wait: std::sync::Arc<AnswerWait>,
    },
    /// A 2026-07-28 client: the question ends the current round of the paused program
    /// ([`super::rounds`]); the answer comes with the client's next request.
    Rounds {
        /// What the client said it can do (in the request's `_meta`).
        capabilities: ClientCapabilities,
        /// The program's rounds.
        questions: mpsc::UnboundedSender<Question>,
        /// The asking program's seat.
        seat: Weak<Seat>,
        /// How long its questions wait.
        wait: std::sync::Arc<AnswerWait>,
    },
}

impl Asker {
    /// What the client can do.
    pub(crate) fn capabilities(&self) -> Option<ClientCapabilities> {
        match self {
            Asker::Session { peer, .. } => peer.peer_info().map(|info| info.capabilities.clone()),
            Asker::Rounds { capabilities, .. } => Some(capabilities.clone()),
        }
    }

    /// How long the program's questions wait, and whether one went unanswered.
    pub(crate) fn wait(&self) -> &AnswerWait {
        match self {
            Asker::Session { wait, .. } | Asker::Rounds { wait, .. } => wait,
        }
    }

    /// The asking program's seat (held weakly: a program that ends while its question
    /// waits gives its seat back at once).
    pub(crate) fn seat(&self) -> Option<Weak<Seat>> {
        match self {
            Asker::Session { seat, .. } => seat.clone(),
            Asker::Rounds { seat, .. } => Some(seat.clone()),
        }
    }

    /// Sends an elicitation and reads the person's action. The program is paused while
    /// it waits (or, beyond the caps of paused programs, the question is not sent),
    /// and waits for a slot again before it goes on.
    async fn send(&self, request: ElicitRequestParams) -> Asked {
        if let Some(gone) = self.wait().gone() {
            return Asked::Failed(gone);
        }
        let seat = self.seat();
        if let Some(living) = seat.as_ref().and_then(Weak::upgrade) {
            if let Err(refused) = living.pause().await {
                return Asked::Failed(refused.to_string());
            }
        }
        let asked = self.send_paused(request).await;
        if let Some(living) = seat.as_ref().and_then(Weak::upgrade) {
            living.resume().await;
        }
        asked
    }

    /// Sends an elicitation and reads the person's action (the program paused).
    async fn send_paused(&self, request: ElicitRequestParams) -> Asked {
        let answer = match self {
            Asker::Session { peer, wait, .. } => {
                wait.within(peer.create_elicitation(request)).await.and_then(|answer| answer.map_err(|e| e.to_string()))
            }
            Asker::Rounds { questions, wait, .. } => {
                let (question, answered) = Question::elicitation(request);
                if questions.send(question).is_err() {
                    return Asked::Failed("the program's requests are over".into());
                }
                match wait.within(answered).await {
                    Ok(Ok(answer)) => Ok(serde_json::from_value::<ElicitResult>(answer).unwrap_or_else(|e| {
                        tracing::debug!("an input response is not an elicitation result: {e}");
                        ElicitResult::new(ElicitationAction::Cancel)
                    })),
                    Ok(Err(_)) => Err("the program's requests ended before the client answered".into()),
                    Err(late) => Err(format!("the client did not come back with the person's answer: {late}")),
                }
            }
        };
        match answer {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept => Asked::Accepted(match answer.content {
                    Some(Value::Object(map)) => Some(map),
                    _ => None,
                }),
                ElicitationAction::Decline => Asked::Declined,
                _ => Asked::Cancelled,
            },
            Err(e) => Asked::Failed(e),
        }
    }
}

/// Asking a person to approve a call, through MCP elicitation.
pub struct Approvals;

/// What the person said, or why nobody could be asked.
enum Asked {
    Accepted(Option<serde_json::Map<String, Value>>),
    Declined,
    Cancelled,
    CannotAsk,
    Failed(String),
}

impl Approvals {
    /// Asks the client's person whether `plugin.tool` may run with `input`. `Err` is the
    /// message the call rejects with: declined, or the client cannot ask.
    pub async fn ask_to_run(
        asker: Asker,
        plugin: String,
        tool: String,
        input: Value,
        reason: Option<String>,
    ) -> Result<(), String> {
        let name = format!("tools.{plugin}.{tool}");
        let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
        let shown = codemode_core::tool::shown::input_for_person(&input)
            .map_err(|refused| format!("{name} needs a person's approval, and {refused}"))?;
        let message = codemode_core::tool::shown::visible(&format!(
            "Allow the tool {tool} of plugin {plugin}{why} to run with this input?\n\n{shown}"
        ));
        match Self::elicit(&asker, message).await {
            Asked::Accepted(_) => Ok(()),
            Asked::Declined => Err(format!("the person declined the call to {name}")),
            Asked::Cancelled => Err(format!("the person cancelled the approval of {name}, so it did not run")),
            Asked::CannotAsk => Err(format!(
                "{name} needs a person's approval, but this MCP client cannot ask (it does not support elicitation). Use a client that supports elicitation; when the approval comes from `require_approval` in plugin {plugin}'s configuration entry, removing the tool there lets it run unasked"
            )),
            Asked::Failed(e) => Err(format!("asking for approval of {name} failed: {e}")),
        }
    }

    /// Asks the client's person what a tool asked during a call: a plugin's
    /// `host/approve`, or a form or page its MCP server asked about (passed on as the
    /// same kind of elicitation, its answer completed with the form's defaults).
    pub async fn ask_for_plugin(asker: Asker, question: ApprovalQuestion) -> ApprovalAnswer {
        let mut message =
            format!("The tool {} of plugin {} asks: {}", question.tool, question.plugin, question.message.trim());
        if let Some(details) = &question.details {
            match codemode_core::tool::shown::input_for_person(details) {
                Ok(shown) => message.push_str(&format!("\n\n{shown}")),
                Err(refused) => return ApprovalAnswer::refused(format!("the question's details: {refused}")),
            }
        }
        let message = codemode_core::tool::shown::visible(&message);
        let form = match question.form.as_ref().map(|schema| (Form::from_schema(schema), schema)) {
            Some((Ok(form), schema)) => Some((form, schema.clone())),
            Some((Err(why), _)) => return ApprovalAnswer::refused(format!("the form cannot be shown: {why}")),
            None => None,
        };
        let asked = match (&question.link, &form) {
            (Some(link), _) => Self::elicit_link(&asker, message, link.clone()).await,
            (None, Some((_, schema))) => Self::elicit_form(&asker, message, schema.clone()).await,
            (None, None) => Self::elicit(&asker, message).await,
        };
        match asked {
            Asked::Accepted(content) => match form {
                Some((form, _)) => ApprovalAnswer::filled(form.complete(content.unwrap_or_default())),
                None => ApprovalAnswer::allowed(),
            },
            Asked::Declined => ApprovalAnswer::refused("the person declined"),
            Asked::Cancelled => ApprovalAnswer::dismissed("the person cancelled the question"),
            Asked::CannotAsk => {
                ApprovalAnswer::refused("nobody can be asked: this MCP client does not support elicitation")
            }
            Asked::Failed(e) => ApprovalAnswer::refused(format!("asking the person failed: {e}")),
        }
    }

    /// A yes-or-no question (an elicitation with an empty form).
    async fn elicit(asker: &Asker, message: String) -> Asked {
        Self::elicit_form(asker, message, json!({ "type": "object", "properties": {} })).await
    }

    /// A form, as the server's own elicitation.
    async fn elicit_form(asker: &Asker, message: String, schema: Value) -> Asked {
        if asker.capabilities().is_none_or(|c| c.elicitation.is_none()) {
            return Asked::CannotAsk;
        }
        let Value::Object(schema) = schema else {
            return Asked::Failed("the form is not a JSON object schema".into());
        };
        let schema = match ElicitationSchema::from_json_schema(schema) {
            Ok(schema) => schema,
            Err(e) => return Asked::Failed(e.to_string()),
        };
        asker.send(ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema }).await
    }

    /// A page to open: URL elicitation where the client supports it, else a question
    /// whose text holds the link.
    async fn elicit_link(asker: &Asker, message: String, url: String) -> Asked {
        let url_mode =
            asker.capabilities().and_then(|c| c.elicitation.as_ref().map(|e| e.url.is_some())).unwrap_or(false);
        if !url_mode {
            return Self::elicit(asker, format!("{message}\n\nOpen this page to continue: {url}")).await;
        }
        let id = format!("codemode-{}", ELICITATIONS.fetch_add(1, Ordering::Relaxed));
        asker.send(ElicitRequestParams::UrlElicitationParams { meta: None, message, url, elicitation_id: id }).await
    }
}

/// Numbers URL elicitations.
static ELICITATIONS: AtomicU64 = AtomicU64::new(1);
