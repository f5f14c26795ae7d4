//! Seed 001's skills and agents as they travel from a plugin's files to the host: what
//! `sandbox-worker detect` reads (`plugin-format`'s `skills.rs`) and reports in a
//! plugin's layout, what the host's catalog keeps beside the tools
//! (`codemode_core::tool::Catalog`), and what `tools.$skills.load` answers with.
//!
//! A skill is a folder with a `SKILL.md` (front matter `name` and `description`, then
//! the instructions), optionally with tools private to it (`tools/<name>/index.ts`); an
//! agent is `agents/<name>/` with `agent.json`, `system.md`, `boundaries.md` and
//! `conventions.md`, optionally with tools and skills of its own. A tool private to a
//! skill or an agent carries its owner's folder in its definition
//! ([`crate::mcp::Tool::owner`]), which is how the host knows it stays undeclared until
//! that owner is loaded or selected.

use serde::{Deserialize, Serialize};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// A plugin's main agent: instructions for every session of the plugin.
pub const MAIN_AGENT_FILE: &str = "AGENTS.md";
/// The files every sub-agent folder has (seed 001), in the order their text is joined.
pub const AGENT_FILES: [&str; 3] = ["system.md", "boundaries.md", "conventions.md"];
/// A sub-agent's manifest.
pub const AGENT_MANIFEST: &str = "agent.json";

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skill {
    /// Its name (the front matter's `name`, or its folder's name).
    pub name: String,
    /// What it is for and when to load it (the front matter's `description`).
    pub description: String,
    /// The body of `SKILL.md` after the front matter: what loading it returns.
    pub instructions: String,
    /// Its folder inside the plugin (`skills/short-url`, `agents/reviewer/skills/review`):
    /// the owner its private tools name.
    pub folder: String,
    /// The agent it belongs to (`agents/<agent>/skills/...`): it is offered only to a
    /// session that selected that agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// One sub-agent (`agents/<name>/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// Its folder's name.
    pub name: String,
    /// What it is for (`agent.json`'s `description`, or the first line of `system.md`).
    pub description: String,
    /// `system.md`, `boundaries.md` and `conventions.md`, each under its heading: the
    /// instructions a session that selects it receives.
    pub instructions: String,
    /// Its folder inside the plugin (`agents/reviewer`): the owner its private tools name.
    pub folder: String,
    /// The public tools `agent.json`'s `tools` asks for (informative: public tools are
    /// offered to every session).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

/// A plugin's skills, agents and main-agent instructions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guidance {
    /// Its skills, root ones and agents' ones, in folder order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<Skill>,
    /// Its sub-agents, in folder order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<Agent>,
    /// `AGENTS.md`: the plugin's main agent, instructions for every session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_agent: Option<String>,
}

impl Guidance {
    /// True when the plugin has no skill, no agent and no `AGENTS.md`.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty() && self.agents.is_empty() && self.main_agent.is_none()
    }
}

/// The agent that owns `folder` (`agents/<agent>/...`), if an agent does.
pub fn agent_of(folder: &str) -> Option<&str> {
    folder.strip_prefix("agents/").map(|rest| rest.split('/').next().unwrap_or(rest))
}

/// What an owner folder is, for messages: `skill short-url`, `agent reviewer`, `skill
/// review of agent reviewer`.
pub fn describe_owner(folder: &str) -> String {
    let parts: Vec<&str> = folder.split('/').collect();
    match parts.as_slice() {
        ["skills", skill] => format!("skill {skill}"),
        ["agents", agent] => format!("agent {agent}"),
        ["agents", agent, "skills", skill] => format!("skill {skill} of agent {agent}"),
        _ => folder.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_named_by_their_folders() {
        assert_eq!(describe_owner("skills/short-url"), "skill short-url");
        assert_eq!(describe_owner("agents/reviewer"), "agent reviewer");
        assert_eq!(describe_owner("agents/reviewer/skills/review"), "skill review of agent reviewer");
        assert_eq!(agent_of("agents/reviewer/skills/review"), Some("reviewer"));
        assert_eq!(agent_of("skills/short-url"), None);
    }
}
