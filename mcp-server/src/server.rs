//! The rmcp server handler: the tools an agent sees, and what happens when it calls one.
//!
//! - **Code mode** (the default): one tool, `execute { code }`, whose description
//!   ([`super::description`]) declares every plugin tool. Each call runs the program in
//!   its own worker through the [`Executor`], at most `max_concurrent_programs` at once
//!   (the rest wait their turn, shared fairly between sessions: [`super::slots`]; a
//!   program waiting for a person's answer holds no slot meanwhile). A client's `notifications/cancelled` cancels the
//!   request's token, which kills the worker and cancels its tool calls at their
//!   plugins. With a progress token, each finished tool call sends a progress
//!   notification.
//! - **Separate tools mode**: each plugin tool is an MCP tool of its own, under its own
//!   name (`<plugin>_<tool>` where two plugins share one; `<plugin>__<tool>` for every
//!   tool with `tool_names = "prefixed"`), with its own schemas and annotations, called
//!   directly (no worker), with the same checks as a program's call.
//! - **Approvals** ([`Approvals`]), in both modes: a call to a tool marked
//!   `requires_approval` asks the person through MCP elicitation first.
//! - When the catalog changes, every connected client gets
//!   `notifications/tools/list_changed`, and the next list reflects the change.
//! - **Who calls**: every tool call's context carries the client's name as `agentId`
//!   (its `clientInfo`), the first `file://` root it offers as `workspace` (read after
//!   `initialized` and again when its roots change), and `chatId` when the request names
//!   the chat in `_meta.chatId`; nothing is invented from the MCP session. Each tool
//!   call's `callId` is `<request id>:<call number>` (the request id alone for a tool
//!   called directly); `workspaceId` and `messageId` come from the request's
//!   `_meta.workspaceId` and `_meta.messageId`, `sessionId` from the HTTP session
//!   (`Mcp-Session-Id`), and what the host application passes its tools (plico's
//!   `ctx.context`) from `_meta["codemode/context"]` ([`HOST_CONTEXT_META`]).
//! - **Progress** from inside a call (a plugin's `host/progress`: a subagent's rows,
//!   Podcode's `ctx.metadata`) reaches a client that gave a progress token as progress
//!   notifications of the request; plugins are told whether it does (`progressShown`).
//! - **Artifacts** ([`codemode_core::tool::artifacts`]): what tools keep for the
//!   session (plico's `ctx.artifacts`) reaches the agent with the result of the request
//!   during which it was written: as `resource_link`s to `artifact://` resources that
//!   `resources/read` serves while the session lasts, or, for a 2026-07-28 client (no
//!   session to read them in later), as embedded resources; each with its media type.
//! - **Logging** ([`super::logs`]): sessions the operator chose receive codemode's log
//!   (plugins' stderr and console lines, codemode's warnings) as `notifications/message`,
//!   from the level they set with `logging/setLevel`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ServerCapabilities, ServerConfig as InitializeInfo, Tool as McpTool,
};
// MCP's logging is deprecated by SEP-2577 (2026-07-28); clients of the earlier revisions
// still use it.
use rmcp::model::{CacheScope, ServerNotification, SubscriptionFilter, ToolListChangedNotification};
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{json, Value};

use super::approvals::{Approvals, Asker};
use super::cut::{cut_json, cut_text};
use super::description::{execute_description, instructions};
use super::logs;
use super::rounds::{Binding, Resumed};
use super::settings::{ServerConfig, ServerMode, ToolNames};
use codemode_core::dispatch::{ApprovedOnce, CallError, CallHooks, Missing, Resolve, RunRequest};
use codemode_core::executor::{Executor, Program};
use codemode_core::limits::Limits;
use codemode_core::outcome::{Outcome, OutcomeKind};
use codemode_core::tool::artifacts::{Artifact, Artifacts};
use codemode_core::tool::skills::SkillSession;
use codemode_core::tool::{
    Approval, ApprovalAnswer, ApprovalQuestion, Approver, CallProgress, CallStatus, Caller, Catalog, Content,
    ProgressSink, Tool, ToolResult,
};
use rmcp::model::{
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents,
};

pub use super::EXECUTE;
/// The request `_meta` key whose value reaches plugins as the host application's context
/// (plico's `ctx.context`), as it came.
pub const HOST_CONTEXT_META: &str = "codemode/context";
/// Longest progress line made of what a plugin says about a running call, in characters.
const MAX_STATUS_CHARS: usize = 4000;
/// Most progress lines a request's tools may send of what they are doing (their
/// `host/progress`): they queue for a client that may read slowly.
const MAX_STATUS_LINES: u64 = 1000;
/// The request `_meta` key with which a client selects an agent (seed 001's
/// `agents/<name>/`, `name` or `plugin/name`) for its session.
pub const AGENT_META: &str = "codemode/agent";
/// Separates plugin and tool in separate tools mode (`notes__add-note`).
pub const SEPARATOR: &str = "__";

/// The MCP server. Cheap to clone; every HTTP session gets its own
/// ([`CodemodeServer::for_new_session`]).
#[derive(Clone)]
pub struct CodemodeServer {
    shared: Arc<Shared>,
    session: Arc<ClientSession>,
}

/// A tools list, the catalog it was made for, and whether the search model had loaded.
type ListedFor = (Arc<Catalog>, bool, Arc<PagedTools>);

/// What one MCP session remembers.
struct ClientSession {
    /// Which session it is (for sharing program slots fairly).
    id: u64,
    /// Tools approved "once" in this session (`plugin`, `tool`): later calls run.
    approved_once: ApprovedOnce,
    /// The session receives codemode's log (decided at `initialize`).
    gets_logs: std::sync::atomic::AtomicBool,
    /// The least severe log level it receives (`logging/setLevel`).
    log_level: std::sync::Mutex<logs::Level>,
    /// Who the client is (its `clientInfo.name`): tool calls' `agentId`.
    agent_id: std::sync::Mutex<Option<String>>,
    /// The folder it works in (its first `file://` root): tool calls' `workspace`.
    workspace: std::sync::Mutex<Option<String>>,
    /// What its tools keep for it (`ctx.artifacts`), freed with it.
    artifacts: Arc<Artifacts>,
    /// The skills and private tools it loaded and the agents it selected (seed 001),
    /// made with the server's settings on first use.
    skills: std::sync::OnceLock<Arc<SkillSession>>,
    /// Its sampling questions waiting for the client's model.
    sampling_waiting: Arc<AtomicUsize>,
}

impl Default for ClientSession {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            approved_once: Default::default(),
            gets_logs: Default::default(),
            log_level: std::sync::Mutex::new(logs::Level::Info),
            agent_id: Default::default(),
            workspace: Default::default(),
            artifacts: Default::default(),
            skills: Default::default(),
            sampling_waiting: Default::default(),
        }
    }
}

struct Shared {
    /// Programs of 2026-07-28 clients between their requests.
    rounds: super::rounds::Rounds,
    executor: Arc<Executor>,
    limits: Limits,
    config: ServerConfig,
    instructions: String,
    programs: super::slots::ProgramSlots,
    /// Which sessions receive codemode's log, and the operator token that names them.
    client_logs: logs::ClientLogs,
    log_token: Option<String>,
    /// The tools list, made once for the catalog it shows (a large catalog's list is
    /// megabytes: every `tools/list` shares it until the catalog changes, or the
    /// search model loads: the description names the ranker).
    listed: std::sync::Mutex<Option<ListedFor>>,
}

impl CodemodeServer {
    /// A server running programs on `executor` under `limits`, presenting the tools as
    /// `config` says, with `rules` (each plugin's, under its heading) as instructions.
    ///
    /// `client_logs` says which sessions receive codemode's log (`log_token`: the value
    /// of its `token_env`, read by the caller); `rounds` keeps the programs of
    /// 2026-07-28 clients between their requests.
    pub fn new(
        executor: Arc<Executor>,
        limits: Limits,
        config: ServerConfig,
        rules: &str,
        client_logs: logs::ClientLogs,
        log_token: Option<String>,
        rounds: super::rounds::Rounds,
    ) -> Self {
        let instructions = instructions(rules, config.mode, config.tool_names);
        let total = config.max_concurrent_programs.max(1);
        let per_session = config.max_programs_per_session.unwrap_or_else(|| super::slots::per_session_cap(total));
        let paused = config.paused_programs();
        let paused = super::slots::PausedCaps {
            total: paused,
            per_session: config
                .max_paused_programs_per_session
                .unwrap_or_else(|| super::slots::per_session_cap(paused)),
        };
        let programs = super::slots::ProgramSlots::new(total, per_session, paused);
        let shared = Shared {
            rounds,
            executor,
            limits,
            config,
            instructions,
            programs,
            client_logs,
            log_token,
            listed: std::sync::Mutex::new(None),
        };
        Self { shared: Arc::new(shared), session: Arc::default() }
    }

