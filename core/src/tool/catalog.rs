//! The catalog: every plugin's tools, by plugin then tool name, and the plugins that
//! are configured but unavailable (with why, and how to try them again). The executor
//! serves programs from one; the plugin host builds it.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use protocol::mcp::empty_object_schema;
use protocol::PluginTools;
use serde_json::Value;

use super::schema::Schemas;
use super::search::SearchIndex;
use super::Tool;

/// Why a tool definition was refused; names the plugin, the tool and the field.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CatalogError {
    /// A plugin or tool name breaks the naming rule.
    #[error("plugin {plugin:?}: {what} name {name:?} is invalid: use {}", if *.what == "tool" { "1 to 128 letters, digits, '_', '-' or '.'" } else { "1 to 64 letters, digits, '_' or '-'" })]
    InvalidName {
        /// The plugin.
        plugin: String,
        /// "plugin" or "tool".
        what: &'static str,
        /// The offending name.
        name: String,
    },
    /// The same tool was added twice to one plugin.
    #[error("plugin {plugin:?}: tool {tool:?} is defined twice")]
    Duplicate {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
    },
    /// A field of the definition is wrong.
    #[error("plugin {plugin:?}, tool {tool:?}: field {field} {problem}")]
    InvalidField {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// The field (`description`, `inputSchema`, `outputSchema`).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// A plugin name: true for 1 to 64 letters, digits, `_` or `-`.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A tool name, as MCP (2025-11-25) names tools: 1 to 128 letters, digits, `_`, `-` or
/// `.` (a program reaches one with other characters than letters, digits, `_` and `$`
/// through its `_` alias, or with brackets).
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// The `_` name a program may also use for `name`: every character other than letters,
/// digits, `_` and `$` replaced by `_` (as the worker's bootstrap names aliases).
pub fn underscore_alias(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect()
}

/// Tries a plugin that could not be started again, now (when its backoff allows):
/// when it comes back, the executor's catalog is replaced with one that holds its
/// tools. The executor calls it when a program calls a tool of the plugin.
pub trait Recover: Send + Sync + 'static {
    /// Tries once; resolves when the attempt is over (whatever its result).
    fn recover(&self) -> BoxFuture<'static, ()>;
}

/// Where a plugin host puts the catalog it rebuilt (a plugin's tools changed, or it came
/// back) and reads the current one from: the executor, whose later programs see it.
/// Plugins reach the executor only through this.
pub trait CatalogFeed: Send + Sync + 'static {
    /// The catalog programs are served from now.
    fn current(&self) -> Arc<Catalog>;
    /// Replaces it; programs that start later see `catalog`.
    fn replace(&self, catalog: Catalog);
}

/// A plugin that is configured but could not be started.
#[derive(Clone)]
pub struct Unavailable {
    /// Why, as the agent reads it (with the last lines of its stderr when it wrote some).
    pub reason: String,
    /// How to try it again.
    pub recover: Option<Arc<dyn Recover>>,
}

impl std::fmt::Debug for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unavailable").field("reason", &self.reason).finish_non_exhaustive()
    }
}

/// The tools of every plugin, by plugin name then tool name, and the plugins that are
/// configured but unavailable.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    plugins: BTreeMap<String, BTreeMap<String, Tool>>,
    unavailable: BTreeMap<String, Unavailable>,
    /// Each plugin's one-line summary, when it has one (shown for large catalogs).
    summaries: BTreeMap<String, String>,
    /// The search index, built on the first search and dropped by every change.
    index: IndexCache,
    /// Each plugin's skills, agents and `AGENTS.md` (seed 001), when it has some.
    guidance: BTreeMap<String, super::skills::Guidance>,
    /// Skills of no plugin (`[[skills]]` folders of Agent Skills): instructions only.
    standalone: Vec<super::skills::Skill>,
}

/// The catalog's search index, once built.
#[derive(Clone, Default)]
struct IndexCache(OnceLock<Arc<SearchIndex>>);

