//! `execute` for MCP 2026-07-28 clients: a program that pauses for a person's answer
//! between requests (Multi Round-Trip Requests).
//!
//! A 2026-07-28 server sends its client no requests. When a program's tool call needs
//! a person's approval (or a plugin asks something), the `tools/call` that runs it
//! answers "input required" with the question and an opaque `requestState`; the client
//! asks the person and calls `execute` again with the answer and the state. Meanwhile
//! the program waits in its worker, its tool call pending in the host:
//!
//! 1. a call without `requestState` starts the program in a task of its own ([`Run`]),
//!    and waits for its first event: its end (the result) or a question (the round
//!    ends "input required");
//! 2. a call with `requestState` finds the run ([`Rounds::resume`]), hands each answer
//!    to the question waiting for it, and waits for the next event the same way. A
//!    question left unanswered is asked again; a state sent again without answers just
//!    waits for the next event;
//! 3. retries of one state may come at once (a client or a load balancer that tries
//!    again): they take their turns at the run, and each is answered. The program's
//!    result goes to the first that finds it; every later retry of the run is told
//!    [`ALREADY_ANSWERED`] at once, for as long as the run is kept (a retry never
//!    waits for an event that cannot come);
//! 4. an answer that never comes: the waiting question is refused after
//!    `[server] answer_wait_ms` ([`super::approvals::AnswerWait`]: the tool call
//!    rejects and the program goes on), and the program's later questions are refused
//!    at once, so it is paused at most once that long; it ends at its wall clock at the
//!    latest, with that outcome; its result is kept a while for a late retry
//!    ([`RESULT_KEPT`], and only the newest [`MAX_ENDED_RUNS`] of all clients'). A program whose client went away runs to its end under its
//!    limits, like a call it never awaited.
//!
//! While a program waits for an answer it holds no program slot
//! ([`super::slots::Seat::pause`]): paused programs never keep others from running.
//!
//! The state is sealed with authenticated encryption ([`super::sealed_state`]:
//! ChaCha20-Poly1305 under a key derived from the state key), so the client reads
//! nothing in it (not the run, not the replica), and bound to the caller: its
//! associated data is a digest of the request's `Authorization` (or "stdio"), checked
//! again against the run. A forged state, a changed one, another client's state, a
//! state for a run that is over, or one past its time all fail the same way.
//!
//! **Replicas.** Under `codemode serve` behind a load balancer, the retry may reach
//! another replica. The state names the replica that holds the run
//! (`[server] replica_url`); a replica that can open the state (every replica shares
//! the key, `CODEMODE_STATE_KEY`) and is not that one passes the request on to it
//! ([`Rounds::forward`]) and answers with its answer. When that replica is gone, the
//! call fails saying so: the program went with it. Replica addresses stay inside the
//! deployment: what a client is told never names one (the server's log does).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResponse, CallToolResult, InputRequests, InputRequiredResult, InputResponses};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use sha2::Digest;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::approvals::Question;
use super::sealed_state::StateSealer;

/// The shortest request-state key accepted, in bytes.
pub const MIN_KEY_LENGTH: usize = 32;

/// How long a finished program's result waits for a client that has not come back.
pub const RESULT_KEPT: Duration = Duration::from_secs(5 * 60);

/// The most ended runs the server keeps (with a result nobody came back for, or a
/// result taken, for late retries): past it the oldest are let go first. A kept result
/// is the program's answer within `output_bytes` (a few blocks of it), so this bounds
/// what clients that never come back make the server keep.
pub const MAX_ENDED_RUNS: usize = 256;

/// What a client is told when the replica holding its program cannot be reached.
pub const GONE: &str =
    "the codemode replica that ran this program cannot be reached; the program was lost with it: run it again";

/// What a client is told when a retry passed on by another replica reaches one that
/// does not hold its program either.
pub const NOT_HELD: &str = "this replica does not hold the program of this requestState, and a retry another replica passed on (x-codemode-forwarded) is not passed on again; send the retry without that header, which only replicas set";

