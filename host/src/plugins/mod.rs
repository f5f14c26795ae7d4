//! Plugin runtimes behind `tools.<plugin>.<tool>`.
//!
//! [`PluginHost`] starts the configured plugins, asks each for its tools, and builds the
//! [`Catalog`] the executor serves from. When a plugin announces that its tools changed,
//! the host asks it again and hands the executor a new catalog, which every later
//! program sees. A plugin that cannot start is reported and left out; it never stops the
//! others.
//!
//! Runtimes: [`process`] (any executable speaking JSON-RPC over stdio), [`javascript`]
//! (a plugin folder run by the sandboxed plugin runtime, driven as a process plugin,
//! whose `api.net.fetch` the host serves through [`net`]) and [`mcp`] (MCP servers,
//! over stdio or streamable HTTP).

pub mod javascript;
pub mod mcp;
pub mod net;
pub mod process;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::catalog::{CallContext, Catalog, Tool, ToolDefinition, ToolHandler, ToolResult};
use crate::executor::Executor;
use mcp::McpPlugin;
use process::ProcessPlugin;

/// A tool served by an MCP server.
struct McpTool {
    plugin: Arc<McpPlugin>,
    tool: String,
}

impl ToolHandler for McpTool {
    fn call(&self, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult> {
        let (plugin, tool) = (Arc::clone(&self.plugin), self.tool.clone());
        Box::pin(async move { plugin.call_tool(&tool, input, context.cancel.clone()).await })
    }
}

/// A tool served by a process plugin.
struct ProcessTool {
    plugin: Arc<ProcessPlugin>,
    tool: String,
}

impl ToolHandler for ProcessTool {
    fn call(&self, input: Value, context: CallContext) -> BoxFuture<'static, ToolResult> {
        let (plugin, tool) = (Arc::clone(&self.plugin), self.tool.clone());
        Box::pin(async move {
            plugin.call_tool(&tool, input, context.wire(), context.cancel.clone()).await
        })
    }
}

/// The running plugins.
pub struct PluginHost {
    process: Vec<Arc<ProcessPlugin>>,
    mcp: Vec<Arc<McpPlugin>>,
    base: Catalog,
    /// Tools the configuration marks as needing approval, by plugin (`"*"`: all).
    approvals: std::collections::HashMap<String, Vec<String>>,
}

/// A plugin that could not be loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    /// The plugin.
    pub plugin: String,
    /// What went wrong.
    pub reason: String,
}

impl PluginHost {
    /// Plugins on top of `base` (tools served in-process, such as the examples).
    pub fn new(base: Catalog, process: Vec<Arc<ProcessPlugin>>) -> Self {
        Self { process, mcp: Vec::new(), base, approvals: Default::default() }
    }

    /// Marks tools as needing a person's approval for every call, by plugin (`"*"`:
    /// every tool of the plugin), on top of what the plugins themselves mark.
    pub fn with_approvals(mut self, approvals: std::collections::HashMap<String, Vec<String>>) -> Self {
        self.approvals = approvals;
        self
    }

    /// Adds MCP servers.
    pub fn with_mcp(mut self, servers: Vec<Arc<McpPlugin>>) -> Self {
        self.mcp = servers;
        self
    }

    /// Asks every plugin for its tools and builds the catalog; plugins that fail are
    /// left out and reported.
    pub async fn catalog(&self) -> (Catalog, Vec<LoadProblem>) {
        let process = futures::future::join_all(self.process.iter().map(|p| async move {
            let listed = p.list_tools().await.map(|defs| {
                defs.into_iter().map(|d| (Arc::new(ProcessTool { plugin: Arc::clone(p), tool: d.name.clone() }) as Arc<dyn ToolHandler>, d)).collect()
            });
            (p.name().to_string(), listed)
        }));
        let mcp = futures::future::join_all(self.mcp.iter().map(|p| async move {
            let listed = p.list_tools().await.map(|defs| {
                defs.into_iter().map(|d| (Arc::new(McpTool { plugin: Arc::clone(p), tool: d.name.clone() }) as Arc<dyn ToolHandler>, d)).collect()
            });
            (p.name().to_string(), listed)
        }));
        let (process, mcp) = futures::join!(process, mcp);
        let mut catalog = self.base.clone();
        let mut problems = Vec::new();
        for (plugin, listed) in process.into_iter().chain(mcp) {
            let listed: Result<Vec<(Arc<dyn ToolHandler>, ToolDefinition)>, _> = listed;
            match listed {
                Err(e) => problems.push(LoadProblem { plugin, reason: e.to_string() }),
                Ok(tools) => {
                    let approve = self.approvals.get(&plugin);
                    // A mistyped name would leave a tool running without approval: say so.
                    for name in approve.into_iter().flatten().filter(|n| *n != "*" && !tools.iter().any(|(_, d)| d.name == **n)) {
                        let have: Vec<&str> = tools.iter().map(|(_, d)| d.name.as_str()).collect();
                        problems.push(LoadProblem { plugin: plugin.clone(), reason: format!("require_approval names {name}, which this plugin does not have (its tools: {})", have.join(", ")) });
                    }
                    for (handler, mut definition) in tools {
                        if approve.is_some_and(|names| names.iter().any(|n| n == "*" || *n == definition.name)) {
                            definition.requires_approval = true;
                        }
                        if let Err(e) = catalog.add(&plugin, Tool::new(definition, handler)) {
                            problems.push(LoadProblem { plugin: plugin.clone(), reason: e.to_string() });
                        }
                    }
                }
            }
        }
        for p in &problems {
            tracing::warn!("plugin {}: {}", p.plugin, p.reason);
        }
        (catalog, problems)
    }

    /// Keeps `executor`'s catalog current: whenever a plugin announces a change, the
    /// catalog is rebuilt and replaced. Ends when the host is dropped.
    pub fn keep_current(self: &Arc<Self>, executor: Arc<Executor>) {
        let watches = self.process.iter().map(|p| p.watch_changes()).chain(self.mcp.iter().map(|p| p.watch_changes()));
        for mut changes in watches {
            // Weak on both sides: this task must not keep the executor or the plugins alive.
            let (host, executor) = (Arc::downgrade(self), Arc::downgrade(&executor));
            tokio::spawn(async move {
                while changes.changed().await.is_ok() {
                    let (Some(host), Some(executor)) = (host.upgrade(), executor.upgrade()) else { return };
                    let (catalog, _) = host.catalog().await;
                    executor.set_catalog(catalog);
                }
            });
        }
    }
}
