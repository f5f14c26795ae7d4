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

/// Indexes every tool of `catalog` (hidden ones too: they are callable, but count half),
/// each plugin with its summary and each tool with its input schema's parameters.
pub fn index(catalog: &Catalog) -> SearchIndex {
    SearchIndex::build(&documents(catalog))
}

/// The catalog's plugins and tools as the search crate indexes them, in the catalog's
/// order.
fn documents(catalog: &Catalog) -> Vec<PluginDocuments<'_>> {
    catalog
        .plugins()
        .map(|(plugin, tools)| PluginDocuments {
            name: plugin,
            summary: catalog.summary(plugin).unwrap_or_default(),
            tools: tools
                .map(|tool| {
                    let d = &tool.definition;
                    Document {
                        name: &d.name,
                        description: &d.description,
                        parameters: parameters(&d.input_schema),
                        hidden: d.hidden,
                    }
                })
                .collect(),
        })
        .collect()
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
        let plugins = documents(&catalog);
        let names: Vec<(&str, Vec<&str>)> =
            plugins.iter().map(|p| (p.name, p.tools.iter().map(|t| t.name).collect())).collect();
        assert_eq!(names, [("github", vec!["create_issue", "listPullRequests"]), ("weather", vec!["forecast"])]);
        assert_eq!(plugins[0].summary, "");
        assert_eq!(plugins[1].tools[0].description, "Tomorrow's forecast for a city.");
        assert_eq!(plugins[1].tools[0].parameters, [("repo".to_string(), "owner/name".to_string())]);
        assert!(!plugins[1].tools[0].hidden);
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
