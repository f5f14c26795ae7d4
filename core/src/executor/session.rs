//! The host's side of one running program: one task reads the worker's messages, runs
//! each tool call as a future of its own, writes answers as they complete, keeps the
//! console, enforces the wall clock and the budgets of tool calls and tool data in
//! flight, and stops at the outcome (or at the first protocol violation).

use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use protocol::cost::{json_cost, mib};
use protocol::{ConsoleLevel, HostChannel, HostToWorker, StartProgram, ToolAnswer, WorkerToHost, MAX_FRAME_BYTES};
use tokio_util::sync::CancellationToken;

use super::ending::Ended;
use crate::dispatch::{serve_call, CallScope};
use crate::limits::Limits;
use crate::outcome::UnawaitedCall;

/// Tool data in flight across every program of one executor.
#[derive(Debug)]
pub(super) struct SharedToolBudget {
    pub(super) limit: u64,
    pub(super) used: AtomicU64,
}

impl SharedToolBudget {
    /// Takes `cost`, or says how much is in use.
    fn take(&self, cost: u64) -> Result<(), u64> {
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            if used.saturating_add(cost) > self.limit {
                return Err(used);
            }
            match self.used.compare_exchange_weak(used, used + cost, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(()),
                Err(now) => used = now,
            }
        }
    }

    fn give_back(&self, cost: u64) {
        self.used.fetch_sub(cost, Ordering::AcqRel);
    }
}

/// Console output kept for the outcome, cut at the cap.
pub(super) struct ConsoleBuffer {
    pub(super) text: String,
    cap: u64,
    pub(super) dropped: u64,
}

impl ConsoleBuffer {
    fn push(&mut self, level: ConsoleLevel, line: &str) {
        let prefix = match level {
            ConsoleLevel::Warn => "[warn] ",
            ConsoleLevel::Error => "[error] ",
            ConsoleLevel::Log | ConsoleLevel::Debug => "",
        };
        let needed = (prefix.len() + line.len() + 1) as u64;
        let room = self.cap.saturating_sub(self.text.len() as u64);
        if needed <= room {
            self.text.push_str(prefix);
            self.text.push_str(line);
            self.text.push('\n');
            return;
        }
        // Keep what fits, on a character boundary; count the rest.
        let whole = format!("{prefix}{line}\n");
        let mut cut = usize::try_from(room).unwrap_or(usize::MAX).min(whole.len());
        while !whole.is_char_boundary(cut) {
            cut -= 1;
        }
        self.text.push_str(&whole[..cut]);
        self.dropped += (whole.len() - cut) as u64;
    }
}

/// The host's side of one running program.
///
/// One task serves the whole program: it reads the worker's messages, polls every
/// in-flight tool call, and writes answers as they complete. Keeping everything on one
/// task avoids a cross-thread wake-up per call.
pub(super) struct Session {
    pub(super) calls: Arc<CallScope>,
    limits: Limits,
    busy_poll: Duration,
    pub(super) cancel: CancellationToken,
    pub(super) console: ConsoleBuffer,
    pub(super) tool_calls: u64,
    /// True once the worker sent anything (a tool call, a console line, its outcome).
    pub(super) heard_from_worker: bool,
    /// The calls still running when the program returned, as they ended.
    pub(super) unawaited: Vec<UnawaitedCall>,
    shared_budget: Arc<SharedToolBudget>,
    /// When the worker reached each step, and when its outcome arrived here
    /// ([`protocol::monotonic_ns`]).
    pub(super) worker_times: Option<(protocol::WorkerTimes, u64)>,
}

/// What one call holds of the shared budget, given back when the call ends (or is
/// dropped with its program).
struct SharedHold {
    budget: Arc<SharedToolBudget>,
    cost: u64,
}

impl Drop for SharedHold {
    fn drop(&mut self) {
        self.budget.give_back(self.cost);
    }
}

impl Session {
    pub(super) fn new(
        calls: CallScope,
        limits: Limits,
        busy_poll: Duration,
        cancel: CancellationToken,
        shared_budget: Arc<SharedToolBudget>,
    ) -> Self {
        let console = ConsoleBuffer { text: String::new(), cap: limits.console_bytes, dropped: 0 };
        Self {
            calls: Arc::new(calls),
            limits,
            busy_poll,
            cancel,
            console,
            tool_calls: 0,
            heard_from_worker: false,
            unawaited: Vec::new(),
            shared_budget,
            worker_times: None,
        }
    }

