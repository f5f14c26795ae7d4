//! The calls a program makes to codemode itself rather than to a plugin: the worker
//! sends them as tool calls of the plugin [`BUILTIN_PLUGIN`] (a name no plugin can
//! have, since `$` is not allowed in plugin names), and [`super::call_builtin`] runs
//! the [`Builtin`] registered under the name in [`Builtins`], with the current catalog.
//! A new built-in is one [`Builtin`] and one line in [`Builtins::default`].
//!
//! - `search` (`tools.$search(query, { plugin, limit })`, the query one phrasing or
//!   several): the catalog's best tools for the query ([`crate::tool::search`]: by
//!   meaning and words when a search model is installed, by words otherwise), each
//!   with its TypeScript declaration, its score and the ranker's name, so a program can
//!   discover a tool and call it in the same run; what the calling session cannot call
//!   (a hidden tool, a skill's tool it has not loaded) is never a hit.
//! - `skills.load`, `skills.loadTool`, `skills.discover` (`tools.$skills.*`): seed 001's
//!   deferred catalog, in [`super::skills`].

use protocol::ToolAnswer;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::tool::semantic::Semantic;
use crate::tool::Catalog;
use crate::typescript::{access_path, tool_declaration};

/// The plugin name the worker uses for codemode's own calls.
pub const BUILTIN_PLUGIN: &str = "$codemode";

/// Hits a search returns unless the program asks for another number.
const DEFAULT_LIMIT: usize = 5;
/// The longest query, in characters: a sentence or two about what the tool does.
pub const MAX_QUERY_CHARS: usize = 1_000;
/// The most words a query may have.
pub const MAX_QUERY_WORDS: usize = 64;
/// The most hits one search returns.
const MAX_LIMIT: usize = 50;
/// The most phrasings one search takes.
pub const MAX_PHRASINGS: usize = 8;

/// `tools.$search`'s input.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchInput {
    query: Query,
    plugin: Option<String>,
    limit: Option<usize>,
}

/// One phrasing of what the tool should do, or several (merged).
#[derive(Deserialize)]
#[serde(untagged)]
enum Query {
    One(String),
    Several(Vec<String>),
}

/// A call to codemode itself, `tools.$<name>(input)`.
pub trait Builtin: Send + Sync + 'static {
    /// Its name, as the program writes it after `tools.$`.
    fn name(&self) -> &'static str;
    /// Answers `input` (JSON text). Runs on the host's blocking pool, its CPU charged
    /// to the program's `host_cpu` budget.
    fn call(&self, env: &BuiltinEnv<'_>, input: &str) -> ToolAnswer;
}

/// What a built-in reads: the current catalog, the search model when one is
/// installed, and what the calling session has loaded.
pub struct BuiltinEnv<'a> {
    /// The catalog plugins are in now.
    pub catalog: &'a Catalog,
    /// The search model.
    pub semantic: Option<&'a Semantic>,
    /// What the calling session loaded and selected (skills, private tools, agents).
    pub skills: &'a crate::tool::skills::SkillSession,
}

/// The built-ins, by name.
pub struct Builtins(Vec<std::sync::Arc<dyn Builtin>>);

impl Default for Builtins {
    /// codemode's own: `tools.$search` and `tools.$skills.*`.
    fn default() -> Self {
        Self(vec![
            std::sync::Arc::new(Search),
            std::sync::Arc::new(super::skills::Load),
            std::sync::Arc::new(super::skills::LoadTool),
            std::sync::Arc::new(super::skills::Discover),
        ])
    }
}

impl Builtins {
    /// The built-in `name`.
    pub fn get(&self, name: &str) -> Option<std::sync::Arc<dyn Builtin>> {
        self.0.iter().find(|b| b.name() == name).cloned()
    }

    /// What a call of a built-in that does not exist reads.
    pub fn unknown(&self, name: &str) -> String {
        let known: Vec<String> = self.0.iter().map(|b| format!("tools.${}", b.name())).collect();
        match known.as_slice() {
            [one] => format!("codemode has no built-in call {name:?}; the built-in is {one}"),
            _ => format!("codemode has no built-in call {name:?}; the built-ins are {}", known.join(", ")),
        }
    }
}

/// `tools.$search`.
struct Search;

