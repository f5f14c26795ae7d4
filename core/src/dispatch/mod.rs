//! One tool call, from whichever front end asked for it: a program's
//! `tools.<plugin>.<tool>(input)` (the executor's sessions), or an MCP client calling a
//! plugin tool directly in separate-tools mode. Every call goes through [`call`]:
//!
//! 1. **find** the tool in the catalog the caller started with, as the front end names
//!    it ([`Resolve`]); a tool of an unavailable plugin tries the plugin again first
//!    and looks again in the current catalog (the catalog feed);
//! 2. **parse** the input (a program sends JSON text) and **check** it against the
//!    tool's input schema, before anyone is asked about it;
//! 3. **approve** it by the one policy ([`approval`]): the front end supplies only how
//!    to ask a person ([`CallHooks::ask_to_run`]) and the session's memory of
//!    approvals given once;
//! 4. **run** it (a panic is a failure), then check its output against its schema;
//! 5. **report** it: the front end's `after` hook (progress), and the call metric,
//!    classified from the [`CallError`] or the result.
//!
//! The front end shapes the result for its reader: a program's call resolves or
//! rejects ([`crate::tool::Tool::answer`]), an MCP client reads a `CallToolResult`.
//!
//! Calls to codemode itself (`tools.$search`, `tools.$skills.*`) are the registered
//! built-ins of [`builtin`] (seed 001's deferred catalog in [`skills`]): the worker
//! sends them under [`builtin::BUILTIN_PLUGIN`], and they run on the host's blocking
//! pool within the program's host-CPU budget. A tool private to a skill or an agent is
//! found like any other, then refused until the calling session unlocked it.

pub mod approval;
pub mod builtin;
mod skills;

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use protocol::ToolAnswer;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use approval::{ApprovedOnce, Decision, RunRequest};
pub use builtin::{Builtin, Builtins, BUILTIN_PLUGIN};

use crate::telemetry::ToolCallEnd;
use crate::tool::{Approver, CallContext, Caller, Catalog, ProgressSink, Sampler, Tool, ToolResult};

/// What a front end adds around each tool call: how to ask a person whether a call may
/// run ([`CallHooks::ask_to_run`]; the policy deciding when to ask is [`approval`]'s),
/// a report after it (for progress), someone to ask when a tool asks a person something
/// during a call ([`Approver`]), and someone to hear how long calls are going
/// ([`ProgressSink`]).
pub trait CallHooks: Approver + ProgressSink {
    /// Whether the front end allows `plugin.tool` without asking (`codemode run
    /// --approve`); false by default.
    fn pre_approved(&self, _plugin: &str, _tool: &str) -> bool {
        false
    }
    /// Asks a person whether the call may run; `Err` is the message the caller reads
    /// (declined, or nobody could be asked and why).
    fn ask_to_run(&self, request: RunRequest) -> BoxFuture<'static, Result<(), String>>;
    /// The approvals given once in this session (or run).
    fn approved_once(&self) -> &ApprovedOnce;
    /// Runs when the call finished; `ok` is false for a failed or rejected call.
    fn after(&self, plugin: &str, tool: &str, ok: bool);
    /// Who asks a model for a call (a plugin's `host/sample`); `None` (the default)
    /// when the front end has none, and the plugin's model call fails saying so.
    fn sampler(&self) -> Option<Arc<dyn Sampler>> {
        None
    }
    /// What tools keep for the session (`host/artifacts`); none by default.
    fn artifacts(&self) -> Option<Arc<crate::tool::artifacts::Artifacts>> {
        None
    }
}

/// Why a tool call did not run, or failed. The message is what the caller reads.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No tool has the name the caller gave (the message says what the front end
    /// expected).
    #[error("{0}")]
    NoSuchTool(String),
    /// The tool's plugin could not be started, even when tried again.
    #[error("plugin {plugin} is unavailable: {reason}")]
    Unavailable {
        /// The plugin.
        plugin: String,
        /// Why, with the last lines of its stderr when it wrote some.
        reason: String,
    },
    /// The input is not JSON text.
    #[error("the input of {qualified} is not JSON: {error}")]
    NotJson {
        /// `plugin.tool`.
        qualified: String,
        /// What the parser said.
        error: serde_json::Error,
    },
    /// The input does not match the tool's input schema (the message names the field).
    #[error("{0}")]
    InvalidInput(String),
    /// The call needs a person's approval, and it was declined or nobody could be asked.
    #[error("{0}")]
    NotApproved(String),
    /// The tool ran and failed: its plugin failed, it crashed, or its result does not
    /// match its output schema.
    #[error("{0}")]
    Failed(String),
}