    /// The server for a new session: the same tools and programs, with nothing the
    /// last session remembered (its "once" approvals).
    pub fn for_new_session(&self) -> Self {
        Self { shared: Arc::clone(&self.shared), session: Arc::default() }
    }

    /// The tools the agent sees now (made once per catalog, and once more when the
    /// search model has loaded).
    pub fn tools(&self) -> Arc<PagedTools> {
        let catalog = self.shared.executor.catalog();
        let model = self.shared.executor.semantic().is_some();
        if let Some((of, with_model, tools)) = self.shared.listed.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            if Arc::ptr_eq(of, &catalog) && *with_model == model {
                return Arc::clone(tools);
            }
        }
        // Made outside the lock: other lists are answered meanwhile. Two requests at a
        // catalog change may both make it; the first one kept is the one every request
        // shares (their lists are the same, and so are their cursors).
        let made = Arc::new(PagedTools::new(self.make_tools(&catalog)));
        let mut kept = self.shared.listed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((of, with_model, tools)) = kept.as_ref() {
            if Arc::ptr_eq(of, &catalog) && *with_model == model {
                return Arc::clone(tools);
            }
        }
        *kept = Some((catalog, model, Arc::clone(&made)));
        made
    }

    /// The tools the agent sees for `catalog`.
    fn make_tools(&self, catalog: &Catalog) -> Vec<McpTool> {
        match self.shared.config.mode {
            ServerMode::Code => {
                // The ranker searches will use once the tools are embedded (the list is
                // made once per catalog).
                let ranker = codemode_core::dispatch::builtin::search_ranker(
                    self.shared.executor.semantic().map(|s| s.as_ref()),
                    true,
                );
                let description = execute_description(
                    catalog,
                    &self.shared.limits,
                    self.shared.config.output_bytes,
                    self.shared.config.catalog_budget,
                    &ranker,
                );
                let schema = json!({
                    "type": "object",
                    "properties": { "code": { "type": "string", "description": "The JavaScript program: an async function body, or one expression such as `async (tools) => ...`." } },
                    "required": ["code"],
                });
                vec![McpTool::new(EXECUTE, description, object(schema))
                    .with_title("Run a JavaScript program that calls tools")]
            }
            ServerMode::Tools => {
                let naming = self.shared.config.tool_names;
                let tools: Vec<McpTool> = catalog
                    .plugins()
                    .flat_map(|(plugin, tools)| {
                        tools
                            .filter(|t| t.definition.is_public())
                            .map(|t| separate_tool(catalog, naming, plugin, t))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                usable_separate_tools(tools)
            }
        }
    }

    /// What `session` loaded and selected (seed 001's skills, private tools, agents),
    /// with the agent the request's `_meta` names (`codemode/agent`) selected for the
    /// rest of the session. A 2026-07-28 request is a session of its own: what one
    /// program loads lasts for that program.
    ///
    /// `Err` (the request is refused, nothing kept) when the name is no enabled
    /// plugin's agent, or one this client may not select ([`ServerConfig::client_agents`]).
    fn skills(&self, session: &ClientSession, ctx: &RequestContext<RoleServer>) -> Result<Arc<SkillSession>, String> {
        let agent = match ctx.meta.get(AGENT_META) {
            None | Some(Value::Null) => None,
            Some(Value::String(agent)) if agent.trim().is_empty() => None,
            Some(Value::String(agent)) => Some(self.selectable_agent(agent.trim(), ctx)?),
            Some(_) => return Err(format!("the request's _meta \"{AGENT_META}\" must be an agent's name (a string)")),
        };
        let skills =
            Arc::clone(session.skills.get_or_init(|| Arc::new(SkillSession::new(self.shared.config.load_settings()))));
        if let Some(agent) = agent {
            skills.select_agent(&agent);
        }
        Ok(skills)
    }

    /// The agent `named` (`name` or `plugin/name`) as `plugin/name`, when an enabled
    /// plugin has it and this client may select it. A session therefore keeps at most
    /// as many agent names as the catalog has agents.
    fn selectable_agent(&self, named: &str, ctx: &RequestContext<RoleServer>) -> Result<String, String> {
        use codemode_core::tool::skills::{agent_names, names_agent as matches};
        let known = agent_names(self.shared.executor.catalog().guidances());
        // A name is echoed at most this long: the request may carry megabytes.
        let shown: String = named.chars().take(80).collect();
        let shown = if shown.len() < named.len() { format!("{shown}…") } else { shown };
        let Some(agent) = known.iter().find(|k| matches(k, named)) else {
            return Err(if known.is_empty() {
                format!("the request's _meta \"{AGENT_META}\" selects agent {shown:?}, but no enabled plugin has agents (seed 001's agents/<name>/ folders)")
            } else {
                format!("the request's _meta \"{AGENT_META}\" selects agent {shown:?}, which no enabled plugin has; the agents are {}", known.join(", "))
            });
        };
        match &self.shared.config.client_agents {
            Some(allowed) if allowed.iter().any(|a| matches(agent, a)) => Ok(agent.clone()),
            None if !over_http(ctx) => Ok(agent.clone()),
            Some(allowed) if !allowed.is_empty() => Err(format!(
                "the request's _meta \"{AGENT_META}\" selects agent {agent}, which this server does not let clients select: [server] client_agents allows {}",
                allowed.join(", ")
            )),
            _ => Err(format!(
                "the request's _meta \"{AGENT_META}\" selects agent {agent}, but this server lets clients select no agent: the operator lists the ones they may in [server] client_agents"
            )),
        }
    }

    /// Who runs a program of this request: the session's client and workspace, the
    /// chat when the request names it (`_meta.chatId`), and the request's id; the
    /// workspace's id and the agent's message when the request names them
    /// (`_meta.workspaceId`, `_meta.messageId`), the HTTP session's id, and the host
    /// application's context (`_meta["codemode/context"]`).
    ///
    /// A 2026-07-28 request has no session: its client is the `clientInfo` of its
    /// `_meta`, and its workspace `_meta.workspace` (a folder, or a `file://` URL).
    /// A new program's wait for the answers to its questions (`[server] answer_wait_ms`,
    /// at least a second).
    fn answer_wait(&self) -> Arc<super::approvals::AnswerWait> {
        super::approvals::AnswerWait::new(std::time::Duration::from_millis(self.shared.config.answer_wait_ms.max(1000)))
    }

    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Caller {
        let read = |slot: &std::sync::Mutex<Option<String>>| slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let named = |name: &str| Some(name.trim().to_string()).filter(|n| !n.is_empty());
        let workspace_in_meta =
            ctx.meta.get("workspace").and_then(Value::as_str).and_then(|w| match url::Url::parse(w) {
                Ok(url) if url.scheme() == "file" => url.to_file_path().ok().map(|p| p.display().to_string()),
                Ok(_) => None,
                Err(_) => named(w),
            });
        let text_in_meta =
            |key: &str| ctx.meta.get(key).and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_owned);
        let session_id = ctx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .and_then(named);
        let workspace = read(&self.session.workspace).or(workspace_in_meta);
        // A client over HTTP names paths on this machine: plugins work in its files only
        // within the operator's roots.
        let over_http = over_http(ctx);
        // The folder is opened once, here: every file request of the program resolves
        // beneath what was opened (and checked) now.
        let roots = over_http.then_some(self.shared.config.workspace_roots.as_slice());
        let (workspace_dir, workspace_refused) =
            match workspace.as_deref().map(|w| super::settings::open_workspace(w, roots)) {
                Some(Ok(dir)) => (Some(dir), None),
                // A local client's folder that cannot be opened now is reported by the
                // file request that needs it.
                Some(Err(_)) if !over_http => (None, None),
                Some(Err(why)) => (None, Some(why)),
                None => (None, None),
            };
        Caller {
            workspace,
            workspace_refused,
            workspace_dir,
            agent_id: read(&self.session.agent_id).or_else(|| ctx.client_info().and_then(|info| named(&info.name))),
            chat_id: ctx.meta.get("chatId").and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_owned),
            call_id: Some(request_call_id(ctx)),
            workspace_id: text_in_meta("workspaceId"),
            message_id: text_in_meta("messageId"),
            session_id,
            context: ctx.meta.get(HOST_CONTEXT_META).filter(|v| !v.is_null()).cloned(),
        }
    }

    /// `execute` for a client of a revision with sessions: the program runs within this
    /// request, and its questions go to the client as elicitation requests.
    async fn execute(
        &self,
        arguments: Option<serde_json::Map<String, Value>>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(code) = program_text(arguments.as_ref()) else { return missing_program() };
        let skills = match self.skills(&self.session, &ctx) {
            Ok(skills) => skills,
            Err(why) => return CallToolResult::error(vec![ContentBlock::text(why)]),
        };
        // Wait for a free slot (shared fairly between sessions); a client that gives up
        // while waiting leaves the queue. The seat is given back when the program ends.
        let seat = self.shared.programs.seat(self.session.id);
        tokio::select! {
            () = seat.take() => {}
            () = ctx.ct.cancelled() => return CallToolResult::error(vec![ContentBlock::text("the program was cancelled before it started")]),
        };
        let asker =
            Asker::Session { peer: ctx.peer.clone(), seat: Some(Arc::downgrade(&seat)), wait: self.answer_wait() };
        let (hooks, progress_sent) =
            Hooks::new(asker, ctx.peer.clone(), ctx.meta.get_progress_token(), Arc::clone(&self.session));
        let program = Program::new(code)
            .limits(self.shared.limits)
            .cancel(ctx.ct.clone())
            .caller(self.caller(&ctx))
            .hooks(Arc::new(hooks) as Arc<dyn CallHooks>)
            .skills(skills);
        let mark = self.session.artifacts.mark();
        let result = self.run_to_result(program, progress_sent).await;
        with_artifacts(result, &self.session.artifacts, mark, ArtifactsAs::Links)
    }

    /// Runs `program` and writes its result for the agent.
    async fn run_to_result(
        &self,
        program: Program,
        progress_sent: Option<tokio::task::JoinHandle<()>>,
    ) -> CallToolResult {
        let outcome = self.shared.executor.run(program).await;
        // The program is over and its hooks are dropped: let the last progress
        // notifications go out before the result (a client ignores progress for a
        // request it already has the answer to).
        if let Some(sent) = progress_sent {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), sent).await;
        }
        // Reading, splitting and cutting the value is linear in its size, which can be
        // the program's whole result limit: off the runtime's threads.
        let cap = self.shared.config.output_bytes;
        tokio::task::spawn_blocking(move || program_result(&outcome, cap)).await.unwrap_or_else(|e| {
            CallToolResult::error(vec![ContentBlock::text(format!(
                "codemode could not write the program's result: {e}"
            ))])
        })
    }

    /// `execute` for a 2026-07-28 client (Multi Round-Trip Requests, see
    /// [`super::rounds`]): a new program starts in a task of its own and this request
    /// answers with its result or its first questions; a retry with `requestState`
    /// brings the answers and waits for what comes next (on the replica that holds the
    /// program, which another replica passes the retry on to).
    async fn execute_in_rounds(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = ctx.extensions.get::<http::request::Parts>();
        let authorization = parts
            .and_then(|p| p.headers.get(http::header::AUTHORIZATION))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let binding = Binding::of(authorization.as_deref());
        let rounds = &self.shared.rounds;
        if let Some(state) = request.request_state.as_deref() {
            return match rounds.resume(state, binding) {
                Err(why) => Err(ErrorData::invalid_params(why, None)),
                Ok(Resumed::Here(run)) => {
                    if let Some(responses) = request.input_responses {
                        rounds.answer(&run, responses);
                    }
                    rounds.round(&run, &ctx.ct).await
                }
                Ok(Resumed::Elsewhere(replica)) => {
                    if parts.is_some_and(|p| p.headers.contains_key(super::rounds::FORWARDED_HEADER)) {
                        // The address is for the operator's log; the client (which may
                        // have set the header itself) is told nothing of it.
                        tracing::warn!(
                            "a retry passed on to this replica is for the program on {replica}, which this one is not"
                        );
                        return Err(ErrorData::invalid_params(super::rounds::NOT_HELD, None));
                    }
                    let mut params = serde_json::to_value(&request)
                        .map_err(|e| ErrorData::internal_error(format!("the retry cannot be passed on: {e}"), None))?;
                    if let (Some(params), Ok(meta)) = (params.as_object_mut(), serde_json::to_value(&ctx.meta)) {
                        params.insert("_meta".into(), meta);
                    }
                    rounds.forward(&replica, params, authorization.as_deref()).await
                }
            };
        }
        let Some(code) = program_text(request.arguments.as_ref()) else {
            return Ok(CallToolResponse::Complete(missing_program()));
        };
        // Each program is a session of its own ("once" approvals last for it).
        let session = Arc::new(ClientSession::default());
        let skills = match self.skills(&session, &ctx) {
            Ok(skills) => skills,
            Err(why) => return Ok(CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(why)]))),
        };
        let (run, side) = rounds.start(binding);
        // The client's programs share one session for slots: its credential's.
        let seat = self.shared.programs.seat(binding.slots_session());
        let asker = Asker::Rounds {
            capabilities: ctx.client_capabilities().unwrap_or_default(),
            questions: side.questions.clone(),
            seat: Arc::downgrade(&seat),
            wait: self.answer_wait(),
        };
        let (hooks, progress_sent) =
            Hooks::new(asker, ctx.peer.clone(), ctx.meta.get_progress_token(), Arc::clone(&session));
        let program = Program::new(code)
            .limits(self.shared.limits)
            .caller(self.caller(&ctx))
            .hooks(Arc::new(hooks) as Arc<dyn CallHooks>)
            .skills(skills);
        let server = self.clone();
        let artifacts = Arc::clone(&session.artifacts);
        tokio::spawn(async move {
            seat.take().await;
            let result = server.run_to_result(program, progress_sent).await;
            // No session keeps them for a later `resources/read`: they travel embedded.
            let result =
                with_artifacts(result, &artifacts, 0, ArtifactsAs::Embedded { cap: server.shared.config.output_bytes });
            // Its slot is free before its client has the result.
            drop(seat);
            side.finish(result);
        });
        rounds.round(&run, &ctx.ct).await
    }

    /// A plugin tool called directly (separate-tools mode): the same path as a program's
    /// call ([`codemode_core::dispatch::call`]), approvals asked through the client, progress
    /// sent when the client gave a progress token, the result cut to `output_bytes`.
    async fn call_separate(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(builtin) = self.deferred_builtin(name) {
            return Ok(self.call_deferred(builtin, arguments, ctx).await);
        }
        let skills = match self.skills(&self.session, &ctx) {
            Ok(skills) => skills,
            Err(why) => return Ok(CallToolResult::error(vec![ContentBlock::text(why)])),
        };
        let input = Value::Object(arguments.unwrap_or_default());
        // A tool called directly holds no program slot.
        let asker = Asker::Session { peer: ctx.peer.clone(), seat: None, wait: self.answer_wait() };
        let (hooks, progress_sent) =
            Hooks::new(asker, ctx.peer.clone(), ctx.meta.get_progress_token(), Arc::clone(&self.session));
        let name = SeparateName { name, naming: self.shared.config.tool_names };
        let mark = self.session.artifacts.mark();
        let called = self
            .shared
            .executor
            .call_tool_in(
                &name,
                input,
                self.caller(&ctx),
                Some(Arc::new(hooks) as Arc<dyn CallHooks>),
                ctx.ct.clone(),
                skills,
            )
            .await;
        // The hooks are dropped: let the last progress notifications go out before the
        // result.
        if let Some(sent) = progress_sent {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), sent).await;
        }
        match called {
            Ok(called) => Ok(with_artifacts(
                tool_result(called.result, self.shared.config.output_bytes),
                &self.session.artifacts,
                mark,
                ArtifactsAs::Links,
            )),
            Err(CallError::NoSuchTool(why)) => Err(ErrorData::invalid_params(why, None)),
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())])),
        }
    }
}

