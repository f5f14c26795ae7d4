//! The built-ins of seed 001's deferred catalog (registered in
//! [`super::builtin::Builtins::default`], answered like `tools.$search`), each on the
//! calling session's [`SkillSession`]:
//!
//! - `tools.$skills.load(name)`: a skill's `SKILL.md` text and the TypeScript
//!   declarations of the tools it unlocks, which the session may call from then on (in
//!   the same program and later ones): `{ skill, plugin, instructions, declarations,
//!   tools, unloaded }`;
//! - `tools.$skills.loadTool(name)` (`"plugin.tool"`, or a tool name one plugin has):
//!   one tool's declaration, and a private tool loaded: `{ call, declaration, unloaded }`;
//! - `tools.$skills.discover(query, { plugin, topK })`: tools and skills ranked together
//!   by the catalog's search index (words, and meaning once the search model embedded
//!   them), `topK` (default [`DEFAULT_DISCOVER_TOP_K`]) of what this session may load.
//!
//! Loading past the session's maximum unloads the least recently used tools; `unloaded`
//! names them.

use serde::Deserialize;
use serde_json::{json, Value};

use protocol::ToolAnswer;

use super::builtin::{answer_json, query_too_large, search_ranker, Builtin, BuiltinEnv};
use crate::tool::search::{SKILL_PREFIX, STANDALONE_PLUGIN};
use crate::tool::skills::{Access, Skill, DEFAULT_DISCOVER_TOP_K};
use crate::tool::{Catalog, Tool};
use crate::typescript::{access_path, tool_declaration};

/// The most results one discover returns.
const MAX_TOP_K: usize = 50;

/// `tools.$skills.load`.
pub(super) struct Load;
/// `tools.$skills.loadTool`.
pub(super) struct LoadTool;
/// `tools.$skills.discover`.
pub(super) struct Discover;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameInput {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DiscoverInput {
    query: String,
    plugin: Option<String>,
    #[serde(rename = "topK")]
    top_k: Option<usize>,
}

/// How a program calls `load`.
const LOAD_USAGE: &str = "call it as tools.$skills.load(\"skill name\")";
/// How a program calls `loadTool`.
const LOAD_TOOL_USAGE: &str = "call it as tools.$skills.loadTool(\"plugin.tool\")";
/// How a program calls `discover`.
const DISCOVER_USAGE: &str =
    "call it as tools.$skills.discover(\"what you need to do\") or tools.$skills.discover(query, { plugin: \"name\", topK: 10 })";

impl Builtin for Load {
    fn name(&self) -> &'static str {
        "skills.load"
    }

    fn call(&self, env: &BuiltinEnv<'_>, input: &str) -> ToolAnswer {
        match serde_json::from_str::<NameInput>(input) {
            Ok(input) => load_skill(env, &input.name),
            Err(e) => ToolAnswer::Reject(format!("tools.$skills.load: {e}; {LOAD_USAGE}")),
        }
    }
}

impl Builtin for LoadTool {
    fn name(&self) -> &'static str {
        "skills.loadTool"
    }

    fn call(&self, env: &BuiltinEnv<'_>, input: &str) -> ToolAnswer {
        match serde_json::from_str::<NameInput>(input) {
            Ok(input) => load_tool(env, &input.name),
            Err(e) => ToolAnswer::Reject(format!("tools.$skills.loadTool: {e}; {LOAD_TOOL_USAGE}")),
        }
    }
}

impl Builtin for Discover {
    fn name(&self) -> &'static str {
        "skills.discover"
    }

    fn call(&self, env: &BuiltinEnv<'_>, input: &str) -> ToolAnswer {
        match serde_json::from_str::<DiscoverInput>(input) {
            Ok(input) => discover(env, input),
            Err(e) => ToolAnswer::Reject(format!("tools.$skills.discover: {e}; {DISCOVER_USAGE}")),
        }
    }
}

/// The call path of `plugin`'s `tool`.
fn call_path(plugin: &str, tool: &str) -> String {
    format!("tools{}{}", access_path(plugin), access_path(tool))
}

/// The skills named `name` that `env`'s session is offered (a plugin's or standalone),
/// `plugin/name` choosing one plugin's.
fn skills_named<'a>(env: &BuiltinEnv<'a>, name: &str) -> Vec<(Option<&'a str>, &'a Skill)> {
    let (plugin, skill) = match name.split_once('/') {
        Some((plugin, skill)) => (Some(plugin), skill),
        None => (None, name),
    };
    env.catalog
        .skills()
        .filter(|(p, s)| s.name == skill && (plugin.is_none() || *p == plugin))
        .filter(|(p, s)| p.is_none_or(|p| env.skills.offers(p, s)))
        .collect()
}