impl CallError {
    /// Whether the call found its tool (its metric is labelled with the plugin then;
    /// names a caller made up are never labels, so callers cannot grow the series).
    fn found_tool(&self) -> bool {
        !matches!(self, CallError::NoSuchTool(_) | CallError::Unavailable { .. })
    }
}

/// Where a tool was not found.
#[derive(Debug)]
pub enum Missing {
    /// The name belongs to `plugin`, which is unavailable: try it again.
    Unavailable(String),
    /// No tool and no unavailable plugin has this name.
    Unknown(CallError),
}

/// How a front end names the tool of a call, and how it is found in a catalog.
pub trait Resolve: Send + Sync {
    /// The plugin and tool the name means in `catalog`.
    fn resolve(&self, catalog: &Catalog) -> Result<(String, Tool), Missing>;
    /// After its plugin was tried again, the name still means no tool although the
    /// plugin is now available.
    fn missing_after_recovery(&self, plugin: &str) -> CallError;
}

/// A program's `tools.<plugin>.<tool>`: the names the program wrote (an unavailable
/// plugin's `_` aliases reach the real plugin too).
pub struct ByPath<'a> {
    /// The plugin, as the program wrote it.
    pub plugin: &'a str,
    /// The tool, as the program wrote it.
    pub tool: &'a str,
}

impl Resolve for ByPath<'_> {
    fn resolve(&self, catalog: &Catalog) -> Result<(String, Tool), Missing> {
        let (plugin, tool) = (self.plugin, self.tool);
        if let Some(t) = catalog.get(plugin, tool) {
            return Ok((plugin.to_string(), t.clone()));
        }
        // The worker sends the names the program wrote when it knows no tool of the
        // plugin (an unavailable one).
        let plugin = catalog.plugin_named(plugin).unwrap_or(plugin).to_string();
        if catalog.unavailable(&plugin).is_some() {
            return Err(Missing::Unavailable(plugin));
        }
        match catalog.get_or_alias(&plugin, tool) {
            Some(t) => Ok((plugin, t.clone())),
            None => Err(Missing::Unknown(CallError::NoSuchTool(format!("unknown tool {plugin}.{tool}")))),
        }
    }

    fn missing_after_recovery(&self, plugin: &str) -> CallError {
        CallError::NoSuchTool(format!("plugin {plugin} has no tool named {}", self.tool))
    }
}

/// What every tool call of one program (or of one direct MCP request) shares: the
/// catalog it was started with and the feed of the current one (for plugins that
/// recover meanwhile), who runs it, the front end's hooks, and its built-in calls'
/// host-CPU budget.
pub struct CallScope {
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) current: Arc<RwLock<Arc<Catalog>>>,
    pub(crate) caller: Arc<Caller>,
    pub(crate) hooks: Option<Arc<dyn CallHooks>>,
    /// The built-in calls, by name.
    pub(crate) builtins: Arc<Builtins>,
    /// CPU the host may spend on this program's built-in calls, and what they took so
    /// far (nanoseconds, measured on the threads that ran them).
    pub(crate) host_cpu_limit: std::time::Duration,
    pub(crate) host_cpu_used: std::sync::atomic::AtomicU64,
    /// The program's built-in calls run one at a time (so none starts past its limit)...
    pub(crate) builtin_turn: tokio::sync::Semaphore,
    /// ...and all programs' together at most one per core, so that no program's searches
    /// fill the host's blocking pool.
    pub(crate) builtin_slots: Arc<tokio::sync::Semaphore>,
    /// The search model, when one is installed.
    pub(crate) semantic: Option<Arc<crate::tool::semantic::Semantic>>,
    /// The change journal: what the program's calls recorded changing
    /// ([`crate::outcome::CHANGES_META`]), in the order they answered, within the
    /// program's tool-data budget.
    pub(crate) changes: std::sync::Mutex<crate::outcome::ChangeJournal>,
    /// What the calling session loaded and selected: a tool private to a skill or an
    /// agent runs only once it is unlocked there ([`crate::tool::skills`]).
    pub(crate) skills: Arc<crate::tool::skills::SkillSession>,
}

