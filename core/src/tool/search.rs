//! The catalog in the search crate's terms: `tools.$search` ranks with the `search`
//! crate (BM25, the sentence encoder, their fusion), which indexes plain documents; this
//! module turns the catalog into them.
//!
//! Its place in the flow: [`Catalog::search_index`] builds (and caches) the index with
//! [`index`] on the first search after each change; the executor's built-in
//! (`executor/builtin.rs`) searches it, and the search model embeds its tools in the
//! background (`SearchIndex::build_dense`).

use serde_json::Value;

pub use ::search::{Document, Hit, PluginDocuments, Ranking, SearchIndex};

use super::Catalog;

/// Indexes every tool of `catalog` a program may be shown (a hidden tool is callable
/// by name but never a search result, so it is not indexed), each plugin with its
/// summary and each tool with its input schema's parameters, and every skill as a
/// document named [`SKILL_PREFIX`]`<name>` (so `tools.$skills.discover` ranks tools and
/// skills together; `tools.$search` leaves skills and what a session cannot call out).
pub fn index(catalog: &Catalog) -> SearchIndex {
    let skill_names: Vec<String> = catalog.skills().map(|(_, skill)| format!("{SKILL_PREFIX}{}", skill.name)).collect();
    SearchIndex::build(&documents(catalog, &skill_names))
}

/// What a skill's document is named in the index: a prefix no tool name has (`:` is not
/// allowed in one), then the skill's name.
pub const SKILL_PREFIX: &str = "skill:";
/// The plugin the index files standalone skills (`[[skills]]`) under: no plugin has
/// this name (`$` is not allowed in one).
pub const STANDALONE_PLUGIN: &str = "$skills";

/// The catalog's plugins, their tools and skills as the search crate indexes them, in
/// the catalog's order (standalone skills last).
fn documents<'a>(catalog: &'a Catalog, skill_names: &'a [String]) -> Vec<PluginDocuments<'a>> {
    let mut plugins: Vec<PluginDocuments<'_>> = catalog
        .plugins()
        .map(|(plugin, tools)| PluginDocuments {
            name: plugin,
            summary: catalog.summary(plugin).unwrap_or_default(),
            tools: tools
                .filter(|tool| !tool.definition.hidden)
                .map(|tool| {
                    let d = &tool.definition;
                    Document {
                        name: &d.name,
                        description: &d.description,
                        parameters: parameters(&d.input_schema),
                        hidden: false,
                    }
                })
                .collect(),
        })
        .collect();
    for ((plugin, skill), name) in catalog.skills().zip(skill_names) {
        let document = Document { name, description: &skill.description, parameters: Vec::new(), hidden: false };
        let plugin = plugin.unwrap_or(STANDALONE_PLUGIN);
        match plugins.iter_mut().find(|p| p.name == plugin) {
            Some(found) => found.tools.push(document),
            None => plugins.push(PluginDocuments { name: plugin, summary: "", tools: vec![document] }),
        }
    }
    plugins
}

/// A schema's top-level parameters: name and description.
fn parameters(schema: &Value) -> Vec<(String, String)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, p)| {
                    (name.clone(), p.get("description").and_then(Value::as_str).unwrap_or_default().to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Tool, ToolDefinition, ToolResult};
    use serde_json::json;

    fn catalog() -> Catalog {
        let tool = |name: &str, description: &str| {
            Tool::from_fn(
                ToolDefinition::new(
                    name,
                    description,
                    json!({ "type": "object", "properties": { "repo": { "type": "string", "description": "owner/name" } } }),
                ),
                |_, _| async { ToolResult::text("x") },
            )
        };
        Catalog::new()
            .with("github", tool("create_issue", "Create a new issue in a repository."))
            .unwrap()
            .with("github", tool("listPullRequests", "List pull requests of a repository."))
            .unwrap()
            .with("weather", tool("forecast", "Tomorrow's forecast for a city."))
            .unwrap()
    }

    #[test]
    fn each_plugin_is_a_group_of_documents_with_its_tools_parameters() {
        let catalog = catalog();
        let plugins = documents(&catalog, &[]);
        let names: Vec<(&str, Vec<&str>)> =
            plugins.iter().map(|p| (p.name, p.tools.iter().map(|t| t.name).collect())).collect();
        assert_eq!(names, [("github", vec!["create_issue", "listPullRequests"]), ("weather", vec!["forecast"])]);
        assert_eq!(plugins[0].summary, "");
        assert_eq!(plugins[1].tools[0].description, "Tomorrow's forecast for a city.");
        assert_eq!(plugins[1].tools[0].parameters, [("repo".to_string(), "owner/name".to_string())]);
        assert_eq!(parameters(&json!({ "type": "object" })), []);
    }

    #[test]
    fn the_users_words_find_the_vendors_tool_in_the_catalog() {
        let index = catalog().search_index();
        let top = |q: &str| index.search(q, None, 1).first().map(|h| format!("{}.{}", h.plugin, h.tool));
        assert_eq!(top("report a bug in a repo").as_deref(), Some("github.create_issue"));
        assert_eq!(top("will it rain tomorrow").as_deref(), Some("weather.forecast"));
    }
}
