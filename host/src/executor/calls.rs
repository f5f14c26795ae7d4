//! One tool call of a program: find the tool (trying an unavailable plugin again first),
//! parse and check the input, ask the caller's hooks (approvals), run it, check its
//! output, and turn the result into the answer the program reads.

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use protocol::ToolAnswer;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::telemetry::ToolCallEnd;
use crate::tool::{Approver, CallContext, Caller, Catalog, ProgressSink, Tool};

/// What a caller may add around each tool call of a program: a check before it (for
/// approvals), a report after it (for progress), someone to ask when a tool asks a
/// person something during a call ([`Approver`]), and someone to hear how long calls
/// are going ([`ProgressSink`]).
pub trait CallHooks: Approver + ProgressSink {
    /// Runs before the call; an `Err` rejects it in the program with that message, and
    /// the tool never runs.
    fn before(&self, plugin: &str, tool: &Tool, input: &Value) -> BoxFuture<'static, Result<(), String>>;
    /// Runs when the call finished; `ok` is false for a failed or rejected call.
    fn after(&self, plugin: &str, tool: &str, ok: bool);
}

/// What every tool call of one program shares: the catalog it was started with (and
/// the executor's current one, for plugins that recover while it runs), who runs it,
/// and the caller's hooks.
pub(super) struct CallScope {
    pub(super) catalog: Arc<Catalog>,
    pub(super) current: Arc<RwLock<Arc<Catalog>>>,
    pub(super) caller: Arc<Caller>,
    pub(super) hooks: Option<Arc<dyn CallHooks>>,
    /// CPU the host may spend on this program's built-in calls, and what they took so
    /// far (nanoseconds, measured on the threads that ran them).
    pub(super) host_cpu_limit: std::time::Duration,
    pub(super) host_cpu_used: std::sync::atomic::AtomicU64,
    /// The program's built-in calls run one at a time (so none starts past its limit)...
    pub(super) builtin_turn: tokio::sync::Semaphore,
    /// ...and all programs' together at most one per core, so that no program's searches
    /// fill the host's blocking pool.
    pub(super) builtin_slots: Arc<tokio::sync::Semaphore>,
    /// The search model, when one is installed.
    pub(super) semantic: Option<Arc<crate::tool::semantic::Semantic>>,
}

impl CallScope {
    /// The CPU its built-in calls took so far.
    pub(super) fn host_cpu_spent(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.host_cpu_used.load(std::sync::atomic::Ordering::Acquire))
    }
}

impl CallScope {
    /// The tool `plugin.tool`, trying an unavailable plugin again first; `Err` is the
    /// rejection the program reads.
    async fn find(&self, plugin: &str, tool: &str) -> Result<Tool, String> {
        if let Some(t) = self.catalog.get(plugin, tool) {
            return Ok(t.clone());
        }
        // The worker sends the names the program wrote when it knows no tool of the
        // plugin (an unavailable one): its `_` aliases reach the real plugin too.
        let plugin = self.catalog.plugin_named(plugin).unwrap_or(plugin).to_string();
        let Some(unavailable) = self.catalog.unavailable(&plugin) else {
            return self
                .catalog
                .get_or_alias(&plugin, tool)
                .cloned()
                .ok_or_else(|| format!("unknown tool {plugin}.{tool}"));
        };
        if let Some(recover) = &unavailable.recover {
            recover.recover().await;
        }
        let current = Arc::clone(&self.current.read().unwrap_or_else(|p| p.into_inner()));
        match (current.get_or_alias(&plugin, tool), current.unavailable(&plugin)) {
            (Some(t), _) => Ok(t.clone()),
            (None, Some(still)) => Err(format!("plugin {plugin} is unavailable: {}", still.reason)),
            (None, None) if current.plugins().any(|(p, _)| p == plugin) => {
                Err(format!("plugin {plugin} has no tool named {tool}"))
            }
            (None, None) => Err(format!("plugin {plugin} is unavailable: {}", unavailable.reason)),
        }
    }
}

/// The CPU time the calling thread has used.
fn thread_cpu() -> std::time::Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(std::time::Duration::from)
        .unwrap_or_default()
}