impl CallScope {
    /// The CPU its built-in calls took so far.
    pub(crate) fn host_cpu_spent(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.host_cpu_used.load(std::sync::atomic::Ordering::Acquire))
    }

    /// Moves the changes a call's result lists into the program's journal.
    fn record_changes(&self, plugin: &str, tool: &str, result: &mut crate::tool::ToolResult) {
        if result.meta.as_ref().is_some_and(|m| m.contains_key(crate::outcome::CHANGES_META)) {
            let call = format!("tools.{plugin}.{tool}");
            self.changes.lock().unwrap_or_else(|p| p.into_inner()).take_from(result.meta.as_mut(), &call);
        }
    }

    /// The journal so far, taken (for the outcome): the kept changes and how many were
    /// left out.
    pub(crate) fn take_changes(&self) -> (Vec<crate::outcome::RecordedChange>, u64) {
        std::mem::take(&mut *self.changes.lock().unwrap_or_else(|p| p.into_inner())).into_parts()
    }

    /// The catalog plugins are in now.
    fn current(&self) -> Arc<Catalog> {
        Arc::clone(&self.current.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The tool `name` means, trying an unavailable plugin again first.
    async fn find(&self, name: &dyn Resolve) -> Result<(String, Tool), CallError> {
        let plugin = match name.resolve(&self.catalog) {
            Ok(found) => return Ok(found),
            Err(Missing::Unknown(e)) => return Err(e),
            Err(Missing::Unavailable(plugin)) => plugin,
        };
        let unavailable = self.catalog.unavailable(&plugin).cloned();
        if let Some(recover) = unavailable.as_ref().and_then(|u| u.recover.clone()) {
            recover.recover().await;
        }
        let current = self.current();
        match name.resolve(&current) {
            Ok(found) => Ok(found),
            Err(_) if current.unavailable(&plugin).is_some() => Err(CallError::Unavailable {
                reason: current.unavailable(&plugin).map(|u| u.reason.clone()).unwrap_or_default(),
                plugin,
            }),
            Err(_) if current.plugins().any(|(p, _)| p == plugin) => Err(name.missing_after_recovery(&plugin)),
            Err(_) => Err(CallError::Unavailable { reason: unavailable.map(|u| u.reason).unwrap_or_default(), plugin }),
        }
    }
}

/// A call's input: JSON text from a program (parsed here, once the tool is found), or
/// arguments an MCP client sent already parsed.
pub enum Input {
    /// JSON text (it may be tens of MiB: dropped once parsed).
    Text(Box<RawValue>),
    /// A parsed value.
    Value(Value),
}

/// A call that ran: the tool (for shaping the result) and what it returned.
pub struct Called {
    /// The plugin it belongs to.
    pub plugin: String,
    /// The tool.
    pub tool: Tool,
    /// Its result (`is_error` when the tool itself reported a failure).
    pub result: ToolResult,
}

/// The one path of a tool call: find, parse, check, approve, run, report (see the
/// module docs). `call_id` identifies the call within its program (0 for a direct
/// call); `cancel` tells the tool its call was given up.
pub async fn call(
    scope: &CallScope,
    name: &dyn Resolve,
    input: Input,
    call_id: u64,
    cancel: CancellationToken,
) -> Result<Called, CallError> {
    let ran = run(scope, name, input, call_id, cancel).await;
    let (plugin, end) = match &ran {
        Ok(called) => (
            Some(called.plugin.as_str()),
            if called.result.is_error { ToolCallEnd::ToolError } else { ToolCallEnd::Ok },
        ),
        Err((plugin, _)) => (plugin.as_deref(), ToolCallEnd::Rejected),
    };
    crate::telemetry::tool_call_ended(plugin, end);
    ran.map_err(|(_, e)| e)
}

/// [`call`] without the metric; `Err` carries the plugin when the tool was found.
async fn run(
    scope: &CallScope,
    name: &dyn Resolve,
    input: Input,
    call_id: u64,
    cancel: CancellationToken,
) -> Result<Called, (Option<String>, CallError)> {
    let (plugin, tool) = scope.find(name).await.map_err(|e| (None, e))?;
    // A private tool of a skill or agent the session has not unlocked is not there for it.
    if let crate::tool::skills::Access::Locked(why) = scope.skills.access(&plugin, &tool) {
        return Err((None, CallError::NoSuchTool(why)));
    }
    scope.skills.touch(&plugin, &tool.definition.name);
    let hooks = scope.hooks.as_ref();
    let finished = |ok: bool| {
        if let Some(h) = hooks {
            h.after(&plugin, &tool.definition.name, ok);
        }
    };
    let failed = |e: CallError| {
        debug_assert!(e.found_tool());
        finished(false);
        (Some(plugin.clone()), e)
    };
    let qualified = format!("{plugin}.{}", tool.definition.name);
    let input = match input {
        Input::Value(v) => v,
        // The JSON text is not needed once parsed.
        Input::Text(text) => serde_json::from_str::<Value>(text.get())
            .map_err(|error| failed(CallError::NotJson { qualified: qualified.clone(), error }))?,
    };
    // Checked before anyone is asked to approve it.
    tool.check_input(&qualified, &input).map_err(|why| failed(CallError::InvalidInput(why)))?;
    approval::approve(hooks.map(Arc::as_ref), &plugin, &tool, &input)
        .await
        .map_err(|why| failed(CallError::NotApproved(why)))?;
    let context = CallContext {
        plugin: plugin.clone(),
        tool: tool.definition.name.clone(),
        call_id,
        caller: Arc::clone(&scope.caller),
        cancel,
        approver: hooks.cloned().map(|h| h as Arc<dyn Approver>),
        progress: hooks.cloned().map(|h| h as Arc<dyn ProgressSink>),
        sampler: hooks.and_then(|h| h.sampler()),
        artifacts: hooks.and_then(|h| h.artifacts()),
    };
    let result = tool.run_validated(input, context).await.map_err(|why| failed(CallError::Failed(why)))?;
    finished(!result.is_error);
    Ok(Called { plugin, tool, result })
}

/// The CPU time the calling thread has used.
fn thread_cpu() -> std::time::Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(std::time::Duration::from)
        .unwrap_or_default()
}