/// Separate-tools mode's names for the deferred catalog's built-ins (seed 001's own),
/// and the built-in each calls: offered when the catalog has skills or private tools.
const DEFERRED_TOOLS: [(&str, &str, &str); 3] = [
    ("load_skill", "skills.load", "Loads a skill: resolves with its instructions (its SKILL.md) and the tools it unlocks, which are listed from then on (the list changes). Input: { name }."),
    ("load_tool", "skills.loadTool", "Loads one tool a skill owns by name (`plugin.tool`), so it is listed from then on. Input: { name }."),
    ("discover", "skills.discover", "Finds tools and skills for what you need to do, best first (5 unless topK says otherwise). Input: { query, plugin?, topK? }."),
];

impl CodemodeServer {
    /// Whether the catalog has anything to load (skills or private tools).
    fn has_deferred(catalog: &Catalog) -> bool {
        catalog.skills().next().is_some()
            || catalog.plugins().any(|(_, mut tools)| tools.any(|t| t.definition.owner.is_some()))
    }

    /// The built-in a separate tool named `name` calls, when it is one of
    /// [`DEFERRED_TOOLS`] and the catalog has something to load.
    fn deferred_builtin(&self, name: &str) -> Option<&'static str> {
        if self.shared.config.mode != ServerMode::Tools || !Self::has_deferred(&self.shared.executor.catalog()) {
            return None;
        }
        DEFERRED_TOOLS.iter().find(|(tool, _, _)| *tool == name).map(|(_, builtin, _)| *builtin)
    }

    /// This session's tools list in separate-tools mode when the catalog has skills:
    /// `listed`, the deferred catalog's three tools, and the private tools the session
    /// may call now. `None` otherwise (everyone shares `listed`).
    fn session_tools(&self, listed: &PagedTools) -> Option<Vec<McpTool>> {
        let catalog = self.shared.executor.catalog();
        if self.shared.config.mode != ServerMode::Tools || !Self::has_deferred(&catalog) {
            return None;
        }
        let skills = Arc::clone(
            self.session.skills.get_or_init(|| Arc::new(SkillSession::new(self.shared.config.load_settings()))),
        );
        let mut tools = listed.all().to_vec();
        for (name, _, description) in DEFERRED_TOOLS {
            let schema = if name == "discover" {
                json!({ "type": "object", "properties": { "query": { "type": "string" }, "plugin": { "type": "string" }, "topK": { "type": "integer", "minimum": 1, "maximum": 50 } }, "required": ["query"] })
            } else {
                json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] })
            };
            tools.push(McpTool::new(name, description, object(schema)));
        }
        let naming = self.shared.config.tool_names;
        for (plugin, plugin_tools) in catalog.plugins() {
            for tool in plugin_tools.filter(|t| t.definition.owner.is_some() && skills.shows(plugin, t)) {
                tools.push(separate_tool(&catalog, naming, plugin, tool));
            }
        }
        Some(usable_separate_tools(tools))
    }

    /// Separate-tools mode's `load_skill`, `load_tool` or `discover`: the built-in on
    /// this session, then, after a load, `notifications/tools/list_changed` (the
    /// session's list now holds the loaded tools).
    async fn call_deferred(
        &self,
        builtin: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let input = Value::Object(arguments.unwrap_or_default());
        let Ok(raw) = serde_json::value::RawValue::from_string(input.to_string()) else {
            return CallToolResult::error(vec![ContentBlock::text("the input cannot be read as JSON")]);
        };
        let skills = match self.skills(&self.session, &ctx) {
            Ok(skills) => skills,
            Err(why) => return CallToolResult::error(vec![ContentBlock::text(why)]),
        };
        match self.shared.executor.call_builtin(builtin, raw, self.caller(&ctx), skills).await {
            protocol::ToolAnswer::Resolve(text) => {
                if builtin != "skills.discover" {
                    let _ = ctx.peer.notify_tool_list_changed().await;
                }
                CallToolResult::success(vec![ContentBlock::text(text.get().to_string())])
            }
            protocol::ToolAnswer::Reject(why) => CallToolResult::error(vec![ContentBlock::text(why)]),
        }
    }
}

