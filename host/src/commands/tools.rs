//! `codemode tools`: the catalog a configuration offers (step 2 of
//! `codemode::app`), as a listing, TypeScript declarations, JSON, or the `execute`
//! tool's description.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use codemode::app::{plugin_host, AppOptions};
use codemode::plugins::Severity;

use super::{load_config, none_found, print_result, Search};

/// `codemode tools`: which configuration, and which form of the listing.
#[derive(Args)]
pub struct ToolsArgs {
    /// The configuration file (plugins and limits). Without it: ./codemode.toml, then
    /// $XDG_CONFIG_HOME/codemode/config.toml (~/.config/codemode/config.toml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Offer the bundled example tools (weather.forecast, math.add).
    #[arg(long)]
    example_tools: bool,
    /// Print the TypeScript declarations the MCP server gives agents instead.
    #[arg(long, conflicts_with = "json")]
    typescript: bool,
    /// Print the tools as JSON instead: `[{ "plugin", "tool": <MCP tool definition> }]`.
    #[arg(long)]
    json: bool,
    /// Print the `execute` tool's description exactly as `codemode mcp` gives it to
    /// agents (limits, output cap and `[server] catalog_budget` applied), then its
    /// size on standard error.
    #[arg(long, conflicts_with_all = ["json", "typescript"])]
    description: bool,
}

/// `codemode tools`: every tool as `tools.<plugin>.<tool>(input) -> output`, or the
/// TypeScript declarations, the tools as JSON, or the execute tool's description.
pub async fn list_tools(args: ToolsArgs) -> anyhow::Result<i32> {
    let ToolsArgs { config, example_tools, typescript, json, description } = args;
    let (config, found) = load_config(config.as_deref(), Search::CurrentFolderToo, None)?;
    match &found {
        Some(found) if found.source != codemode::config_discovery::Source::CurrentFolder => {
            eprintln!("codemode: reading {}", found.path.display())
        }
        Some(_) => {}
        None => eprintln!("codemode: {}", none_found(Search::CurrentFolderToo)),
    }
    let options = AppOptions { example_tools, ..AppOptions::of(&config) };
    let (catalog, problems) = Arc::new(plugin_host(&config, &options)).catalog().await;
    // Notes (what a plugin asks for that codemode does not honour) do not fail the command.
    let failed = problems.iter().any(|p| p.severity != Severity::Note);
    for p in problems.iter().filter(|_| typescript || json || description) {
        eprintln!("codemode: {}", p.describe());
    }
    if json {
        let tools: Vec<serde_json::Value> = catalog
            .plugins()
            .flat_map(|(plugin, tools)| {
                tools.map(move |t| serde_json::json!({ "plugin": plugin, "tool": t.definition })).collect::<Vec<_>>()
            })
            .collect();
        print_result(&serde_json::to_string_pretty(&tools)?)?;
        return Ok(if failed { 1 } else { 0 });
    }
    if description {
        // The ranker in use: with a search model where codemode finds one.
        let ranker = if config.search_model().is_some() {
            codemode::tool::semantic::RANKER.to_string()
        } else {
            "BM25 (no search model installed: scripts/demo.sh installs it)".to_string()
        };
        let text = codemode::serve::description::execute_description(
            &catalog,
            &config.limits(),
            config.server.output_bytes,
            config.server.catalog_budget,
            &ranker,
        );
        print_result(text.trim_end())?;
        let tools: usize = catalog.plugins().map(|(_, t)| t.count()).sum();
        eprintln!("codemode: {} characters for {tools} tools", text.chars().count());
        return Ok(if failed { 1 } else { 0 });
    }
    if typescript {
        print_result(codemode::typescript::declarations(&catalog).trim_end())?;
        return Ok(if failed { 1 } else { 0 });
    }
    let mut out = codemode::typescript::listing(&catalog);
    for p in &problems {
        out.push_str(&format!("! {}\n", p.describe()));
    }
    print_result(out.trim_end())?;
    Ok(if failed { 1 } else { 0 })
}