/// What a retry of a run whose result another request already took is told.
pub const ALREADY_ANSWERED: &str = "this round was already answered: another request with the same requestState received the program's result (a result is given once). Use the answer that request received; to run the program again, call execute without a requestState";

/// The header a replica sets on a request it passes on, so that it is never passed on
/// again.
pub const FORWARDED_HEADER: &str = "x-codemode-forwarded";

/// Why the rounds cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum RoundsError {
    /// The shared key is too short.
    #[error("the request-state key in {variable} has {length} bytes; it needs at least {MIN_KEY_LENGTH} (for example `openssl rand -hex 32`)")]
    ShortKey {
        /// The environment variable.
        variable: String,
        /// Its length.
        length: usize,
    },
    /// No randomness for a key of this process.
    #[error("cannot draw a request-state key from the kernel: {0}")]
    Entropy(String),
    /// No sealing key could be derived from the request-state key.
    #[error("the request-state key cannot be used: {0}")]
    Key(#[from] super::sealed_state::SealError),
}

/// What a sealed `requestState` holds (encrypted): which run, and which replica holds it.
#[derive(Serialize, Deserialize)]
struct State {
    run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replica: Option<String>,
}

/// Who a request comes from, as the state is bound to it: a digest of its credential.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Binding([u8; 32]);

impl Binding {
    /// The binding of a request with this `Authorization` header (`None`: standard
    /// input and output, whose one client is the process that started codemode).
    pub fn of(authorization: Option<&str>) -> Self {
        let mut digest = sha2::Sha256::new();
        match authorization {
            Some(credential) => {
                digest.update(b"authorization:");
                digest.update(credential.as_bytes());
            }
            None => digest.update(b"stdio"),
        }
        Self(digest.finalize().into())
    }

    /// The session the programs of this caller share for program slots
    /// ([`super::slots`]): a 2026-07-28 client has no MCP session, so its credential
    /// stands for one. (Its top bit is set: MCP sessions are numbered from 1 and never
    /// reach it.)
    pub fn slots_session(&self) -> u64 {
        let mut first = [0u8; 8];
        first.copy_from_slice(&self.0[..8]);
        u64::from_le_bytes(first) | 1 << 63
    }
}

/// One program of a 2026-07-28 client, paused or running between its requests.
pub struct Run {
    id: String,
    binding: Binding,
    /// Its questions and its end, read by one request at a time.
    inbox: tokio::sync::Mutex<Inbox>,
    /// Questions sent to the client and not answered yet, by their key.
    asked: Mutex<BTreeMap<String, Question>>,
    next_key: std::sync::atomic::AtomicU64,
    /// When the program ended (for the sweep of runs kept after their end: a result
    /// nobody came back for, or a result taken, for the retries that come late).
    ended: Mutex<Option<Instant>>,
}

struct Inbox {
    questions: mpsc::UnboundedReceiver<Question>,
    /// False once every sender of questions is gone.
    questions_open: bool,
    /// `None` once a request took the program's result.
    finished: Option<oneshot::Receiver<CallToolResult>>,
}

/// The program's side of a run: where its questions go and where its result goes.
pub struct RunSide {
    /// Questions for the person ([`super::approvals::Asker::Rounds`]).
    pub questions: mpsc::UnboundedSender<Question>,
    /// The program's result.
    finished: oneshot::Sender<CallToolResult>,
    run: Arc<Run>,
}

impl RunSide {
    /// Reports the program's result and marks the run as ended.
    pub fn finish(self, result: CallToolResult) {
        *self.run.ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        let _ = self.finished.send(result);
    }
}

/// Where a retry's run is.
pub enum Resumed {
    /// Here.
    Here(Arc<Run>),
    /// On another replica, at this URL.
    Elsewhere(String),
}