/// A tool's name in separate-tools mode ([`separate_name`]), as the client called it.
struct SeparateName<'a> {
    name: &'a str,
    naming: ToolNames,
}

impl SeparateName<'_> {
    fn unknown(&self) -> CallError {
        CallError::NoSuchTool(format!(
            "there is no tool named {}; list the tools again, the plugins may have changed",
            self.name
        ))
    }
}

impl Resolve for SeparateName<'_> {
    /// The same rule as the list: a name longer than MCP allows, or shared by two
    /// tools, names no tool. A name no tool has may belong to an unavailable plugin:
    /// the one it starts with (`<plugin>__` or `<plugin>_`), or the only one.
    fn resolve(&self, catalog: &Catalog) -> Result<(String, Tool), Missing> {
        let name = self.name;
        let mut matching: Vec<(String, Tool)> = catalog
            .plugins()
            .flat_map(|(plugin, tools)| {
                tools
                    .filter(|t| separate_name(catalog, self.naming, plugin, &t.definition.name) == name)
                    .map(move |t| (plugin.to_string(), t.clone()))
            })
            .collect();
        if matching.len() == 1 && name.len() <= MAX_MCP_TOOL_NAME {
            if let Some(found) = matching.pop() {
                return Ok(found);
            }
        }
        if !matching.is_empty() {
            return Err(Missing::Unknown(self.unknown()));
        }
        let unavailable: Vec<&str> = catalog.unavailable_plugins().map(|(p, _)| p).collect();
        let prefix = match self.naming {
            ToolNames::Prefixed => SEPARATOR,
            ToolNames::Own => "_",
        };
        let owner = unavailable
            .iter()
            .find(|p| name.strip_prefix(**p).is_some_and(|rest| rest.starts_with(prefix)))
            .or(match (self.naming, unavailable.as_slice()) {
                (ToolNames::Own, [only]) => Some(only),
                _ => None,
            });
        match owner {
            Some(plugin) => Err(Missing::Unavailable(plugin.to_string())),
            None => Err(Missing::Unknown(self.unknown())),
        }
    }

    fn missing_after_recovery(&self, _plugin: &str) -> CallError {
        self.unknown()
    }
}

impl ServerHandler for CodemodeServer {
    #[allow(deprecated)] // `logging` (see the imports)
    fn get_info(&self) -> InitializeInfo {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_resources()
            .build();
        InitializeInfo::new(capabilities)
            .with_server_info(Implementation::new("codemode", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.shared.instructions.clone())
    }

    /// Every revision up to 2026-07-28: each request is served in the revision it
    /// names (a handshake and a session up to 2025-11-25; `_meta` on each request and
    /// approvals through Multi Round-Trip Requests from 2026-07-28).
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    /// Also decides whether this session receives codemode's log: from the operator's
    /// `client_logs`, and the `Authorization` of the HTTP request (none on stdio).
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let authorization = ctx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get(http::header::AUTHORIZATION))
            .and_then(|value| value.to_str().ok());
        let gets_logs =
            logs::session_gets_logs(&self.shared.client_logs, authorization, self.shared.log_token.as_deref());
        self.session.gets_logs.store(gets_logs, Ordering::Relaxed);
        let agent = request.client_info.name.trim();
        *self.session.agent_id.lock().unwrap_or_else(|p| p.into_inner()) =
            (!agent.is_empty()).then(|| agent.to_string());
        ctx.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    /// `logging/setLevel`: the least severe level this session receives. A session the
    /// operator did not open the log to is told so once.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = match request.level {
            LoggingLevel::Debug => logs::Level::Debug,
            LoggingLevel::Info => logs::Level::Info,
            LoggingLevel::Notice => logs::Level::Notice,
            LoggingLevel::Warning => logs::Level::Warning,
            _ => logs::Level::Error,
        };
        *self.session.log_level.lock().unwrap_or_else(|p| p.into_inner()) = level;
        if !self.session.gets_logs.load(Ordering::Relaxed) {
            let peer = ctx.peer.clone();
            tokio::spawn(async move {
                let note = "this server sends its log only to sessions its operator chose ([server] client_logs)";
                let _ = peer
                    .notify_logging_message(
                        LoggingMessageNotificationParam::new(LoggingLevel::Notice, Value::String(note.into()))
                            .with_logger("codemode"),
                    )
                    .await;
            });
        }
        Ok(())
    }

    /// The client's roots changed: read them again.
    async fn on_roots_list_changed(&self, ctx: NotificationContext<RoleServer>) {
        read_roots(ctx.peer.clone(), Arc::clone(&self.session));
    }

    /// The tools, in pages of at most [`LIST_PAGE_BYTES`] of JSON (one page unless the
    /// list is that large); a page's cursor names the list it belongs to.
    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let listed = self.tools();
        if let Some(own) = self.session_tools(&listed) {
            // Separate-tools mode with skills: the session's own list (the deferred
            // catalog's tools, and the private tools it loaded), in one page.
            let ttl = u64::try_from(codemode_plugin_runtimes::CHANGE_INTERVAL.as_millis()).unwrap_or(u64::MAX);
            return Ok(ListToolsResult::with_all_items(own).with_ttl_ms(ttl).with_cache_scope(CacheScope::Private));
        }
        let cursor = request.and_then(|r| r.cursor);
        let (tools, next) = listed.page(cursor.as_deref()).map_err(|why| ErrorData::invalid_params(why, None))?;
        // 2026-07-28 cache hints: the list is the same for every caller, and a plugin's
        // changes reach it within a second (they are coalesced that often), so a list
        // is never older than that.
        let ttl = u64::try_from(codemode_plugin_runtimes::CHANGE_INTERVAL.as_millis()).unwrap_or(u64::MAX);
        let mut result = ListToolsResult::with_all_items(tools).with_ttl_ms(ttl).with_cache_scope(CacheScope::Public);
        result.next_cursor = next;
        Ok(result)
    }

    /// 2026-07-28 `subscriptions/listen`: tool list changes, the only notification this
    /// server sends.
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|wanted| *wanted);
        Some(accepted)
    }

    /// Tells a 2026-07-28 listener whenever the catalog changes, at most once per
    /// CHANGE_INTERVAL (changes in between are one notification), until it stops
    /// listening.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.executor.watch_catalog();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    let notification = ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default());
                    if context.sink().send(notification).await.is_err() {
                        return Ok(());
                    }
                    tokio::time::sleep(codemode_plugin_runtimes::CHANGE_INTERVAL).await;
                }
            }
        }
    }

    /// The session's artifacts (what its tools kept with `ctx.artifacts`).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = self
            .session
            .artifacts
            .list()
            .into_iter()
            .map(|a| {
                Resource::new(a.uri.clone(), a.path.clone())
                    .with_mime_type(a.mime_type.clone())
                    .with_size(a.bytes.len() as u64)
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    /// One of the session's artifacts, with its media type.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match self.session.artifacts.by_uri(&request.uri) {
            Some(artifact) => Ok(ReadResourceResult::new(vec![resource_contents(&artifact)]).into()),
            None => Err(ErrorData::resource_not_found(
                format!(
                    "this session has no resource {}: codemode serves the artifacts its tools kept in this session (artifact://...), while it lasts",
                    request.uri
                ),
                None,
            )),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let modern = ctx.protocol_version().is_some_and(|v| !v.has_initialize());
        let result = match self.shared.config.mode {
            ServerMode::Code if request.name == EXECUTE && modern => return self.execute_in_rounds(request, ctx).await,
            ServerMode::Code if request.name == EXECUTE => self.execute(request.arguments, ctx).await,
            ServerMode::Code => {
                return Err(ErrorData::invalid_params(
                    format!("there is no tool named {}; the only tool is {EXECUTE}", request.name),
                    None,
                ))
            }
            ServerMode::Tools => self.call_separate(&request.name, request.arguments, ctx).await?,
        };
        Ok(result.into())
    }

    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        if self.session.gets_logs.load(Ordering::Relaxed) {
            forward_logs(ctx.peer.clone(), Arc::clone(&self.session));
        }
        read_roots(ctx.peer.clone(), Arc::clone(&self.session));
        // Tell this client whenever the catalog changes, for as long as it is connected,
        // at most once per CHANGE_INTERVAL (changes in between are one notification).
        // The task ends when the client is gone (checked on every change and every
        // half minute), so ended sessions leave nothing behind.
        let peer = ctx.peer.clone();
        let mut changes = self.shared.executor.watch_catalog();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.changed() => {
                        if changed.is_err() || peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                        tokio::time::sleep(codemode_plugin_runtimes::CHANGE_INTERVAL).await;
                    }
                    () = tokio::time::sleep(std::time::Duration::from_secs(30)) => {
                        if peer.is_transport_closed() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

/// The program's text in `execute`'s arguments.
fn program_text(arguments: Option<&serde_json::Map<String, Value>>) -> Option<&str> {
    arguments.and_then(|a| a.get("code")).and_then(Value::as_str)
}

/// The answer to an `execute` without a program.
fn missing_program() -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(
        "execute takes { \"code\": \"<JavaScript>\" }: the program's text is missing",
    )])
}