impl Builtin for Search {
    fn name(&self) -> &'static str {
        "search"
    }

    fn call(&self, env: &BuiltinEnv<'_>, input: &str) -> ToolAnswer {
        match serde_json::from_str::<SearchInput>(input) {
            Ok(input) => search(env, input),
            Err(e) => ToolAnswer::Reject(format!(
                "tools.$search: {e}; call it as tools.$search(\"what the tool does\"), tools.$search([\"one phrasing\", \"another\"]) or tools.$search(query, {{ plugin: \"name\", limit: 10 }})"
            )),
        }
    }
}

/// How `tools.$search` ranks, as its hits and the execute description name it: with
/// `semantic` by meaning and words once the tools' vectors are there (`dense_ready`),
/// by words alone (BM25) otherwise.
pub fn search_ranker(semantic: Option<&Semantic>, dense_ready: bool) -> String {
    match semantic {
        Some(_) if dense_ready => crate::tool::semantic::RANKER.to_string(),
        Some(_) => "BM25 (the search model is still embedding the tools)".to_string(),
        None => "BM25".to_string(),
    }
}

fn search(env: &BuiltinEnv<'_>, input: SearchInput) -> ToolAnswer {
    let (catalog, semantic) = (env.catalog, env.semantic);
    let queries = match input.query {
        Query::One(query) => vec![query],
        Query::Several(queries) => queries,
    };
    if queries.is_empty() || queries.len() > MAX_PHRASINGS {
        return ToolAnswer::Reject(format!(
            "tools.$search: give one phrasing or up to {MAX_PHRASINGS} (an array of strings), not {}",
            queries.len()
        ));
    }
    if let Some(why) = queries.iter().find_map(|q| query_too_large(q)) {
        return ToolAnswer::Reject(why);
    }
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return ToolAnswer::Reject(format!("tools.$search: limit must be between 1 and {MAX_LIMIT}, not {limit}"));
    }
    if let Some(plugin) = &input.plugin {
        if !catalog.plugins().any(|(p, _)| p == plugin) {
            let known: Vec<&str> = catalog.plugins().map(|(p, _)| p).collect();
            return ToolAnswer::Reject(format!(
                "tools.$search: there is no plugin {plugin:?}; the plugins are {}",
                known.join(", ")
            ));
        }
    }
    let index = catalog.search_index();
    let ranker = search_ranker(semantic, index.has_dense());
    // Skills and the tools this session cannot call are ranked too (for
    // `tools.$skills.discover`) but are no hits of a search: ask for as many more.
    let unshown = catalog.skills().count()
        + catalog
            .plugins()
            .map(|(p, tools)| tools.filter(|t| t.definition.owner.is_some() && !env.skills.shows(p, t)).count())
            .sum::<usize>();
    let hits = index.search_phrasings(&queries, input.plugin.as_deref(), limit + unshown, semantic);
    let found: Vec<Value> = hits
        .iter()
        .filter_map(|hit| {
            let tool = catalog.get(&hit.plugin, &hit.tool).filter(|t| env.skills.shows(&hit.plugin, t))?;
            Some(json!({
                "call": format!("tools{}{}", access_path(&hit.plugin), access_path(&hit.tool)),
                "plugin": hit.plugin,
                "tool": hit.tool,
                "description": tool.definition.description,
                "declaration": tool_declaration(&hit.plugin, tool),
                "score": (hit.score * 10_000.0).round() / 10_000.0,
                "ranker": ranker,
            }))
        })
        .take(limit)
        .collect();
    answer_json("tools.$search", &Value::Array(found))
}

/// A built-in's answer: `value` as JSON text (`who` names the built-in if that fails).
pub(super) fn answer_json(who: &str, value: &Value) -> ToolAnswer {
    match RawValue::from_string(value.to_string()) {
        Ok(raw) => ToolAnswer::Resolve(raw),
        Err(e) => ToolAnswer::Reject(format!("{who}: {e}")),
    }
}