    /// Sends the program and serves the worker until it stops (see [`Ended`]).
    pub(super) async fn serve(&mut self, channel: OwnedFd, code: &str) -> Ended {
        let (mut from_worker, mut to_worker) = match HostChannel::open(channel, MAX_FRAME_BYTES) {
            Ok(halves) => halves,
            Err(e) => return Ended::Broken(format!("cannot use the worker channel: {e}")),
        };
        let start = StartProgram {
            code: code.to_string(),
            limits: self.limits.worker_limits(),
            catalog: self.calls.catalog.worker_view(),
            busy_poll_us: u64::try_from(self.busy_poll.as_micros()).unwrap_or(u64::MAX),
            entropy: match fresh_entropy() {
                Ok(entropy) => entropy,
                Err(e) => return Ended::Broken(format!("cannot draw the program's randomness from the kernel: {e}")),
            },
        };
        if let Err(e) = to_worker.queue_to_worker(&HostToWorker::Start(start)) {
            return Ended::Disconnected(format!("sending the program failed: {e}"));
        }
        let deadline = tokio::time::sleep(self.limits.wall_clock);
        tokio::pin!(deadline);
        let mut calls: FuturesUnordered<BoxFuture<'static, CallEnd>> = FuturesUnordered::new();
        // The name of each call in flight, by id, and how the last calls ended: for the
        // calls a program never awaited.
        let mut names: HashMap<u64, String> = HashMap::new();
        let mut recent: VecDeque<(u64, UnawaitedCall)> = VecDeque::new();
        // The budget of tool data in flight: inputs of the calls in flight (as
        // `json_cost` counts them) plus answers queued for the worker and not written yet.
        let budget = self.limits.tool_bytes_in_flight;
        let mut inputs_in_flight: u64 = 0;
        // Right after an answer, the worker's next message is usually microseconds away.
        let mut just_answered = false;
        // The worker's report of how the program ended: from the loop, or from what a
        // worker that stopped reading still sent.
        let report = loop {
            let poll_budget = if just_answered { self.busy_poll } else { Duration::ZERO };
            just_answered = false;
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Ended::Cancelled,
                () = &mut deadline => return Ended::WallClock,
                flushed = to_worker.flush_to_worker(), if to_worker.has_pending() => {
                    if let Err(e) = flushed {
                        break self.drain(&mut from_worker, format!("writing to the worker failed: {e}")).await;
                    }
                }
                Some((call_id, answer, cost)) = calls.next(), if !calls.is_empty() => {
                    if recent.len() == RECENT_CALLS {
                        recent.pop_front();
                    }
                    recent.push_back((call_id, UnawaitedCall::ended(names.remove(&call_id).unwrap_or_default(), &answer)));
                    inputs_in_flight = inputs_in_flight.saturating_sub(cost);
                    if self.calls.host_cpu_spent() > self.limits.host_cpu {
                        // The host's work for its built-in calls is charged to the program.
                        return Ended::HostCpu;
                    }
                    let answer = within_budget(answer, budget);
                    if let Err(e) = to_worker.queue_to_worker(&HostToWorker::ToolAnswer { call_id, answer }) {
                        break self.drain(&mut from_worker, format!("answering a tool call failed: {e}")).await;
                    }
                    just_answered = calls.is_empty();
                }
                message = from_worker.recv_from_worker_busy_poll(poll_budget) => match message.inspect(|_| self.heard_from_worker = true) {
                    Ok(WorkerToHost::ToolCall { call_id, plugin, tool, input }) => {
                        self.tool_calls += 1;
                        let cost = json_cost(input.get());
                        let unread = to_worker.pending_bytes() as u64;
                        if self.tool_calls > self.limits.tool_calls {
                            // Every call costs the host work: past the limit, the program ends.
                            return Ended::ToolCalls;
                        }
                        let refusal = if calls.len() >= self.limits.tool_calls_in_flight {
                            Some(format!("too many tool calls in flight: the limit is {}; await some before starting more", self.limits.tool_calls_in_flight))
                        } else if inputs_in_flight.saturating_add(unread).saturating_add(cost) > budget {
                            Some(format!(
                                "{}: too much tool data in flight: {} of inputs and unread answers plus this input's {} is more than the {} a program may have in flight; await some calls before starting more, or send less",
                                call_label(&plugin, &tool),
                                mib(inputs_in_flight + unread),
                                mib(cost),
                                mib(budget)
                            ))
                        } else if self.shared_budget.take(cost).is_err() {
                            // How much the other programs hold is theirs to know.
                            Some(format!(
                                "{}: the host is holding as much tool data for all running programs as it may ({}), and this input is {}; try again when calls have finished, or send less",
                                call_label(&plugin, &tool),
                                mib(self.shared_budget.limit),
                                mib(cost)
                            ))
                        } else {
                            None
                        };
                        match refusal {
                            Some(why) => {
                                drop(input);
                                if let Err(e) = to_worker.queue_to_worker(&HostToWorker::ToolAnswer { call_id, answer: ToolAnswer::Reject(why) }) {
                                    break self.drain(&mut from_worker, format!("answering a tool call failed: {e}")).await;
                                }
                            }
                            None => {
                                inputs_in_flight += cost;
                                let hold = SharedHold { budget: Arc::clone(&self.shared_budget), cost };
                                names.insert(call_id, call_label(&plugin, &tool));
                                let call = serve_call(Arc::clone(&self.calls), self.cancel.child_token(), call_id, plugin, tool, input);
                                calls.push(call.map(move |(id, answer)| {
                                    drop(hold);
                                    (id, answer, cost)
                                }).boxed());
                            }
                        }
                    }
                    Ok(WorkerToHost::Console { level, text }) => self.console.push(level, &text),
                    Ok(WorkerToHost::Finished { outcome, console_dropped_bytes, unanswered_calls, times }) => {
                        break Ok(Report { outcome, console_dropped_bytes, unanswered_calls, times, late_calls: Vec::new() });
                    }
                    Err(e) if e.is_disconnect() => return Ended::Disconnected(e.to_string()),
                    Err(e) => return Ended::Broken(format!("the worker sent an invalid message: {e}")),
                },
            }
        };
        let Report { outcome, console_dropped_bytes, unanswered_calls, times, late_calls } = match report {
            Ok(report) => report,
            Err(ended) => return ended,
        };
        self.worker_times = times.map(|t| (t, protocol::monotonic_ns()));
        // Calls the worker sent after it stopped reading: the program started them, so
        // they run as any call it never awaited does (within the same limits).
        for (call_id, plugin, tool, input) in late_calls {
            self.tool_calls += 1;
            let label = call_label(&plugin, &tool);
            let cost = json_cost(input.get());
            if self.tool_calls > self.limits.tool_calls {
                let why = format!("not run: the program made more than {} tool calls", self.limits.tool_calls);
                recent.push_back((call_id, UnawaitedCall::ended(label, &ToolAnswer::Reject(why))));
            } else if self.shared_budget.take(cost).is_err() {
                let why =
                    "not run: the host is holding as much tool data for all running programs as it may".to_string();
                recent.push_back((call_id, UnawaitedCall::ended(label, &ToolAnswer::Reject(why))));
            } else {
                let hold = SharedHold { budget: Arc::clone(&self.shared_budget), cost };
                names.insert(call_id, label);
                let call = serve_call(Arc::clone(&self.calls), self.cancel.child_token(), call_id, plugin, tool, input);
                calls.push(
                    call.map(move |(id, answer)| {
                        drop(hold);
                        (id, answer, cost)
                    })
                    .boxed(),
                );
            }
        }
        if !unanswered_calls.is_empty() {
            // Answered already (on their way to the worker), or still running here.
            let (done, running): (Vec<u64>, Vec<u64>) =
                unanswered_calls.into_iter().partition(|id| !names.contains_key(id));
            let running: std::collections::HashSet<u64> = running.into_iter().collect();
            self.unawaited = done
                .iter()
                .filter_map(|id| recent.iter().find(|(r, _)| r == id).map(|(_, call)| call.clone()))
                .collect();
            names.retain(|id, _| running.contains(id));
            let still = self.settle_unawaited(calls, names, &mut deadline).await;
            self.unawaited.extend(still);
        }
        Ended::Finished(outcome, console_dropped_bytes)
    }
}