/// Runs one call of a program's worker; resolves with the answer for the worker.
pub(crate) async fn serve_call(
    scope: Arc<CallScope>,
    cancel: CancellationToken,
    call_id: u64,
    plugin: String,
    tool: String,
    input: Box<RawValue>,
) -> (u64, ToolAnswer) {
    if plugin == BUILTIN_PLUGIN {
        return (call_id, call_builtin(&scope, tool, input).await);
    }
    let answer = match call(&scope, &ByPath { plugin: &plugin, tool: &tool }, Input::Text(input), call_id, cancel).await
    {
        Ok(mut called) => {
            scope.record_changes(&called.plugin, &called.tool.definition.name, &mut called.result);
            called.tool.answer(&called.result)
        }
        Err(e) => ToolAnswer::Reject(e.to_string()),
    };
    (call_id, answer)
}

/// A built-in call made by a front end rather than a program (separate-tools mode's
/// `load_skill`, `load_tool`, `discover`): the same limits as a program's.
pub(crate) async fn builtin_for(scope: &CallScope, tool: &str, input: Box<RawValue>) -> ToolAnswer {
    call_builtin(scope, tool.to_string(), input).await
}

/// A built-in call (`tools.$<tool>`): off the session's task (the host's runtime
/// threads also serve every other program and the health endpoints), under the
/// program's wall clock (the session stops waiting for it at the limit), one at a time
/// per program, one per core for all, within the program's host-CPU budget; the work is
/// bounded by the built-in's own caps.
async fn call_builtin(scope: &CallScope, tool: String, input: Box<RawValue>) -> ToolAnswer {
    use std::sync::atomic::Ordering;
    let Some(builtin) = scope.builtins.get(&tool) else {
        return ToolAnswer::Reject(scope.builtins.unknown(&tool));
    };
    let (Ok(_turn), Ok(_slot)) = (scope.builtin_turn.acquire().await, scope.builtin_slots.acquire().await) else {
        return ToolAnswer::Reject("codemode's built-in calls are shutting down".into());
    };
    let limit = scope.host_cpu_limit;
    let used = scope.host_cpu_spent();
    if used >= limit {
        return ToolAnswer::Reject(format!(
            "tools.${tool}: this program's built-in calls already took {} of the host's CPU, all its {} allow ([limits] host_cpu_ms); search less often, with fewer words",
            crate::limits::human_duration(used),
            crate::limits::human_duration(limit)
        ));
    }
    let catalog = scope.current();
    let semantic = scope.semantic.clone();
    let skills = Arc::clone(&scope.skills);
    let answered = tokio::task::spawn_blocking(move || {
        let started = thread_cpu();
        let env = builtin::BuiltinEnv { catalog: &catalog, semantic: semantic.as_deref(), skills: &skills };
        let answer = builtin.call(&env, input.get());
        (answer, thread_cpu().saturating_sub(started))
    })
    .await;
    match answered {
        Ok((answer, took)) => {
            scope.host_cpu_used.fetch_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX), Ordering::AcqRel);
            answer
        }
        Err(e) => ToolAnswer::Reject(format!("codemode's built-in call failed: {e}")),
    }
}
