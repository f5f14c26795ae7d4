//! Skills, agents and what one session has loaded: seed 001's deferred catalog in
//! code mode.
//!
//! Where it sits in the flow:
//! 1. the plugin host puts each plugin's skills and agents ([`Guidance`], read from its
//!    files by `plugin-format`) into the [`super::Catalog`] beside its tools, and
//!    `[[skills]]` folders as standalone skills; a tool private to a skill or an agent
//!    is in the catalog like any tool, with its owner's folder
//!    ([`super::ToolDefinition::owner`]);
//! 2. a front end gives every program of one session the same [`SkillSession`] (an MCP
//!    session, or one program for `codemode run`): what it loaded, in the order it
//!    last used it, and the agents it selected;
//! 3. `dispatch::call` asks [`SkillSession::access`] before it runs a tool: a private
//!    tool runs only once its skill was loaded (or it was loaded by name) or its agent
//!    selected, and every other step (checks, approval, limits) is the same;
//! 4. the built-ins `tools.$skills.load`, `tools.$skills.loadTool` and
//!    `tools.$skills.discover` (`dispatch/builtin.rs`) load into it; past
//!    [`LoadSettings::max_loaded`] tools the least recently used is unloaded.

use std::collections::VecDeque;
use std::sync::Mutex;

pub use protocol::skills::{agent_of, describe_owner, Agent, Guidance, Skill};

/// The agents the plugins' guidance defines, each as `plugin/name`, sorted.
pub fn agent_names<'a>(guidance: impl IntoIterator<Item = (&'a str, &'a Guidance)>) -> Vec<String> {
    let mut known: Vec<String> = guidance
        .into_iter()
        .flat_map(|(plugin, g)| g.agents.iter().map(move |a| format!("{plugin}/{}", a.name)))
        .collect();
    known.sort();
    known
}

/// Whether `name` (`plugin/name`, or a bare name) names the agent `qualified`
/// (`plugin/name`): the one rule by which configuration, clients and sessions name
/// agents.
pub fn names_agent(qualified: &str, name: &str) -> bool {
    name == qualified || qualified.rsplit_once('/').is_some_and(|(_, bare)| bare == name)
}

use super::Tool;
use crate::typescript::access_path;

/// Tools one session may have loaded at once, unless configured (seed 001's
/// `maxLoadedPerSession`).
pub const DEFAULT_MAX_LOADED: usize = 12;
/// Results `tools.$skills.discover` returns unless asked for another number (seed
/// 001's `discoverTopK`).
pub const DEFAULT_DISCOVER_TOP_K: usize = 5;

/// How a session loads: configuration (`[server]`), the same for every session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSettings {
    /// The most tools loaded at once; loading more unloads the least recently used.
    pub max_loaded: usize,
    /// Private tools every session may call without loading them (`plugin.tool`, or a
    /// tool name alone for that tool of any plugin): seed 001's `alwaysLoadedTools`.
    pub always_loaded: Vec<String>,
    /// Agents every session has selected (`agent`, or `plugin/agent`).
    pub agents: Vec<String>,
}

impl Default for LoadSettings {
    fn default() -> Self {
        Self { max_loaded: DEFAULT_MAX_LOADED, always_loaded: Vec::new(), agents: Vec::new() }
    }
}

/// Whether a session may call a tool now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// It may.
    Open,
    /// It may not yet: the message says whose tool it is and how to unlock it.
    Locked(String),
}

/// What one session has loaded and selected.
#[derive(Debug, Default)]
pub struct SkillSession {
    settings: LoadSettings,
    state: Mutex<Loaded>,
}

/// The mutable part of a [`SkillSession`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Loaded {
    /// Loaded tools (`plugin`, `tool`), the least recently used first.
    tools: VecDeque<(String, String)>,
    /// Agents selected for this session alone (a client's `_meta`), as in
    /// [`LoadSettings::agents`].
    agents: Vec<String>,
}

/// A skill or a tool loaded by one call, and the tools that call unloaded.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadReport {
    /// The tools now loaded by this call (`plugin`, `tool`).
    pub loaded: Vec<(String, String)>,
    /// The tools unloaded to make room (`plugin`, `tool`), the least recently used first.
    pub unloaded: Vec<(String, String)>,
}

impl SkillSession {
    /// A session loading as `settings` say.
    pub fn new(settings: LoadSettings) -> Self {
        Self { settings, state: Mutex::default() }
    }