/// Runs one tool call; resolves with the answer for the worker.
pub(super) async fn serve_call(
    scope: Arc<CallScope>,
    cancel: CancellationToken,
    call_id: u64,
    plugin: String,
    tool: String,
    input: Box<RawValue>,
) -> (u64, ToolAnswer) {
    if plugin == super::builtin::BUILTIN_PLUGIN {
        // Off the session's task (the host's runtime threads also serve every other
        // program and the health endpoints), under the program's wall clock: the
        // session stops waiting for it at the limit, and the work is bounded by the
        // built-in's own caps.
        use std::sync::atomic::Ordering;
        let (Ok(_turn), Ok(_slot)) = (scope.builtin_turn.acquire().await, scope.builtin_slots.acquire().await) else {
            return (call_id, ToolAnswer::Reject("codemode's built-in calls are shutting down".into()));
        };
        let limit = scope.host_cpu_limit;
        let used = scope.host_cpu_spent();
        if used >= limit {
            return (
                call_id,
                ToolAnswer::Reject(format!(
                    "tools.${tool}: this program's built-in calls already took {} of the host's CPU, all its {} allow ([limits] host_cpu_ms); search less often, with fewer words",
                    crate::limits::human_duration(used),
                    crate::limits::human_duration(limit)
                )),
            );
        }
        let catalog = Arc::clone(&scope.current.read().unwrap_or_else(|p| p.into_inner()));
        let semantic = scope.semantic.clone();
        let answered = tokio::task::spawn_blocking(move || {
            let started = thread_cpu();
            let answer = super::builtin::answer(&catalog, semantic.as_deref(), &tool, input.get());
            (answer, thread_cpu().saturating_sub(started))
        })
        .await;
        return match answered {
            Ok((answer, took)) => {
                scope.host_cpu_used.fetch_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX), Ordering::AcqRel);
                (call_id, answer)
            }
            Err(e) => (call_id, ToolAnswer::Reject(format!("codemode's built-in call failed: {e}"))),
        };
    }
    let found = scope.find(&plugin, &tool).await;
    let CallScope { caller, hooks, .. } = &*scope;
    let caller = Arc::clone(caller);
    let parsed = serde_json::from_str::<Value>(input.get());
    // The JSON text is not needed once parsed: it may be tens of MiB.
    drop(input);
    let answer = match &found {
        Err(why) => {
            // A name the program made up is no label: programs cannot grow the series.
            crate::telemetry::tool_call_ended(None, ToolCallEnd::Rejected);
            ToolAnswer::Reject(why.clone())
        }
        Ok(t) => match parsed {
            Err(e) => {
                crate::telemetry::tool_call_ended(Some(&plugin), ToolCallEnd::Rejected);
                ToolAnswer::Reject(format!("the input of {plugin}.{tool} is not JSON: {e}"))
            }
            Ok(input) => {
                // Checked before anyone is asked to approve it.
                let checked = t.check_input(&format!("{plugin}.{tool}"), &input);
                let approved = match (checked, hooks) {
                    (Err(why), _) => Err(why),
                    (Ok(()), Some(h)) => h.before(&plugin, t, &input).await,
                    (Ok(()), None) if !t.definition.requires_approval.is_never() => Err(format!(
                        "tools.{plugin}.{tool} needs a person's approval ({}), and nobody can be asked here: run the program through the MCP server (codemode mcp or codemode serve), whose client asks the person",
                        match t.definition.requires_approval {
                            crate::tool::Approval::OncePerSession => "once per session",
                            _ => "for each call",
                        }
                    )),
                    (Ok(()), None) => Ok(()),
                };
                let outcome = match approved {
                    Ok(()) => {
                        t.run_validated(
                            input,
                            CallContext {
                                plugin: plugin.clone(),
                                tool: tool.clone(),
                                call_id,
                                caller,
                                cancel,
                                approver: hooks.clone().map(|h| h as Arc<dyn Approver>),
                                progress: hooks.clone().map(|h| h as Arc<dyn ProgressSink>),
                            },
                        )
                        .await
                    }
                    Err(why) => Err(why),
                };
                if let Some(h) = hooks {
                    h.after(&plugin, &tool, outcome.as_ref().is_ok_and(|r| !r.is_error));
                }
                crate::telemetry::tool_call_ended(
                    Some(&plugin),
                    match &outcome {
                        Ok(r) if r.is_error => ToolCallEnd::ToolError,
                        Ok(_) => ToolCallEnd::Ok,
                        Err(_) => ToolCallEnd::Rejected,
                    },
                );
                match outcome {
                    Ok(result) => t.answer(&result),
                    Err(why) => ToolAnswer::Reject(why),
                }
            }
        },
    };
    (call_id, answer)
}