/// The most JSON one page of the tools list holds: a list larger than this (thousands
/// of tools with long schemas) comes in pages, so that no answer holds all of it.
pub const LIST_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// A tools list, made once per catalog, cut into pages by size.
///
/// A page's cursor names the list by a digest of its content, so a cursor stays good on
/// every replica serving the same tools, and across restarts, and fails (saying the
/// list changed) once the tools differ.
pub struct PagedTools {
    digest: String,
    tools: Vec<McpTool>,
    /// Where each page starts, in `tools`.
    starts: Vec<usize>,
}

impl PagedTools {
    fn new(tools: Vec<McpTool>) -> Self {
        use sha2::Digest as _;
        let mut starts = vec![0];
        let mut size = 0;
        let mut hasher = sha2::Sha256::new();
        for (i, tool) in tools.iter().enumerate() {
            let json = serde_json::to_vec(tool).unwrap_or_default();
            hasher.update(&json);
            hasher.update(b"\n");
            if size > 0 && size + json.len() > LIST_PAGE_BYTES {
                starts.push(i);
                size = 0;
            }
            size += json.len();
        }
        let digest = hasher.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
        Self { digest, tools, starts }
    }

    /// Every tool, in order.
    pub fn all(&self) -> &[McpTool] {
        &self.tools
    }

    /// The page `cursor` names (the first without one) and the next page's cursor.
    fn page(&self, cursor: Option<&str>) -> Result<(Vec<McpTool>, Option<String>), String> {
        let page = match cursor {
            None => 0,
            Some(cursor) => {
                let (digest, page) = cursor
                    .split_once('.')
                    .and_then(|(d, p)| Some((d, p.parse::<usize>().ok()?)))
                    .ok_or_else(|| format!("{cursor:?} is not a cursor this server gave"))?;
                if digest != self.digest || page >= self.starts.len() {
                    return Err(
                        "the tool list changed since that page was given: list the tools again from the start".into()
                    );
                }
                page
            }
        };
        let end = self.starts.get(page + 1).copied().unwrap_or(self.tools.len());
        let next = (page + 1 < self.starts.len()).then(|| format!("{}.{}", self.digest, page + 1));
        Ok((self.tools[self.starts[page]..end].to_vec(), next))
    }
}

/// The workspace a client's roots name: the first `file://` root, as a path.
///
/// (MCP's roots are deprecated by SEP-2577 for revisions after 2025-11-25, the newest
/// this server negotiates; its clients still offer them.)
#[allow(deprecated)]
pub fn workspace_of(roots: &[rmcp::model::Root]) -> Option<String> {
    roots.iter().find_map(|root| {
        let url = url::Url::parse(&root.uri).ok().filter(|u| u.scheme() == "file")?;
        Some(url.to_file_path().ok()?.display().to_string())
    })
}

/// Asks a client that offers roots for them (in the background), and keeps the
/// session's workspace to the first.
#[allow(deprecated)]
fn read_roots(peer: Peer<RoleServer>, session: Arc<ClientSession>) {
    let offers_roots = peer.peer_info().is_some_and(|info| info.capabilities.roots.is_some());
    if !offers_roots {
        return;
    }
    tokio::spawn(async move {
        match peer.list_roots().await {
            Ok(listed) => {
                *session.workspace.lock().unwrap_or_else(|p| p.into_inner()) = workspace_of(&listed.roots);
            }
            Err(e) => tracing::info!("the client offers roots but listing them failed: {e}"),
        }
    });
}

/// Sends this session codemode's log lines at or above its level, as
/// `notifications/message`, until the client is gone. A session too slow to keep up
/// skips lines (and is told how many).
#[allow(deprecated)]
fn forward_logs(peer: Peer<RoleServer>, session: Arc<ClientSession>) {
    let mut lines = logs::subscribe();
    tokio::spawn(async move {
        loop {
            let line = match lines.recv().await {
                Ok(line) => line,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(skipped)) => logs::LogLine {
                    level: logs::Level::Warning,
                    logger: "codemode".into(),
                    text: format!("{skipped} log lines were skipped: this session read them too slowly"),
                },
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if peer.is_transport_closed() {
                return;
            }
            if line.level < *session.log_level.lock().unwrap_or_else(|p| p.into_inner()) {
                continue;
            }
            let level = match line.level {
                logs::Level::Debug => LoggingLevel::Debug,
                logs::Level::Info => LoggingLevel::Info,
                logs::Level::Notice => LoggingLevel::Notice,
                logs::Level::Warning => LoggingLevel::Warning,
                logs::Level::Error => LoggingLevel::Error,
            };
            let message =
                LoggingMessageNotificationParam::new(level, Value::String(line.text)).with_logger(line.logger);
            if peer.notify_logging_message(message).await.is_err() {
                return;
            }
        }
    });
}

/// The id a request's tool calls are known by (`<request id>:<call number>`, plico's
/// idempotency keys): the client's JSON-RPC id, so that a call is traceable to the
/// request, then `-` and a part unique to this request among all the server's and its
/// replicas' (a random number drawn once per process, and a counter). The JSON-RPC id
/// alone is the client's own choice, and two sessions (or two clients without sessions)
/// send the same ones: plugins serve them all, and must tell their calls apart.
fn request_call_id(ctx: &RequestContext<RoleServer>) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static PROCESS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static REQUESTS: AtomicU64 = AtomicU64::new(0);
    let process = *PROCESS.get_or_init(|| {
        let mut bytes = [0u8; 8];
        match getrandom::fill(&mut bytes) {
            Ok(()) => u64::from_le_bytes(bytes),
            // No entropy (it has not failed here): this process's id and start time,
            // which replicas on other machines may share, rather than no server at all.
            Err(e) => {
                tracing::warn!("no entropy for the request ids' process part ({e}); using the pid and the clock");
                let nanos =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
                (u64::from(std::process::id()) << 32) ^ (nanos as u64)
            }
        }
    });
    let request = REQUESTS.fetch_add(1, Ordering::Relaxed);
    format!("{}-{process:016x}{request:x}", request_id(ctx))
}