fn load_skill(env: &BuiltinEnv<'_>, name: &str) -> ToolAnswer {
    let found = skills_named(env, name);
    let (plugin, skill) = match found.as_slice() {
        [one] => *one,
        [] => {
            let known: Vec<String> = env
                .catalog
                .skills()
                .filter(|(p, s)| p.is_none_or(|p| env.skills.offers(p, s)))
                .map(|(_, s)| format!("{:?}", s.name))
                .collect();
            return ToolAnswer::Reject(if known.is_empty() {
                format!("tools.$skills.load: there is no skill {name:?}; no skill is offered to this session")
            } else {
                format!("tools.$skills.load: there is no skill {name:?}; the skills are {}", known.join(", "))
            });
        }
        several => {
            let choices: Vec<String> =
                several.iter().map(|(p, s)| format!("\"{}/{}\"", p.unwrap_or(STANDALONE_PLUGIN), s.name)).collect();
            return ToolAnswer::Reject(format!(
                "tools.$skills.load: {} plugins have a skill {name:?}; name one: {}",
                several.len(),
                choices.join(", ")
            ));
        }
    };
    let tools: Vec<&Tool> = plugin.map(|p| env.catalog.owned_by(p, &skill.folder).collect()).unwrap_or_default();
    let plugin_name = plugin.unwrap_or_default();
    let keys: Vec<(String, String)> =
        tools.iter().map(|t| (plugin_name.to_string(), t.definition.name.clone())).collect();
    let report = env.skills.load(&keys);
    let declarations: String = tools
        .iter()
        .filter(|t| !t.definition.hidden)
        .map(|t| tool_declaration(plugin_name, t))
        .collect::<Vec<_>>()
        .join("\n");
    answer_json(
        "tools.$skills.load",
        &json!({
            "skill": skill.name,
            "plugin": plugin,
            "instructions": skill.instructions,
            "declarations": declarations,
            "tools": tools.iter().filter(|t| !t.definition.hidden).map(|t| call_path(plugin_name, &t.definition.name)).collect::<Vec<_>>(),
            "unloaded": unloaded(&report.unloaded),
        }),
    )
}

/// The call paths of unloaded tools.
fn unloaded(tools: &[(String, String)]) -> Vec<String> {
    tools.iter().map(|(p, t)| call_path(p, t)).collect()
}

/// The tools named `name` (`plugin.tool`, or a tool name alone; either with `_` for
/// other characters), hidden ones left out.
fn tools_named<'a>(catalog: &'a Catalog, name: &str) -> Vec<(&'a str, &'a Tool)> {
    let mut found: Vec<(&str, &Tool)> = Vec::new();
    for (plugin, tools) in catalog.plugins() {
        for tool in tools.filter(|t| !t.definition.hidden) {
            let tool_name = tool.definition.name.as_str();
            let alias = crate::tool::catalog::underscore_alias(tool_name);
            let matches = [tool_name.to_string(), alias.clone()].iter().any(|n| {
                name == n
                    || name == format!("{plugin}.{n}")
                    || name == format!("{}.{n}", crate::tool::catalog::underscore_alias(plugin))
            });
            if matches {
                found.push((plugin, tool));
            }
        }
    }
    found
}

fn load_tool(env: &BuiltinEnv<'_>, name: &str) -> ToolAnswer {
    let found = tools_named(env.catalog, name);
    let (plugin, tool) = match found.as_slice() {
        [one] => *one,
        [] => return ToolAnswer::Reject(format!("tools.$skills.loadTool: there is no tool {name:?}; find one with tools.$skills.discover(\"what it should do\")")),
        several => {
            let choices: Vec<String> = several.iter().map(|(p, t)| format!("\"{p}.{}\"", t.definition.name)).collect();
            return ToolAnswer::Reject(format!(
                "tools.$skills.loadTool: {} plugins have a tool {name:?}; name one: {}",
                several.len(),
                choices.join(", ")
            ));
        }
    };
    let owner = tool.definition.owner.as_deref();
    // A tool of an agent the session has not selected cannot be loaded by name.
    if let Some(agent) = owner.and_then(crate::tool::skills::agent_of) {
        if !env.skills.selected(plugin, agent) {
            if let Access::Locked(why) = env.skills.access(plugin, tool) {
                return ToolAnswer::Reject(format!("tools.$skills.loadTool: {why}"));
            }
        }
    }
    let report = match owner {
        Some(_) => env.skills.load(&[(plugin.to_string(), tool.definition.name.clone())]),
        None => Default::default(),
    };
    answer_json(
        "tools.$skills.loadTool",
        &json!({
            "call": call_path(plugin, &tool.definition.name),
            "declaration": tool_declaration(plugin, tool),
            "unloaded": unloaded(&report.unloaded),
        }),
    )
}