/// The runs of this server, and how their states are sealed.
pub struct Rounds {
    runs: Mutex<HashMap<String, Arc<Run>>>,
    sealer: StateSealer,
    /// This replica's URL, named in every state it seals.
    replica: Option<String>,
    state_ttl: Duration,
    http: reqwest::Client,
}

impl Rounds {
    /// Rounds sealing states with `key` (shared by every replica), or with a key of
    /// this process alone; `replica` is this replica's URL, when others may receive
    /// its clients' retries. `state_ttl` is how long a state stays valid (a program's
    /// wall clock and the answer's wait).
    pub fn new(
        key: Option<(String, Vec<u8>)>,
        replica: Option<String>,
        state_ttl: Duration,
    ) -> Result<Self, RoundsError> {
        let key = match key {
            Some((variable, key)) => {
                if key.len() < MIN_KEY_LENGTH {
                    return Err(RoundsError::ShortKey { variable, length: key.len() });
                }
                key
            }
            None => {
                let mut key = vec![0u8; 32];
                getrandom::fill(&mut key).map_err(|e| RoundsError::Entropy(e.to_string()))?;
                key
            }
        };
        let sealer = StateSealer::new(&key)?;
        codemode_plugin_runtimes::tls::ensure_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(state_ttl)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| RoundsError::Entropy(format!("no HTTP client for other replicas: {e}")))?;
        Ok(Self { runs: Mutex::new(HashMap::new()), sealer, replica, state_ttl, http })
    }

    /// A new run for a program of the caller `binding`: the run (for its rounds) and the
    /// program's side.
    pub fn start(&self, binding: Binding) -> (Arc<Run>, RunSide) {
        let mut id = [0u8; 16];
        // A run id nobody can guess, though the state hides it: a second line of defence.
        let _ = getrandom::fill(&mut id);
        let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let (questions_tx, questions) = mpsc::unbounded_channel();
        let (finished_tx, finished) = oneshot::channel();
        let run = Arc::new(Run {
            id: id.clone(),
            binding,
            inbox: tokio::sync::Mutex::new(Inbox { questions, questions_open: true, finished: Some(finished) }),
            asked: Mutex::new(BTreeMap::new()),
            next_key: std::sync::atomic::AtomicU64::new(1),
            ended: Mutex::new(None),
        });
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        // Runs whose client never came back for the result.
        runs.retain(|_, run| run.ended().is_none_or(|at| at.elapsed() <= RESULT_KEPT));
        let mut ended: Vec<(Instant, String)> =
            runs.iter().filter_map(|(id, run)| run.ended().map(|at| (at, id.clone()))).collect();
        if ended.len() >= MAX_ENDED_RUNS {
            ended.sort_unstable();
            for (_, oldest) in ended.iter().take(ended.len() + 1 - MAX_ENDED_RUNS) {
                runs.remove(oldest);
            }
        }
        runs.insert(id, Arc::clone(&run));
        let side = RunSide { questions: questions_tx, finished: finished_tx, run: Arc::clone(&run) };
        (run, side)
    }

    /// The run a retry's `state` names, for the caller `binding`. `Err` is what the
    /// client reads: one answer for every state that cannot be used, whatever the
    /// reason, so a forger learns nothing.
    pub fn resume(&self, state: &str, binding: Binding) -> Result<Resumed, String> {
        let refused = || {
            "the requestState is not one this server gave you for a program that is still running (it is forged, another client's, expired, or its program ended long ago); run the program again".to_string()
        };
        let opened = self.sealer.open(state, &binding.0).map_err(|e| {
            tracing::debug!("a requestState did not open: {e}");
            refused()
        })?;
        let opened: State = serde_json::from_slice(&opened).map_err(|e| {
            tracing::warn!(
                "a requestState opened but does not hold a run ({e}): is the same key used for something else?"
            );
            refused()
        })?;
        if opened.replica.is_some() && opened.replica != self.replica {
            return Ok(Resumed::Elsewhere(opened.replica.unwrap_or_default()));
        }
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let run = runs.get(&opened.run).filter(|run| run.binding == binding).cloned().ok_or_else(refused)?;
        Ok(Resumed::Here(run))
    }

    /// Hands each answer to the question waiting for it, as the client sent it (the
    /// asker reads it); answers to questions that are not waiting any more are dropped.
    pub fn answer(&self, run: &Run, responses: InputResponses) {
        let mut asked = run.asked.lock().unwrap_or_else(|p| p.into_inner());
        for (key, response) in responses {
            let Some(question) = asked.remove(&key) else { continue };
            let _ = question.answer.send(response);
        }
    }

    /// Waits for the run's next event and answers the round with it: the program's
    /// result (the run is over), or every question waiting for the person with the
    /// state to come back with. A cancelled request leaves the run as it is.
    ///
    /// Requests for one run take turns (the inbox's lock); one whose turn comes after
    /// another took the result is answered [`ALREADY_ANSWERED`] at once.
    pub async fn round(&self, run: &Arc<Run>, cancelled: &CancellationToken) -> Result<CallToolResponse, ErrorData> {
        let mut inbox = tokio::select! {
            inbox = run.inbox.lock() => inbox,
            () = cancelled.cancelled() => return Err(ErrorData::internal_error("the request was cancelled; its program goes on, and the same requestState finds it", None)),
        };
        if inbox.finished.is_none() {
            return Err(ErrorData::invalid_params(ALREADY_ANSWERED, None));
        }
        // Questions asked before and still unanswered are asked again at once.
        let waiting = run.asked.lock().unwrap_or_else(|p| p.into_inner()).values().any(|q| !q.answer.is_closed());
        if !waiting {
            let next = loop {
                let Inbox { questions, questions_open, finished } = &mut *inbox;
                tokio::select! {
                    biased;
                    () = cancelled.cancelled() => return Err(ErrorData::internal_error("the request was cancelled; its program goes on, and the same requestState finds it", None)),
                    result = async {
                        match finished.as_mut() {
                            Some(finished) => finished.await.ok(),
                            // Checked above, under the same lock: a result not taken.
                            None => None,
                        }
                    } => break Next::Finished(result),
                    question = questions.recv(), if *questions_open => match question {
                        Some(question) => break Next::Question(question),
                        // Every sender is gone: only the program's end can come now.
                        None => *questions_open = false,
                    },
                }
            };
            match next {
                Next::Question(question) => self.ask(run, question),
                Next::Finished(result) => {
                    // Kept until the sweep (its end plus RESULT_KEPT), so that a retry
                    // coming late is told the result was taken.
                    inbox.finished = None;
                    run.end();
                    let result = result.unwrap_or_else(|| {
                        CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                            "the program ended without a result (codemode's task for it failed)",
                        )])
                    });
                    return Ok(CallToolResponse::Complete(result));
                }
            }
            // Questions that came together are asked together.
            while let Ok(question) = inbox.questions.try_recv() {
                self.ask(run, question);
            }
        }
        drop(inbox);
        let asked = run.asked.lock().unwrap_or_else(|p| p.into_inner());
        let requests: InputRequests = asked
            .iter()
            .filter(|(_, q)| !q.answer.is_closed())
            .map(|(key, q)| (key.clone(), q.request.clone()))
            .collect();
        drop(asked);
        let state = self.seal(run)?;
        if requests.is_empty() {
            // Nothing to ask (the questions went away): the client calls again with the
            // state alone, and the next round waits for the program.
            return Ok(CallToolResponse::InputRequired(InputRequiredResult::from_request_state(state)));
        }
        Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(state))))
    }

    /// Keeps `question` as asked, under a new key.
    fn ask(&self, run: &Run, question: Question) {
        let key = format!("q{}", run.next_key.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        run.asked.lock().unwrap_or_else(|p| p.into_inner()).insert(key, question);
    }

    /// The state naming `run` (and this replica), sealed for its caller.
    fn seal(&self, run: &Run) -> Result<String, ErrorData> {
        let state = State { run: run.id.clone(), replica: self.replica.clone() };
        let state = serde_json::to_vec(&state)
            .map_err(|e| ErrorData::internal_error(format!("the request state cannot be written: {e}"), None))?;
        self.sealer
            .seal(&state, &run.binding.0, self.state_ttl)
            .map_err(|e| ErrorData::internal_error(format!("the request state cannot be sealed: {e}"), None))
    }

    /// Passes a retry on to the replica at `replica` (which holds its run) and returns
    /// its answer. `request` is the JSON-RPC `params` of the `tools/call`, sent as it
    /// came; `authorization` the caller's credential.
    pub async fn forward(
        &self,
        replica: &str,
        params: serde_json::Value,
        authorization: Option<&str>,
    ) -> Result<CallToolResponse, ErrorData> {
        let gone = |why: String| {
            // The replica's address (in `why` too) is for the operator, not the client.
            tracing::warn!("the replica {replica} holding a paused program cannot be reached: {why}");
            CallToolResponse::Complete(CallToolResult::error(vec![rmcp::model::ContentBlock::text(GONE)]))
        };
        let body = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
        let mut request = self
            .http
            .post(replica)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
            .header("mcp-method", "tools/call")
            .header("mcp-name", super::EXECUTE)
            .header(FORWARDED_HEADER, "1")
            .body(body.to_string());
        if let Some(authorization) = authorization {
            request = request.header(http::header::AUTHORIZATION, authorization);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return Ok(gone(codemode_plugin_runtimes::mcp::http::with_causes(&e))),
        };
        let status = response.status();
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) => return Ok(gone(codemode_plugin_runtimes::mcp::http::with_causes(&e))),
        };
        let answer = json_rpc_answer(&text).ok_or_else(|| {
            ErrorData::internal_error(
                format!("the replica holding this program answered HTTP {status} without a result"),
                None,
            )
        })?;
        if let Some(error) = answer.get("error") {
            return Err(serde_json::from_value::<ErrorData>(error.clone())
                .unwrap_or_else(|_| ErrorData::internal_error(error.to_string(), None)));
        }
        let result = answer.get("result").cloned().unwrap_or_default();
        if result.get("resultType").and_then(serde_json::Value::as_str) == Some("input_required") {
            let input = serde_json::from_value::<InputRequiredResult>(result)
                .map_err(|e| ErrorData::internal_error(format!("the replica's answer cannot be read: {e}"), None))?;
            return Ok(CallToolResponse::InputRequired(input));
        }
        serde_json::from_value::<CallToolResult>(result)
            .map(CallToolResponse::Complete)
            .map_err(|e| ErrorData::internal_error(format!("the replica's answer cannot be read: {e}"), None))
    }
}