/// The request's JSON-RPC id as text.
fn request_id(ctx: &RequestContext<RoleServer>) -> String {
    match serde_json::to_value(&ctx.id) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Whether the request came over HTTP (`codemode serve`), from a remote client, rather
/// than over standard input and output from the process that started codemode.
fn over_http(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.extensions.get::<http::request::Parts>().is_some()
}

/// A JSON value known to be an object, as rmcp's schema type.
fn object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// The MCP tool name of a plugin tool in separate tools mode: its own name (with its
/// plugin's, `<plugin>_<tool>`, only where two plugins share it), or `<plugin>__<tool>`
/// when the configuration asks for prefixed names.
pub fn separate_name(catalog: &Catalog, naming: ToolNames, plugin: &str, tool: &str) -> String {
    match naming {
        ToolNames::Own => catalog.exposed_name(plugin, tool),
        ToolNames::Prefixed => format!("{plugin}{SEPARATOR}{tool}"),
    }
}

/// The longest tool name MCP allows.
const MAX_MCP_TOOL_NAME: usize = 128;

/// Leaves out separate tools whose names cannot work: longer than MCP allows, or equal to
/// another's (plugin `a__b` with tool `c` and plugin `a` with tool `b__c`). Each is logged.
fn usable_separate_tools(tools: Vec<McpTool>) -> Vec<McpTool> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for t in &tools {
        *seen.entry(t.name.to_string()).or_default() += 1;
    }
    tools
        .into_iter()
        .filter(|t| {
            let (name, count) = (t.name.to_string(), seen[t.name.as_ref()]);
            if name.len() > MAX_MCP_TOOL_NAME {
                tracing::warn!("separate tools mode: {name} is longer than {MAX_MCP_TOOL_NAME} characters and is left out; rename the plugin or the tool");
            } else if count > 1 {
                tracing::warn!("separate tools mode: {count} tools are named {name}; all are left out; rename a plugin or a tool");
            }
            name.len() <= MAX_MCP_TOOL_NAME && count == 1
        })
        .collect()
}

/// A plugin tool as an MCP tool of its own.
fn separate_tool(catalog: &Catalog, naming: ToolNames, plugin: &str, tool: &Tool) -> McpTool {
    let d = &tool.definition;
    let mut description = d.description.clone();
    match d.requires_approval {
        Approval::Never => {}
        Approval::Always => description.push_str("\n\nEach call asks a person to approve it first."),
        Approval::OncePerSession => {
            description.push_str("\n\nThe first call of a session asks a person to approve it.")
        }
    }
    let mut t =
        McpTool::new(separate_name(catalog, naming, plugin, &d.name), description, object(d.input_schema.clone()));
    t.title = d.title.clone();
    t.output_schema = d.output_schema.clone().map(|s| Arc::new(object(s)));
    t.annotations =
        d.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok()).and_then(|a| serde_json::from_value(a).ok());
    t
}

/// A plugin tool's result as the MCP result of a separate tool: every content item
/// passed on as it came (text cut at the cap), with its structured content and meta.
fn tool_result(mut result: ToolResult, cap: usize) -> CallToolResult {
    for item in &mut result.content {
        if let Content::Text { text, .. } = item {
            *text = cut_text(text, cap).text;
        }
    }
    serde_json::to_value(&result).and_then(serde_json::from_value::<CallToolResult>).unwrap_or_else(|e| {
        CallToolResult::error(vec![ContentBlock::text(format!(
            "the tool's result could not be passed on ({e}); its text was: {}",
            cut_text(&result.joined_text(), cap).text
        ))])
    })
}

/// A program's outcome as the `execute` result: the value as JSON text (a string as it
/// is), then the console output, each cut at `cap`; a failure is an error result whose
/// text names the reason. The change journal takes what those leave of the cap (at
/// least a quarter of it): its lines, then its `_meta` ([`journal_meta`]).
pub fn program_result(outcome: &Outcome, cap: usize) -> CallToolResult {
    let OutcomeKind::Ok { value } = &outcome.kind else {
        return CallToolResult::error(vec![ContentBlock::text(cut_text(&outcome.agent_text(), cap).text)]);
    };
    let mut content = match value.as_deref().map(serde_json::from_str::<Value>) {
        None => vec![ContentBlock::text("undefined")],
        Some(Ok(Value::String(s))) => vec![ContentBlock::text(cut_text(&s, cap).text)],
        Some(Ok(v)) => match super::media::split(&v, cap) {
            None => vec![ContentBlock::text(cut_json(&v, cap).text)],
            Some(split) => with_media(split, cap),
        },
        Some(Err(_)) => vec![ContentBlock::text(cut_text(value.as_deref().unwrap_or_default(), cap).text)],
    };
    content.extend(outcome.console_text().map(|console| ContentBlock::text(cut_text(&console, cap).text)));
    let mut journal_room = 0;
    if let Some(changes) = outcome.changes_text() {
        let used: usize = content.iter().filter_map(|c| c.as_text()).map(|t| t.text.len()).sum();
        let room = cap.saturating_sub(used).max(cap / 4);
        let lines = cut_text(&changes, room / 2).text;
        journal_room = room - lines.len().min(room);
        content.push(ContentBlock::text(lines));
    }
    content.extend(
        codemode_core::outcome::unawaited_note(&outcome.unawaited_calls)
            .map(|note| ContentBlock::text(cut_text(&note, cap).text)),
    );
    content.extend(outcome.sandbox_warning().map(ContentBlock::text));
    let mut result = CallToolResult::success(content);
    if !outcome.changes.is_empty() || outcome.changes_left_out > 0 {
        let mut meta = result.meta.take().unwrap_or_default();
        let (journal, left_out) = journal_meta(&outcome.changes, journal_room);
        meta.0.insert(codemode_core::outcome::CHANGES_META.to_string(), journal);
        if left_out + outcome.changes_left_out > 0 {
            meta.0.insert(CHANGES_LEFT_OUT_META.to_string(), Value::from(left_out + outcome.changes_left_out));
        }
        result.meta = Some(meta);
    }
    result
}

/// The result `_meta` key saying how many recorded changes the journal there leaves out.
pub const CHANGES_LEFT_OUT_META: &str = "codemode/changesLeftOut";

/// The program's change journal ([`codemode_core::outcome::CHANGES_META`]) for the
/// result's `_meta`, for a client that shows or reverts changes, within `room` bytes of
/// JSON: whole when it fits; otherwise every entry's names without its contents
/// (`contentsLeftOut`), as many as fit; with the number of entries left out.
/// `codemode run --json` lists the journal as the program kept it. Each entry is
/// serialised once.
fn journal_meta(changes: &[codemode_core::outcome::RecordedChange], room: usize) -> (Value, u64) {
    if json_len(&changes) <= room {
        return (serde_json::to_value(changes).unwrap_or_default(), 0);
    }
    let mut kept = Vec::new();
    let mut used = 2; // []
    for change in changes {
        let names = codemode_core::outcome::RecordedChange {
            call: change.call.clone(),
            file: change.file.clone(),
            op: change.op.clone(),
            old_content: None,
            new_content: None,
            contents_left_out: true,
        };
        let Ok(entry) = serde_json::to_value(names) else { continue };
        let size = json_len(&entry) + 1;
        if used + size > room {
            break;
        }
        used += size;
        kept.push(entry);
    }
    let left_out = (changes.len() - kept.len()) as u64;
    (Value::Array(kept), left_out)
}