fn discover(env: &BuiltinEnv<'_>, input: DiscoverInput) -> ToolAnswer {
    if let Some(why) = query_too_large(&input.query) {
        return ToolAnswer::Reject(why.replacen("tools.$search", "tools.$skills.discover", 1));
    }
    let top_k = input.top_k.unwrap_or(DEFAULT_DISCOVER_TOP_K);
    if !(1..=MAX_TOP_K).contains(&top_k) {
        return ToolAnswer::Reject(format!(
            "tools.$skills.discover: topK must be between 1 and {MAX_TOP_K}, not {top_k}"
        ));
    }
    if let Some(plugin) = &input.plugin {
        if !env.catalog.plugins().any(|(p, _)| p == plugin) {
            let known: Vec<&str> = env.catalog.plugins().map(|(p, _)| p).collect();
            return ToolAnswer::Reject(format!(
                "tools.$skills.discover: there is no plugin {plugin:?}; the plugins are {}",
                known.join(", ")
            ));
        }
    }
    let index = env.catalog.search_index();
    let ranker = search_ranker(env.semantic, index.has_dense());
    // Documents this session may not load (another agent's) are left out after
    // ranking: ask for as many more.
    let left_out = not_offered(env);
    let hits = index.search_phrasings(
        std::slice::from_ref(&input.query),
        input.plugin.as_deref(),
        top_k + left_out,
        env.semantic,
    );
    let score = |s: f64| (s * 10_000.0).round() / 10_000.0;
    let found: Vec<Value> = hits
        .iter()
        .filter_map(|hit| {
            if let Some(skill_name) = hit.tool.strip_prefix(SKILL_PREFIX) {
                let plugin = (hit.plugin != STANDALONE_PLUGIN).then_some(hit.plugin.as_str());
                let (_, skill) = env
                    .catalog
                    .skills()
                    .find(|(p, s)| *p == plugin && s.name == skill_name)
                    .filter(|(p, s)| p.is_none_or(|p| env.skills.offers(p, s)))?;
                return Some(json!({
                    "kind": "skill",
                    "skill": skill.name,
                    "plugin": plugin,
                    "description": skill.description,
                    "load": format!("tools.$skills.load({:?})", skill.name),
                    "score": score(hit.score),
                    "ranker": ranker,
                }));
            }
            let tool = env.catalog.get(&hit.plugin, &hit.tool)?;
            let open = env.skills.access(&hit.plugin, tool) == Access::Open;
            if !open && !loadable(env, &hit.plugin, tool) {
                return None;
            }
            let mut found = json!({
                "kind": "tool",
                "call": call_path(&hit.plugin, &hit.tool),
                "plugin": hit.plugin,
                "tool": hit.tool,
                "description": tool.definition.description,
                "score": score(hit.score),
                "ranker": ranker,
            });
            if open {
                found["declaration"] = Value::String(tool_declaration(&hit.plugin, tool));
            } else {
                found["load"] = Value::String(format!("tools.$skills.loadTool(\"{}.{}\")", hit.plugin, hit.tool));
            }
            Some(found)
        })
        .take(top_k)
        .collect();
    answer_json("tools.$skills.discover", &Value::Array(found))
}

/// Whether the session may load `plugin`'s `tool` (it is a skill's, and that skill is
/// offered to the session).
fn loadable(env: &BuiltinEnv<'_>, plugin: &str, tool: &Tool) -> bool {
    let Some(owner) = tool.definition.owner.as_deref() else { return true };
    match crate::tool::skills::agent_of(owner) {
        Some(agent) => env.skills.selected(plugin, agent),
        None => true,
    }
}

/// How many of the index's documents the session is not offered (another agent's
/// tools and skills).
fn not_offered(env: &BuiltinEnv<'_>) -> usize {
    let tools: usize = env
        .catalog
        .plugins()
        .map(|(p, tools)| tools.filter(|t| !t.definition.hidden && !loadable(env, p, t)).count())
        .sum();
    let skills = env.catalog.skills().filter(|(p, s)| p.is_some_and(|p| !env.skills.offers(p, s))).count();
    tools + skills
}