/// The worker's last message: how the program ended.
struct Report {
    outcome: protocol::WorkerOutcome,
    console_dropped_bytes: u64,
    unanswered_calls: Vec<u64>,
    times: Option<protocol::WorkerTimes>,
    /// Calls read after the worker stopped reading (see [`Session::drain`]).
    late_calls: Vec<(u64, String, String, Box<serde_json::value::RawValue>)>,
}

/// Four words of fresh randomness from the kernel, for one program's generators.
fn fresh_entropy() -> Result<[u32; 4], getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    Ok([word(0), word(4), word(8), word(12)])
}

/// How many answered calls the host remembers, for a program that ends without
/// awaiting them (their answers may still be on their way to the worker).
const RECENT_CALLS: usize = 1024;

/// A finished call: its id, its answer, and the input cost it held.
type CallEnd = (u64, ToolAnswer, u64);

/// `tools.<plugin>.<tool>` as the program wrote it (`tools.$search` for the built-in).
fn call_label(plugin: &str, tool: &str) -> String {
    if plugin == crate::dispatch::BUILTIN_PLUGIN {
        format!("tools.${tool}")
    } else {
        format!("tools{}{}", crate::typescript::access_path(plugin), crate::typescript::access_path(tool))
    }
}

impl Session {
    /// The program returned while `calls` were still running: lets them run to their
    /// end (a call the program started is one the agent asked for, and may change
    /// something), within the program's wall clock, and records how each ended, so
    /// that the outcome names them instead of swallowing them.
    async fn settle_unawaited(
        &self,
        mut calls: FuturesUnordered<BoxFuture<'static, CallEnd>>,
        mut names: HashMap<u64, String>,
        deadline: &mut std::pin::Pin<&mut tokio::time::Sleep>,
    ) -> Vec<UnawaitedCall> {
        let mut ended = Vec::new();
        loop {
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => break,
                () = deadline.as_mut() => break,
                next = calls.next() => match next {
                    // A call the worker did await (answered after the program ended but
                    // before its outcome arrived) is not in `names`.
                    Some((id, answer, _)) => {
                        if let Some(call) = names.remove(&id) {
                            ended.push(UnawaitedCall::ended(call, &answer));
                        }
                        if names.is_empty() {
                            return ended;
                        }
                    }
                    None => return ended,
                },
            }
        }
        // What is left is stopped when `calls` is dropped.
        let mut stopped: Vec<(u64, String)> = names.into_iter().collect();
        stopped.sort();
        ended.extend(stopped.into_iter().map(|(_, call)| UnawaitedCall { call, failure: None, stopped: true }));
        ended
    }

    /// The worker stopped reading (it may have finished while an answer was on its way):
    /// reads what it still sent, which may be its outcome and calls it started as it
    /// ended, before calling it gone.
    async fn drain(&mut self, from_worker: &mut protocol::FromWorker, why: String) -> Result<Report, Ended> {
        let mut late_calls = Vec::new();
        let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
            loop {
                match from_worker.recv_from_worker().await {
                    Ok(WorkerToHost::Finished { outcome, console_dropped_bytes, unanswered_calls, times }) => {
                        let late_calls = std::mem::take(&mut late_calls);
                        return Some(Report { outcome, console_dropped_bytes, unanswered_calls, times, late_calls });
                    }
                    Ok(WorkerToHost::Console { level, text }) => {
                        self.heard_from_worker = true;
                        self.console.push(level, &text)
                    }
                    Ok(WorkerToHost::ToolCall { call_id, plugin, tool, input }) => {
                        self.heard_from_worker = true;
                        // Kept to run once the outcome arrives, up to the in-flight limit
                        // (the host would refuse calls past it).
                        if late_calls.len() < self.limits.tool_calls_in_flight {
                            late_calls.push((call_id, plugin, tool, input));
                        }
                    }
                    Err(_) => return None,
                }
            }
        })
        .await;
        drained.ok().flatten().ok_or(Ended::Disconnected(why))
    }
}

/// How long the host reads what a worker that stopped reading still sent.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// Longest rejection message a program receives (a tool's error text can be anything).
const MAX_REJECTION_CHARS: usize = 16 * 1024;

/// `answer`, or a rejection saying why it cannot be delivered: an answer larger than
/// the whole budget of tool data, or a rejection text cut to a readable length.
fn within_budget(answer: ToolAnswer, budget: u64) -> ToolAnswer {
    match answer {
        ToolAnswer::Resolve(value) if value.get().len() as u64 > budget => ToolAnswer::Reject(format!(
            "the tool's answer is {} of JSON, more than the {} of tool data a program may have in flight; ask the tool for less (filter, page or summarise)",
            mib(value.get().len() as u64),
            mib(budget)
        )),
        ToolAnswer::Reject(text) if text.chars().count() > MAX_REJECTION_CHARS => {
            let kept: String = text.chars().take(MAX_REJECTION_CHARS).collect();
            let dropped = text.chars().count() - MAX_REJECTION_CHARS;
            ToolAnswer::Reject(format!("{kept}… [cut: {dropped} more characters]"))
        }
        other => other,
    }
}