/// The length of `value`'s compact JSON text, without writing it anywhere.
fn json_len(value: &impl serde::Serialize) -> usize {
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
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// A returned value holding images or audio: its text (the content list's text items,
/// or the value with placeholders) within what the attachments leave of the cap, then
/// the attachments as MCP content.
fn with_media(split: super::media::Split, cap: usize) -> Vec<ContentBlock> {
    use super::media::MediaKind;
    let mut room = cap.saturating_sub(super::media::attached_bytes(&split));
    let mut content: Vec<ContentBlock> = match &split.content_texts {
        // The text items share the room, in order; what no longer fits is named.
        Some(texts) => {
            let mut blocks = Vec::new();
            for (i, text) in texts.iter().enumerate() {
                // Every block costs its overhead, an empty one too.
                if room < super::cut::MIN_CAP + super::media::ITEM_OVERHEAD {
                    blocks.push(ContentBlock::text(format!(
                        "…[{} more text items cut: output cap is {cap} bytes]",
                        texts.len() - i
                    )));
                    break;
                }
                let kept = cut_text(text, room - super::media::ITEM_OVERHEAD).text;
                room = room.saturating_sub(kept.len() + super::media::ITEM_OVERHEAD);
                blocks.push(ContentBlock::text(kept));
            }
            blocks
        }
        None => vec![ContentBlock::text(cut_json(&split.value, room).text)],
    };
    // A content list's text items do not carry placeholders: media left out say so here.
    if split.content_texts.is_some() && !split.left_out.is_empty() {
        content.push(ContentBlock::text(cut_text(&split.left_out.join("\n"), room.max(super::cut::MIN_CAP)).text));
    }
    content.extend(split.attached.into_iter().map(|m| match m.kind {
        MediaKind::Image => ContentBlock::image(m.data, m.mime_type),
        MediaKind::Audio => ContentBlock::audio(m.data, m.mime_type),
    }));
    content
}

/// Approvals before and progress after each tool call of one request.
struct Hooks {
    asker: Asker,
    session: Arc<ClientSession>,
    /// Progress notifications, in order, to the one task that sends them (when the
    /// client asked for progress).
    progress: Option<tokio::sync::mpsc::UnboundedSender<ProgressNotificationParam>>,
    progress_token: Option<ProgressToken>,
    finished: AtomicU64,
    /// Progress lines the tools sent so far ([`MAX_STATUS_LINES`]).
    statuses: AtomicU64,
    /// The request's sampling questions waiting for the client's model.
    sampling: super::sampling::Waiting,
}

impl Hooks {
    /// Hooks for one request. With a progress token, a task sends the notifications in
    /// the order the calls finished; it ends once the hooks are dropped and it has sent
    /// them all, which the returned handle waits for.
    fn new(
        asker: Asker,
        peer: Peer<RoleServer>,
        progress_token: Option<ProgressToken>,
        session: Arc<ClientSession>,
    ) -> (Self, Option<tokio::task::JoinHandle<()>>) {
        let (progress, sent) = match &progress_token {
            None => (None, None),
            Some(_) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressNotificationParam>();
                let peer = peer.clone();
                let sent = tokio::spawn(async move {
                    while let Some(note) = rx.recv().await {
                        if peer.notify_progress(note).await.is_err() {
                            return;
                        }
                    }
                });
                (Some(tx), Some(sent))
            }
        };
        let sampling =
            super::sampling::Waiting { program: Default::default(), session: Arc::clone(&session.sampling_waiting) };
        let hooks = Self {
            asker,
            session,
            progress,
            progress_token,
            finished: AtomicU64::new(0),
            statuses: AtomicU64::new(0),
            sampling,
        };
        (hooks, sent)
    }
}

impl CallHooks for Hooks {
    fn ask_to_run(&self, request: RunRequest) -> BoxFuture<'static, Result<(), String>> {
        let RunRequest { plugin, tool, input, reason, .. } = request;
        Box::pin(Approvals::ask_to_run(self.asker.clone(), plugin, tool, input, reason))
    }

    fn approved_once(&self) -> &ApprovedOnce {
        &self.session.approved_once
    }

    fn after(&self, plugin: &str, tool: &str, ok: bool) {
        self.notify(format!("tools.{plugin}.{tool} {}", if ok { "answered" } else { "failed" }));
    }

    /// A plugin's model calls go to this client's model (MCP sampling).
    fn sampler(&self) -> Option<Arc<dyn codemode_core::tool::Sampler>> {
        Some(Arc::new(super::sampling::ClientSampler::new(self.asker.clone(), self.sampling.clone())))
    }

    fn artifacts(&self) -> Option<Arc<Artifacts>> {
        Some(Arc::clone(&self.session.artifacts))
    }
}

/// How artifacts travel with a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArtifactsAs {
    /// `resource_link`s the client reads with `resources/read` in its session.
    Links,
    /// Embedded resources, their content in the result, while the result stays within
    /// `cap` bytes; the rest are named in a line of text as left out.
    Embedded {
        /// The answer's cap (`output_bytes`).
        cap: usize,
    },
}

/// `result` with the artifacts written after `mark` added to its content.
fn with_artifacts(mut result: CallToolResult, artifacts: &Artifacts, mark: u64, how: ArtifactsAs) -> CallToolResult {
    let mut used: usize = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.len()).sum();
    let mut left_out = Vec::new();
    for artifact in artifacts.written_since(mark) {
        match how {
            ArtifactsAs::Links => result.content.push(ContentBlock::resource_link(
                Resource::new(artifact.uri.clone(), artifact.path.clone())
                    .with_mime_type(artifact.mime_type.clone())
                    .with_size(artifact.bytes.len() as u64),
            )),
            ArtifactsAs::Embedded { cap } => {
                let size = if artifact.is_text { artifact.bytes.len() } else { artifact.bytes.len().div_ceil(3) * 4 };
                if used + size > cap {
                    left_out.push(format!(
                        "{} ({}, {})",
                        artifact.path,
                        artifact.mime_type,
                        codemode_core::limits::human_bytes(artifact.bytes.len() as u64)
                    ));
                    continue;
                }
                used += size;
                result.content.push(ContentBlock::resource(resource_contents(&artifact)));
            }
        }
    }
    if let (false, ArtifactsAs::Embedded { cap }) = (left_out.is_empty(), how) {
        result.content.push(ContentBlock::text(cut_text(&format!(
            "[{} artifacts were left out of this answer: {}. Embedded artifacts count against the answer's cap of {} (`[server] output_bytes`), and a 2026-07-28 request keeps no session to read them from later: write smaller artifacts, or return less]",
            left_out.len(),
            left_out.join(", "),
            codemode_core::limits::human_bytes(cap as u64)
        ), cap / 4).text));
    }
    result
}

/// An artifact's content as MCP resource contents: text when it was written as text,
/// base64 otherwise.
fn resource_contents(artifact: &Artifact) -> ResourceContents {
    use base64::Engine as _;
    if artifact.is_text {
        ResourceContents::text(String::from_utf8_lossy(&artifact.bytes), artifact.uri.clone())
            .with_mime_type(artifact.mime_type.clone())
    } else {
        ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(&artifact.bytes), artifact.uri.clone())
            .with_mime_type(artifact.mime_type.clone())
    }
}

impl Hooks {
    /// Sends one progress notification for the request (when it asked for progress).
    /// Its value counts the notifications, so it grows with every one as MCP requires;
    /// the message says which call and what happened.
    fn notify(&self, message: String) {
        let (Some(progress), Some(token)) = (&self.progress, &self.progress_token) else { return };
        let sent = self.finished.fetch_add(1, Ordering::Relaxed) + 1;
        let _ = progress.send(ProgressNotificationParam::new(token.clone(), sent as f64).with_message(message));
    }
}

impl ProgressSink for Hooks {
    /// A tool's own progress reaches the agent as the execute request's progress.
    fn progress(&self, report: CallProgress) {
        let of = report.total.map(|t| format!(" of {t}")).unwrap_or_default();
        let says = report.message.map(|m| format!(": {m}")).unwrap_or_default();
        self.notify(format!("tools.{}.{} at {}{of}{says}", report.plugin, report.tool, report.progress));
    }

    /// What a call says it is doing reaches the agent the same way:
    /// `tools.<plugin>.<tool>: <message> <details as JSON>`, cut to [`MAX_STATUS_CHARS`].
    fn status(&self, status: CallStatus) {
        let sent = self.statuses.fetch_add(1, Ordering::Relaxed) + 1;
        if sent > MAX_STATUS_LINES {
            if sent == MAX_STATUS_LINES + 1 {
                self.notify(format!("tools send no more progress lines in this request: {MAX_STATUS_LINES} were sent"));
            }
            return;
        }
        let details = status.details.map(|d| format!(" {d}")).unwrap_or_default();
        let line = format!("tools.{}.{}: {}{details}", status.plugin, status.tool, status.message);
        self.notify(line.chars().take(MAX_STATUS_CHARS).collect());
    }

    /// Shown when the client gave the request a progress token.
    fn shown(&self) -> bool {
        self.progress.is_some() && self.progress_token.is_some()
    }
}

impl Approver for Hooks {
    fn ask(&self, question: ApprovalQuestion) -> BoxFuture<'static, ApprovalAnswer> {
        Box::pin(Approvals::ask_for_plugin(self.asker.clone(), question))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn big_tools(count: usize, description: &str) -> Vec<McpTool> {
        (0..count)
            .map(|i| {
                let text = format!("{description} {i} {}", "x".repeat(300 * 1024));
                McpTool::new(format!("tool_{i}"), text, object(json!({ "type": "object" })))
            })
            .collect()
    }