/// Why `query` is larger than a search takes, if it is: the work a search does grows
/// with its words, and the host does it for the program.
pub(super) fn query_too_large(query: &str) -> Option<String> {
    let chars = query.chars().count();
    let words = query.split_whitespace().count();
    if chars <= MAX_QUERY_CHARS && words <= MAX_QUERY_WORDS {
        return None;
    }
    Some(format!(
        "tools.$search: the query has {chars} characters and {words} words; a query may have at most {MAX_QUERY_CHARS} characters and {MAX_QUERY_WORDS} words: describe what the tool should do in a sentence"
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tool::{Tool, ToolDefinition, ToolResult};

    fn catalog() -> Catalog {
        Catalog::new()
            .with(
                "weather",
                Tool::from_fn(
                    ToolDefinition::new("forecast", "Tomorrow's forecast for a city.", json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] })),
                    |_, _| async { ToolResult::text("x") },
                ),
            )
            .unwrap()
    }

    /// The built-in `name`'s answer to `input`, or the unknown-built-in message.
    fn answer(catalog: &Catalog, semantic: Option<&Semantic>, name: &str, input: &str) -> ToolAnswer {
        let builtins = Builtins::default();
        match builtins.get(name) {
            Some(b) => b.call(&BuiltinEnv { catalog, semantic, skills: &Default::default() }, input),
            None => ToolAnswer::Reject(builtins.unknown(name)),
        }
    }

    fn resolved(answer: ToolAnswer) -> Value {
        match answer {
            ToolAnswer::Resolve(raw) => serde_json::from_str(raw.get()).unwrap(),
            ToolAnswer::Reject(why) => panic!("rejected: {why}"),
        }
    }

    fn rejected(answer: ToolAnswer) -> String {
        match answer {
            ToolAnswer::Resolve(raw) => panic!("resolved: {}", raw.get()),
            ToolAnswer::Reject(why) => why,
        }
    }

    #[test]
    fn a_search_returns_calls_with_their_declarations() {
        let hits = resolved(answer(&catalog(), None, "search", r#"{"query":"will it rain in Oslo"}"#));
        assert_eq!(hits[0]["call"], "tools.weather.forecast");
        assert_eq!(
            (hits[0]["ranker"].as_str(), hits[0]["score"].as_f64().is_some_and(|s| s > 0.0)),
            (Some("BM25"), true)
        );
        assert_eq!(
            hits[0]["declaration"],
            "/** Tomorrow's forecast for a city. */\ntools.weather.forecast(input: {\n  city: string;\n}): Promise<string>;\n"
        );
        assert_eq!(resolved(answer(&catalog(), None, "search", r#"{"query":"zebra"}"#)), json!([]));
        // Several phrasings of one need, merged.
        let hits = resolved(answer(&catalog(), None, "search", r#"{"query":["will it rain","zebra"]}"#));
        assert_eq!(hits[0]["call"], "tools.weather.forecast");
    }

    #[test]
    fn bad_searches_say_what_to_write() {
        assert!(rejected(answer(&catalog(), None, "search", r#"{"q":"x"}"#))
            .starts_with("tools.$search: unknown field `q`"));
        assert_eq!(
            rejected(answer(&catalog(), None, "search", r#"{"query":"x","limit":0}"#)),
            "tools.$search: limit must be between 1 and 50, not 0"
        );
        assert_eq!(
            rejected(answer(&catalog(), None, "search", r#"{"query":"x","plugin":"nope"}"#)),
            "tools.$search: there is no plugin \"nope\"; the plugins are weather"
        );
        assert!(rejected(answer(&catalog(), None, "other", "{}")).contains("no built-in call \"other\""));
        let long = serde_json::to_string(&json!({ "query": "rain ".repeat(65) })).unwrap();
        assert_eq!(
            rejected(answer(&catalog(), None, "search", &long)),
            "tools.$search: the query has 325 characters and 65 words; a query may have at most 1000 characters and 64 words: describe what the tool should do in a sentence"
        );
        assert_eq!(
            rejected(answer(
                &catalog(),
                None,
                "search",
                &serde_json::to_string(&json!({ "query": vec!["x"; 9] })).unwrap()
            )),
            "tools.$search: give one phrasing or up to 8 (an array of strings), not 9"
        );
        let wide = serde_json::to_string(&json!({ "query": "x".repeat(1001) })).unwrap();
        assert!(rejected(answer(&catalog(), None, "search", &wide))
            .starts_with("tools.$search: the query has 1001 characters and 1 words"));
    }
}