impl std::fmt::Debug for IndexCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "IndexCache(built)" } else { "IndexCache(empty)" })
    }
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool to a plugin: checks its names and fields and compiles its schemas
    /// (a tool [`Catalog::checked`] already is only checked for a duplicate).
    pub fn add(&mut self, plugin: &str, tool: Tool) -> Result<(), CatalogError> {
        if !is_valid_name(plugin) {
            return Err(CatalogError::InvalidName { plugin: plugin.into(), what: "plugin", name: plugin.into() });
        }
        let tool = if tool.schemas.is_some() { tool } else { Self::checked(plugin, tool)? };
        let name = tool.definition.name.clone();
        let tools = self.plugins.entry(plugin.to_string()).or_default();
        if tools.contains_key(&name) {
            return Err(CatalogError::Duplicate { plugin: plugin.into(), tool: name });
        }
        tools.insert(name, tool);
        self.index = IndexCache::default();
        Ok(())
    }

    /// `tool` of `plugin`, with its names and fields checked and its schemas compiled:
    /// ready to join any catalog without being compiled again.
    pub fn checked(plugin: &str, mut tool: Tool) -> Result<Tool, CatalogError> {
        let name = tool.definition.name.clone();
        if !is_valid_name(plugin) {
            return Err(CatalogError::InvalidName { plugin: plugin.into(), what: "plugin", name: plugin.into() });
        }
        if !is_valid_tool_name(&name) {
            return Err(CatalogError::InvalidName { plugin: plugin.into(), what: "tool", name });
        }
        let invalid = |field: &'static str, problem: String| CatalogError::InvalidField {
            plugin: plugin.into(),
            tool: name.clone(),
            field,
            problem,
        };
        if tool.definition.description.trim().is_empty() {
            return Err(invalid("description", "is missing: say what the tool does and when to use it".into()));
        }
        if tool.definition.input_schema.is_null() {
            tool.definition.input_schema = empty_object_schema();
        }
        if tool.definition.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(invalid("inputSchema", "must be a JSON Schema object with \"type\": \"object\"".into()));
        }
        let schemas = Schemas::compile(&tool.definition.input_schema, tool.definition.output_schema.as_ref())
            .map_err(|(field, problem)| invalid(field, problem))?;
        tool.schemas = Some(Arc::new(schemas));
        Ok(tool)
    }

    /// Sets a plugin's one-line summary (its first line is kept); an empty text removes it.
    pub fn set_summary(&mut self, plugin: &str, summary: &str) {
        let line = summary.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
        if line.is_empty() {
            self.summaries.remove(plugin);
        } else {
            self.summaries.insert(plugin.to_string(), line.to_string());
        }
        self.index = IndexCache::default();
    }

    /// A plugin's one-line summary, when it has one.
    pub fn summary(&self, plugin: &str) -> Option<&str> {
        self.summaries.get(plugin).map(String::as_str)
    }

    /// Sets a plugin's skills, agents and `AGENTS.md`.
    pub fn set_guidance(&mut self, plugin: &str, guidance: super::skills::Guidance) {
        if guidance.is_empty() {
            self.guidance.remove(plugin);
        } else {
            self.guidance.insert(plugin.to_string(), guidance);
        }
        self.index = IndexCache::default();
    }

    /// A plugin's skills, agents and `AGENTS.md`, when it has some.
    pub fn guidance(&self, plugin: &str) -> Option<&super::skills::Guidance> {
        self.guidance.get(plugin)
    }

    /// Every plugin's skills, agents and `AGENTS.md`, by plugin.
    pub fn guidances(&self) -> impl Iterator<Item = (&str, &super::skills::Guidance)> {
        self.guidance.iter().map(|(p, g)| (p.as_str(), g))
    }

    /// Adds skills of no plugin (a `[[skills]]` folder).
    pub fn add_standalone_skills(&mut self, skills: impl IntoIterator<Item = super::skills::Skill>) {
        self.standalone.extend(skills);
        self.index = IndexCache::default();
    }

    /// Every skill with its plugin (`None` for a standalone skill), plugins' first.
    pub fn skills(&self) -> impl Iterator<Item = (Option<&str>, &super::skills::Skill)> {
        let owned = self.guidance.iter().flat_map(|(p, g)| g.skills.iter().map(move |s| (Some(p.as_str()), s)));
        owned.chain(self.standalone.iter().map(|s| (None, s)))
    }

    /// The tools private to `plugin`'s owner folder `folder` (a skill's or an agent's).
    pub fn owned_by<'a>(&'a self, plugin: &str, folder: &'a str) -> impl Iterator<Item = &'a Tool> + 'a {
        self.plugins
            .get(plugin)
            .into_iter()
            .flat_map(|tools| tools.values())
            .filter(move |t| t.definition.owner.as_deref() == Some(folder))
    }

    /// The catalog's search index (built on first use, then kept until it changes).
    pub fn search_index(&self) -> Arc<SearchIndex> {
        Arc::clone(self.index.0.get_or_init(|| Arc::new(super::search::index(self))))
    }

    /// Removes a tool; true when it was there.
    pub fn remove(&mut self, plugin: &str, tool: &str) -> bool {
        let Some(tools) = self.plugins.get_mut(plugin) else { return false };
        let removed = tools.remove(tool).is_some();
        self.index = IndexCache::default();
        if tools.is_empty() {
            self.plugins.remove(plugin);
        }
        removed
    }

    /// The name a tool goes by where tools of all plugins share one namespace (separate
    /// tools mode, listings): its own name, or `<plugin>_<name>` when another plugin has
    /// a tool of the same name.
    pub fn exposed_name(&self, plugin: &str, tool: &str) -> String {
        let shared =
            self.plugins.iter().filter(|(p, tools)| p.as_str() != plugin && tools.contains_key(tool)).count() > 0;
        if shared {
            format!("{plugin}_{tool}")
        } else {
            tool.to_string()
        }
    }

    /// Builder form of [`Catalog::add`].
    pub fn with(mut self, plugin: &str, tool: Tool) -> Result<Self, CatalogError> {
        self.add(plugin, tool)?;
        Ok(self)
    }

    /// Finds a tool.
    pub fn get(&self, plugin: &str, tool: &str) -> Option<&Tool> {
        self.plugins.get(plugin)?.get(tool)
    }

    /// Finds a tool by its name or by its `_` alias ([`underscore_alias`]) when no tool
    /// has that name: how a program may have written it before the plugin was there.
    pub fn get_or_alias(&self, plugin: &str, tool: &str) -> Option<&Tool> {
        let tools = self.plugins.get(plugin)?;
        tools.get(tool).or_else(|| tools.values().find(|t| underscore_alias(&t.definition.name) == tool))
    }

    /// The configured plugin named `name` or whose `_` alias is `name` (available or
    /// not), when there is one.
    pub fn plugin_named<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        let known = self.plugins.keys().chain(self.unavailable.keys());
        let mut found = None;
        for plugin in known {
            if plugin == name {
                return Some(plugin);
            }
            if underscore_alias(plugin) == name {
                found = found.or(Some(plugin.as_str()));
            }
        }
        found
    }

    /// Every plugin with its tools, in name order.
    pub fn plugins(&self) -> impl Iterator<Item = (&str, impl Iterator<Item = &Tool>)> {
        self.plugins.iter().map(|(p, tools)| (p.as_str(), tools.values()))
    }

    /// Records that `plugin` is configured but could not be started, and why.
    pub fn mark_unavailable(&mut self, plugin: &str, reason: String, recover: Option<Arc<dyn Recover>>) {
        self.unavailable.insert(plugin.to_string(), Unavailable { reason, recover });
    }

    /// Why `plugin` is unavailable, when it is.
    pub fn unavailable(&self, plugin: &str) -> Option<&Unavailable> {
        self.unavailable.get(plugin).filter(|_| !self.plugins.contains_key(plugin))
    }

    /// Every unavailable plugin with its reason.
    pub fn unavailable_plugins(&self) -> impl Iterator<Item = (&str, &Unavailable)> {
        self.unavailable.iter().filter(|(p, _)| !self.plugins.contains_key(p.as_str())).map(|(p, u)| (p.as_str(), u))
    }

    /// The catalog as the worker needs it: names only, and unavailable plugins with
    /// their reason.
    pub fn worker_view(&self) -> Vec<PluginTools> {
        let available = self.plugins.iter().map(|(plugin, tools)| PluginTools {
            plugin: plugin.clone(),
            tools: tools.keys().cloned().collect(),
            unavailable: None,
        });
        let unavailable = self.unavailable_plugins().map(|(plugin, u)| PluginTools {
            plugin: plugin.to_string(),
            tools: Vec::new(),
            unavailable: Some(u.reason.clone()),
        });
        available.chain(unavailable).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tool::{ToolDefinition, ToolResult};
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        Tool::from_fn(ToolDefinition::new(name, "d", empty_object_schema()), |_, _| async { ToolResult::text("x") })
    }

    #[test]
    fn colliding_names_are_prefixed_with_their_plugin() {
        let mut c = Catalog::new();
        c.add("a", tool("search")).unwrap();
        c.add("b", tool("search")).unwrap();
        c.add("b", tool("only")).unwrap();
        assert_eq!(c.exposed_name("a", "search"), "a_search");
        assert_eq!(c.exposed_name("b", "search"), "b_search");
        assert_eq!(c.exposed_name("b", "only"), "only");
        assert!(c.remove("a", "search"));
        assert_eq!(c.exposed_name("b", "search"), "search");
    }

    #[test]
    fn names_and_fields_are_checked() {
        let mut c = Catalog::new();
        assert!(c.add("my-db", tool("search-rows")).is_ok());
        assert_eq!(
            c.add("my-db", tool("search-rows")),
            Err(CatalogError::Duplicate { plugin: "my-db".into(), tool: "search-rows".into() })
        );
        assert!(matches!(c.add("bad name", tool("x")), Err(CatalogError::InvalidName { what: "plugin", .. })));
        // Tool names as MCP names tools: up to 128 characters, dots allowed.
        assert!(c.add("p", tool(&"x".repeat(128))).is_ok());
        assert!(c.add("p", tool("admin.users.list")).is_ok());
        assert_eq!(
            c.add("p", tool(&"x".repeat(129))).unwrap_err().to_string(),
            format!(
                "plugin \"p\": tool name \"{}\" is invalid: use 1 to 128 letters, digits, '_', '-' or '.'",
                "x".repeat(129)
            )
        );
        assert!(matches!(c.add("p", tool("a b")), Err(CatalogError::InvalidName { what: "tool", .. })));
        assert!(matches!(c.add("p.q", tool("x")), Err(CatalogError::InvalidName { what: "plugin", .. })));
        let mut t = tool("y");
        t.definition.input_schema = json!({"type": "string"});
        assert_eq!(
            c.add("p", t).unwrap_err().to_string(),
            "plugin \"p\", tool \"y\": field inputSchema must be a JSON Schema object with \"type\": \"object\""
        );
        let mut t = tool("z");
        t.definition.description = " ".into();
        assert_eq!(
            c.add("p", t).unwrap_err().to_string(),
            "plugin \"p\", tool \"z\": field description is missing: say what the tool does and when to use it"
        );
        let mut t = tool("w");
        t.definition.input_schema = json!({"type": "object", "properties": {"a": {"type": 12}}});
        assert!(c
            .add("p", t)
            .unwrap_err()
            .to_string()
            .starts_with("plugin \"p\", tool \"w\": field inputSchema is not a valid JSON Schema"));
    }

    #[test]
    fn the_worker_sees_names_and_unavailable_plugins_with_their_reason() {
        let mut c = Catalog::new();
        c.add("my-db", tool("search-rows")).unwrap();
        assert_eq!(
            c.worker_view(),
            vec![PluginTools { plugin: "my-db".into(), tools: vec!["search-rows".into()], unavailable: None }]
        );
        c.mark_unavailable("broken", "it exited".into(), None);
        assert_eq!(
            c.worker_view()[1],
            PluginTools { plugin: "broken".into(), tools: vec![], unavailable: Some("it exited".into()) }
        );
        assert_eq!(c.unavailable("broken").map(|u| u.reason.as_str()), Some("it exited"));
        assert!(c.unavailable("my-db").is_none());
    }
}