    fn walk(listed: &PagedTools, mut cursor: Option<String>) -> Result<usize, String> {
        let mut tools = 0;
        loop {
            let (page, next) = listed.page(cursor.as_deref())?;
            tools += page.len();
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
    }

    /// Pages of a large list: every tool once; a cursor from another list of the same
    /// tools (another request, replica or restart) is good; a cursor from a list that
    /// changed, or one never given, is refused with a reason.
    #[test]
    fn pages_of_a_list_are_named_by_its_tools() {
        let first = PagedTools::new(big_tools(20, "alpha"));
        let (page, next) = first.page(None).unwrap();
        let next = next.expect("20 tools of 300 KiB need more than one page");
        assert!(page.len() < 20);
        assert_eq!(walk(&first, None).unwrap(), 20);
        let same = PagedTools::new(big_tools(20, "alpha"));
        assert_eq!(walk(&same, Some(next.clone())).unwrap() + page.len(), 20);
        let changed = PagedTools::new(big_tools(20, "beta"));
        let refused = changed.page(Some(&next)).unwrap_err();
        assert!(refused.contains("the tool list changed"), "{refused}");
        let garbage = changed.page(Some("nonsense")).unwrap_err();
        assert!(garbage.contains("is not a cursor this server gave"), "{garbage}");
    }

    fn outcome(kind: OutcomeKind, console: &str) -> Outcome {
        Outcome {
            kind,
            console: console.into(),
            console_dropped_bytes: 0,
            tool_calls: 0,
            elapsed: Duration::ZERO,
            sandbox_missing: Vec::new(),
            unawaited_calls: Vec::new(),
            phases: None,
            changes: Vec::new(),
            changes_left_out: 0,
        }
    }

    fn texts(result: &CallToolResult) -> Vec<String> {
        result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
    }

    #[test]
    fn the_change_journal_is_a_line_per_change_and_whole_in_meta_within_the_cap() {
        let mut done = outcome(OutcomeKind::Ok { value: Some("\"ok\"".into()) }, "");
        done.changes = vec![codemode_core::outcome::RecordedChange {
            call: "tools.notes.write".into(),
            file: "a.md".into(),
            op: "create".into(),
            old_content: None,
            new_content: Some("x".repeat(200)),
            contents_left_out: false,
        }];
        let r = program_result(&done, 1024);
        assert_eq!(texts(&r), ["ok", "Changes recorded by tools (1):\n- create a.md (tools.notes.write)"]);
        let meta = r.meta.clone().unwrap_or_default();
        assert_eq!(meta.0["codemode/changes"][0]["newContent"], serde_json::json!("x".repeat(200)));
        // Over the cap, the contents are left out of `_meta`.
        let r = program_result(&done, 320);
        let meta = r.meta.clone().unwrap_or_default();
        assert_eq!(
            meta.0["codemode/changes"],
            serde_json::json!([{ "call": "tools.notes.write", "file": "a.md", "op": "create", "oldContent": null, "newContent": null, "contentsLeftOut": true }])
        );
        assert!(!meta.0.contains_key(CHANGES_LEFT_OUT_META));
        assert!(program_result(&outcome(OutcomeKind::Ok { value: None }, ""), 1024).meta.is_none());
    }

    #[test]
    fn a_journal_of_long_names_stays_within_the_cap() {
        let mut done = outcome(OutcomeKind::Ok { value: Some("\"ok\"".into()) }, "");
        let change = codemode_core::outcome::RecordedChange {
            call: "tools.notes.write".into(),
            file: "n".repeat(100_000),
            op: "modify".into(),
            old_content: Some("old".into()),
            new_content: Some("new".into()),
            contents_left_out: false,
        };
        done.changes = vec![change; 200];
        done.changes_left_out = 3;
        let cap = 64 * 1024;
        let r = program_result(&done, cap);
        let size = serde_json::to_string(&r).map(|t| t.len()).unwrap_or(usize::MAX);
        assert!(size <= cap + 512, "the answer is {size} bytes against a cap of {cap}");
        assert!(texts(&r)[1].starts_with("Changes recorded by tools (203):\n- modify nnn"));
        let meta = r.meta.clone().unwrap_or_default();
        assert_eq!(meta.0["codemode/changes"], serde_json::json!([]), "no entry's names fit");
        assert_eq!(meta.0[CHANGES_LEFT_OUT_META], 203);
    }

    #[test]
    fn a_value_then_the_console_and_strings_as_they_are() {
        let r = program_result(&outcome(OutcomeKind::Ok { value: Some("{\"a\":[1,2]}".into()) }, "one\ntwo\n"), 1024);
        assert_eq!(r.is_error, Some(false));
        assert_eq!(texts(&r), ["{\"a\":[1,2]}", "Console output:\none\ntwo"]);
        assert_eq!(
            texts(&program_result(&outcome(OutcomeKind::Ok { value: Some("\"hi\\nthere\"".into()) }, ""), 1024)),
            ["hi\nthere"]
        );
        assert_eq!(texts(&program_result(&outcome(OutcomeKind::Ok { value: None }, ""), 1024)), ["undefined"]);
    }

    #[test]
    fn failures_are_error_results_naming_the_reason() {
        let r = program_result(&outcome(OutcomeKind::CpuLimit { limit_ms: 500 }, ""), 1024);
        assert_eq!(r.is_error, Some(true));
        assert!(
            texts(&r)[0].starts_with("CPU limit: the program ran JavaScript for more than 500 ms"),
            "{:?}",
            texts(&r)
        );
    }

    #[test]
    fn large_values_are_cut_to_valid_json_under_the_cap() {
        let big: Vec<u32> = (0..5000).collect();
        let r =
            program_result(&outcome(OutcomeKind::Ok { value: Some(serde_json::to_string(&big).unwrap()) }, ""), 512);
        let text = &texts(&r)[0];
        assert!(text.len() <= 512, "{}", text.len());
        assert!(serde_json::from_str::<Value>(text).is_ok(), "{text}");
        assert!(text.contains("output cap is 512 bytes"), "{text}");
    }

    #[test]
    fn a_content_list_of_many_text_items_stays_within_the_cap() {
        // 150,000 empty text items and one image: every block costs its overhead.
        let mut items = vec![serde_json::json!({ "type": "text", "text": "" }); 150_000];
        items.push(serde_json::json!({ "type": "image", "data": "QUJD", "mimeType": "image/png" }));
        let value = serde_json::to_string(&items).unwrap();
        let r = program_result(&outcome(OutcomeKind::Ok { value: Some(value) }, ""), 64 * 1024);
        let size: usize = r.content.iter().map(|c| serde_json::to_string(c).unwrap().len()).sum();
        assert!(size <= 2 * 64 * 1024, "{size} bytes in {} blocks", r.content.len());
        assert!(
            texts(&r).iter().any(|t| t.contains("more text items cut: output cap is 65536 bytes")),
            "{:?}",
            texts(&r).last()
        );
    }

    fn names_catalog(pairs: &[(&str, &str)]) -> Catalog {
        let mut catalog = Catalog::new();
        for (plugin, tool) in pairs {
            let definition = codemode_core::tool::ToolDefinition::new(*tool, "d", protocol::mcp::empty_object_schema());
            catalog.add(plugin, Tool::from_fn(definition, |_, _| async { ToolResult::text("x") })).unwrap();
        }
        catalog
    }

    #[test]
    #[allow(deprecated)]
    fn the_workspace_is_the_first_file_root() {
        let roots =
            [rmcp::model::Root::new("https://example.com/x"), rmcp::model::Root::new("file:///home/ann/my%20project")];
        assert_eq!(workspace_of(&roots).as_deref(), Some("/home/ann/my project"));
        assert_eq!(workspace_of(&roots[..1]), None);
        assert_eq!(workspace_of(&[]), None);
    }

    #[test]
    fn separate_tools_keep_their_own_names_unless_two_plugins_share_one() {
        let catalog = names_catalog(&[("sqlite-notes", "add-note"), ("a", "search"), ("b", "search")]);
        assert_eq!(separate_name(&catalog, ToolNames::Own, "sqlite-notes", "add-note"), "add-note");
        assert_eq!(separate_name(&catalog, ToolNames::Own, "a", "search"), "a_search");
        assert_eq!(separate_name(&catalog, ToolNames::Prefixed, "sqlite-notes", "add-note"), "sqlite-notes__add-note");
    }

    #[test]
    fn separate_names_that_collide_or_run_long_are_left_out() {
        let tool = |name: String| McpTool::new(name, "d", serde_json::Map::new());
        let long = "p".repeat(64) + SEPARATOR + &"t".repeat(64);
        let catalog = names_catalog(&[("a__b", "c"), ("a", "b__c"), ("a", "d")]);
        let name = |plugin: &str, t: &str| separate_name(&catalog, ToolNames::Prefixed, plugin, t);
        let kept = usable_separate_tools(vec![
            tool(name("a__b", "c")),
            tool(name("a", "b__c")),
            tool(name("a", "d")),
            tool(long),
        ]);
        assert_eq!(kept.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(), ["a__d"]);
    }
}
