//! The catalog fixture (`fixtures/catalog/servers/`: 1,818 tools written down from 85
//! real MCP servers' tool lists) as a real catalog, for the search evaluation
//! (`catalog_search.rs`) and the search benchmark (`benches/search.rs`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use codemode::tool::{Catalog, Tool, ToolDefinition, ToolResult};
use serde_json::Value;

pub fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/catalog"))
}

pub fn json_files(dir: &Path, prefix: &str) -> Vec<Value> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("fixture folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            serde_json::from_str(&std::fs::read_to_string(p).expect("readable"))
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        })
        .collect()
}

/// The fixture catalog, every tool as a real catalog entry (names and schemas checked).
pub fn fixture_catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for server in json_files(&fixtures().join("servers"), "") {
        let plugin = server["plugin"].as_str().expect("plugin name");
        for tool in server["tools"].as_array().expect("tools") {
            let definition = ToolDefinition::new(
                tool["name"].as_str().expect("tool name"),
                tool["description"].as_str().expect("description"),
                tool["inputSchema"].clone(),
            );
            catalog
                .add(plugin, Tool::from_fn(definition, |_, _| async { ToolResult::text("x") }))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        catalog.set_summary(plugin, server["summary"].as_str().unwrap_or_default());
    }
    catalog
}