impl Run {
    /// When the program ended, if it did.
    fn ended(&self) -> Option<Instant> {
        *self.ended.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the program as ended now, unless it already was (its task reports the
    /// end; a task that failed could not).
    fn end(&self) {
        self.ended.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(Instant::now);
    }
}

enum Next {
    Question(Question),
    Finished(Option<CallToolResult>),
}

/// The JSON-RPC answer in a streamable HTTP body: plain JSON, or the last `data:` line
/// of an event stream that holds a result or an error.
fn json_rpc_answer(body: &str) -> Option<serde_json::Value> {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body.trim()) {
        return Some(value);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data.trim()).ok())
        .rfind(|message| message.get("result").is_some() || message.get("error").is_some())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};

    fn rounds(replica: Option<&str>) -> Rounds {
        Rounds::new(Some(("KEY".into(), vec![7; 32])), replica.map(str::to_string), Duration::from_secs(60)).unwrap()
    }

    fn question() -> (Question, oneshot::Receiver<serde_json::Value>) {
        let schema = ElicitationSchema::from_json_schema(
            serde_json::json!({ "type": "object", "properties": {} }).as_object().unwrap().clone(),
        )
        .unwrap();
        let request = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "May it run?".into(),
            requested_schema: schema,
        };
        Question::elicitation(request)
    }

    fn state_of(response: &CallToolResponse) -> (String, Vec<String>) {
        let CallToolResponse::InputRequired(input) = response else { panic!("not input required") };
        (input.request_state.clone().unwrap(), input.input_requests.clone().unwrap_or_default().into_keys().collect())
    }

    #[tokio::test]
    async fn a_question_ends_the_round_and_its_answer_reaches_the_program() {
        let rounds = rounds(None);
        let caller = Binding::of(Some("Bearer a"));
        let (run, side) = rounds.start(caller);
        let (q, answered) = question();
        side.questions.send(q).unwrap();
        let response = rounds.round(&run, &CancellationToken::new()).await.unwrap();
        let (state, keys) = state_of(&response);
        assert_eq!(keys, ["q1"]);
        // The same client comes back with the answer.
        let Ok(Resumed::Here(again)) = rounds.resume(&state, caller) else { panic!("resumed") };
        rounds.answer(&again, [("q1".to_string(), serde_json::json!({ "action": "accept", "content": {} }))].into());
        assert_eq!(
            serde_json::from_value::<ElicitResult>(answered.await.unwrap()).unwrap().action,
            ElicitationAction::Accept
        );
        side.finish(CallToolResult::success(vec![rmcp::model::ContentBlock::text("done")]));
        let CallToolResponse::Complete(result) = rounds.round(&again, &CancellationToken::new()).await.unwrap() else {
            panic!("complete")
        };
        assert_eq!(result.content[0].as_text().unwrap().text, "done");
        // The result was taken: a late retry of the state is told so, at once.
        let Ok(Resumed::Here(late)) = rounds.resume(&state, caller) else { panic!("kept for late retries") };
        let error = rounds.round(&late, &CancellationToken::new()).await.err().unwrap();
        assert_eq!(error.message, ALREADY_ANSWERED);
    }

    #[test]
    fn ended_runs_nobody_came_back_for_are_kept_up_to_the_bound_oldest_let_go_first() {
        let rounds = rounds(None);
        let caller = Binding::of(Some("Bearer a"));
        let mut ids = Vec::new();
        for _ in 0..MAX_ENDED_RUNS + 10 {
            let (run, side) = rounds.start(caller);
            side.finish(CallToolResult::success(vec![rmcp::model::ContentBlock::text("x".repeat(1000))]));
            ids.push(run.id.clone());
        }
        let (running, _side) = rounds.start(caller);
        let runs = rounds.runs.lock().unwrap();
        assert_eq!(runs.len(), MAX_ENDED_RUNS, "the bound, the running one included");
        assert!(runs.contains_key(&running.id), "a running program is never let go");
        assert!(!runs.contains_key(&ids[0]) && runs.contains_key(&ids[ids.len() - 1]), "the oldest go first");
    }

    #[tokio::test]
    async fn retries_waiting_together_are_each_answered_once_the_result_is_taken() {
        let rounds = Arc::new(rounds(None));
        let caller = Binding::of(Some("Bearer a"));
        let (run, side) = rounds.start(caller);
        let (q, answered) = question();
        side.questions.send(q).unwrap();
        let (state, _) = state_of(&rounds.round(&run, &CancellationToken::new()).await.unwrap());
        rounds.answer(&run, [("q1".to_string(), serde_json::json!({ "action": "accept", "content": {} }))].into());
        assert_eq!(
            serde_json::from_value::<ElicitResult>(answered.await.unwrap()).unwrap().action,
            ElicitationAction::Accept
        );
        // Two retries of the state wait at once (one answering again, one not), and
        // the program's questions are over before it ends.
        let retry = |answers: bool| {
            let rounds = Arc::clone(&rounds);
            let state = state.clone();
            tokio::spawn(async move {
                let Ok(Resumed::Here(run)) = rounds.resume(&state, caller) else { panic!("resumed") };
                if answers {
                    rounds.answer(&run, [("q1".to_string(), serde_json::json!({ "action": "accept" }))].into());
                }
                rounds.round(&run, &CancellationToken::new()).await
            })
        };
        let (first, second) = (retry(true), retry(false));
        tokio::task::yield_now().await;
        let RunSide { questions, finished, run: _ } = side;
        drop(questions);
        tokio::task::yield_now().await;
        let _ = finished.send(CallToolResult::success(vec![rmcp::model::ContentBlock::text("done")]));
        let mut answers = Vec::new();
        for retry in [first, second] {
            answers.push(
                tokio::time::timeout(Duration::from_secs(5), retry).await.expect("every retry is answered").unwrap(),
            );
        }
        let (results, refusals): (Vec<_>, Vec<_>) = answers.into_iter().partition(|r| r.is_ok());
        assert_eq!((results.len(), refusals.len()), (1, 1));
        let Ok(CallToolResponse::Complete(result)) = &results[0] else { panic!("the result") };
        assert_eq!(result.content[0].as_text().unwrap().text, "done");
        assert_eq!(refusals[0].as_ref().err().unwrap().message, ALREADY_ANSWERED);
    }

    #[tokio::test]
    async fn states_cannot_be_forged_replayed_by_others_or_read_elsewhere_without_the_key() {
        let rounds_a = rounds(None);
        let caller = Binding::of(Some("Bearer a"));
        let (run, side) = rounds_a.start(caller);
        let (q, _answered) = question();
        side.questions.send(q).unwrap();
        let (state, _) = state_of(&rounds_a.round(&run, &CancellationToken::new()).await.unwrap());
        let same = |r: Result<Resumed, String>| r.err().unwrap();
        // Another credential, a changed byte, another key: one answer for all.
        let other = same(rounds_a.resume(&state, Binding::of(Some("Bearer b"))));
        let mut forged = state.clone().into_bytes();
        let last = forged.len() - 2;
        forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
        let forged = same(rounds_a.resume(&String::from_utf8(forged).unwrap(), caller));
        let foreign = Rounds::new(None, None, Duration::from_secs(60)).unwrap();
        let elsewhere = same(foreign.resume(&state, caller));
        assert_eq!(other, forged);
        assert_eq!(forged, elsewhere);
        assert!(other.starts_with("the requestState is not one this server gave you"));
        drop(side);
    }

    #[tokio::test]
    async fn a_state_names_its_replica_and_other_replicas_send_the_retry_there() {
        let a = rounds(Some("http://10.0.0.1:8931/mcp"));
        let b = rounds(Some("http://10.0.0.2:8931/mcp"));
        let caller = Binding::of(None);
        let (run, side) = a.start(caller);
        let (q, _answered) = question();
        side.questions.send(q).unwrap();
        let (state, _) = state_of(&a.round(&run, &CancellationToken::new()).await.unwrap());
        match b.resume(&state, caller) {
            Ok(Resumed::Elsewhere(url)) => assert_eq!(url, "http://10.0.0.1:8931/mcp"),
            _ => panic!("b sends it to a"),
        }
        assert!(matches!(a.resume(&state, caller), Ok(Resumed::Here(_))));
        // A replica that is gone: the call fails saying so.
        let gone = b.forward("http://127.0.0.1:9/mcp", serde_json::json!({}), None).await.unwrap();
        let CallToolResponse::Complete(result) = gone else { panic!("complete") };
        assert_eq!(result.is_error, Some(true));
        assert!(result.content[0].as_text().unwrap().text.contains("cannot be reached"), "{result:?}");
        drop(side);
    }

    #[test]
    fn short_shared_keys_are_refused() {
        let error =
            Rounds::new(Some(("CODEMODE_STATE_KEY".into(), vec![1; 8])), None, Duration::from_secs(1)).err().unwrap();
        assert_eq!(
            error.to_string(),
            "the request-state key in CODEMODE_STATE_KEY has 8 bytes; it needs at least 32 (for example `openssl rand -hex 32`)"
        );
    }
}