    /// Its settings.
    pub fn settings(&self) -> &LoadSettings {
        &self.settings
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Selects `agent` (`agent` or `plugin/agent`) for the rest of the session.
    pub fn select_agent(&self, agent: &str) {
        let mut state = self.state();
        if !state.agents.iter().any(|a| a == agent) {
            state.agents.push(agent.to_string());
        }
    }

    /// Whether the session selected `plugin`'s `agent`.
    pub fn selected(&self, plugin: &str, agent: &str) -> bool {
        let qualified = format!("{plugin}/{agent}");
        let matches = |a: &String| names_agent(&qualified, a);
        self.settings.agents.iter().any(matches) || self.state().agents.iter().any(matches)
    }

    /// Whether `plugin`'s `skill` is offered to this session (a skill of an agent only
    /// once that agent is selected).
    pub fn offers(&self, plugin: &str, skill: &Skill) -> bool {
        skill.agent.as_deref().is_none_or(|agent| self.selected(plugin, agent))
    }

    /// Whether the session loaded `plugin`'s `tool` (or it is always loaded).
    pub fn is_loaded(&self, plugin: &str, tool: &str) -> bool {
        let qualified = format!("{plugin}.{tool}");
        self.settings.always_loaded.iter().any(|t| *t == qualified || t == tool)
            || self.state().tools.iter().any(|(p, t)| p == plugin && t == tool)
    }

    /// The loaded tools, the least recently used first.
    pub fn loaded(&self) -> Vec<(String, String)> {
        self.state().tools.iter().cloned().collect()
    }

    /// Whether the session may call `plugin`'s `tool` now: a public tool always; a
    /// tool private to an agent once the agent is selected; a tool private to a skill
    /// once it is loaded (and, for an agent's skill, the agent selected).
    pub fn access(&self, plugin: &str, tool: &Tool) -> Access {
        let Some(owner) = tool.definition.owner.as_deref() else { return Access::Open };
        let call = format!("tools{}{}", access_path(plugin), access_path(&tool.definition.name));
        if let Some(agent) = agent_of(owner) {
            if !self.selected(plugin, agent) {
                return Access::Locked(format!(
                    "{call} is private to agent {agent} of plugin {plugin}, which this session has not selected: select it with `[server] agent = \"{agent}\"`, `--agent {agent}` or the request's `_meta` \"codemode/agent\""
                ));
            }
            if !owner.contains("/skills/") {
                return Access::Open;
            }
        }
        if self.is_loaded(plugin, &tool.definition.name) {
            return Access::Open;
        }
        let skill = owner.rsplit('/').next().unwrap_or(owner);
        Access::Locked(format!(
            "{call} is private to {} of plugin {plugin}, which this session has not loaded (or has unloaded to make room): load it first with `await tools.$skills.load({skill:?})`",
            describe_owner(owner)
        ))
    }

    /// Whether the session's program is shown `plugin`'s `tool` (declared, listed,
    /// found by `tools.$search`): not hidden, and callable now.
    pub fn shows(&self, plugin: &str, tool: &Tool) -> bool {
        !tool.definition.hidden && self.access(plugin, tool) == Access::Open
    }

    /// Marks `plugin`'s `tool` as just used, when it is loaded (a public tool is not
    /// tracked): the least recently used is the one unloaded first.
    pub fn touch(&self, plugin: &str, tool: &str) {
        let mut state = self.state();
        if let Some(at) = state.tools.iter().position(|(p, t)| p == plugin && t == tool) {
            if let Some(entry) = state.tools.remove(at) {
                state.tools.push_back(entry);
            }
        }
    }

    /// Loads `tools` (`plugin`, `tool`) as the most recently used, then unloads the
    /// least recently used past [`LoadSettings::max_loaded`].
    pub fn load(&self, tools: &[(String, String)]) -> LoadReport {
        let mut state = self.state();
        for tool in tools {
            state.tools.retain(|t| t != tool);
            state.tools.push_back(tool.clone());
        }
        let mut unloaded = Vec::new();
        while state.tools.len() > self.settings.max_loaded {
            if let Some(oldest) = state.tools.pop_front() {
                unloaded.push(oldest);
            }
        }
        let loaded = tools.iter().filter(|t| state.tools.contains(t)).cloned().collect();
        LoadReport { loaded, unloaded }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tool::{ToolDefinition, ToolResult};
    use serde_json::json;

    fn tool(name: &str, owner: Option<&str>) -> Tool {
        let definition =
            ToolDefinition { owner: owner.map(str::to_string), ..ToolDefinition::new(name, "d", json!({})) };
        Tool::from_fn(definition, |_, _| async { ToolResult::text("x") })
    }

    fn pair(plugin: &str, tool: &str) -> (String, String) {
        (plugin.to_string(), tool.to_string())
    }

    #[test]
    fn a_private_tool_opens_once_its_owner_is_loaded_or_selected() {
        let session = SkillSession::default();
        assert_eq!(session.access("p", &tool("echo", None)), Access::Open);
        let normalize = tool("short-url__normalize", Some("skills/short-url"));
        assert_eq!(
            session.access("p", &normalize),
            Access::Locked("tools.p.short_url__normalize is private to skill short-url of plugin p, which this session has not loaded (or has unloaded to make room): load it first with `await tools.$skills.load(\"short-url\")`".into())
        );
        session.load(&[pair("p", "short-url__normalize")]);
        assert_eq!(session.access("p", &normalize), Access::Open);
        let check = tool("reviewer__check-result", Some("agents/reviewer"));
        assert!(
            matches!(session.access("p", &check), Access::Locked(why) if why.starts_with("tools.p.reviewer__check_result is private to agent reviewer of plugin p, which this session has not selected"))
        );
        session.select_agent("reviewer");
        assert_eq!(session.access("p", &check), Access::Open);
        // An agent's skill needs both.
        let review = tool("reviewer__review__check-result", Some("agents/reviewer/skills/review"));
        assert!(
            matches!(session.access("p", &review), Access::Locked(why) if why.contains("skill review of agent reviewer"))
        );
        let other = SkillSession::default();
        assert!(matches!(other.access("p", &normalize), Access::Locked(_)), "sessions share nothing");
    }

    #[test]
    fn past_the_maximum_the_least_recently_used_is_unloaded() {
        let session = SkillSession::new(LoadSettings { max_loaded: 2, ..LoadSettings::default() });
        session.load(&[pair("p", "a"), pair("p", "b")]);
        session.touch("p", "a");
        let report = session.load(&[pair("p", "c")]);
        assert_eq!(report, LoadReport { loaded: vec![pair("p", "c")], unloaded: vec![pair("p", "b")] });
        assert_eq!(session.loaded(), [pair("p", "a"), pair("p", "c")]);
        let always = SkillSession::new(LoadSettings { always_loaded: vec!["p.x".into()], ..LoadSettings::default() });
        assert!(always.is_loaded("p", "x") && !always.is_loaded("q", "y"));
    }
}
