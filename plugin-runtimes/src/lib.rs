//! Plugin runtimes behind `tools.<plugin>.<tool>`.
//!
//! 1. [`PluginHost`] holds one [`PluginRuntime`] per configured plugin ([`runtime`]: the
//!    seam every kind implements), asks each for its tools, and builds the [`Catalog`]
//!    the executor serves from;
//! 2. when a plugin announces that its tools changed, the host asks it again and hands
//!    the new catalog to its [`CatalogFeed`] (the executor), which every later program
//!    sees; unavailable plugins are tried again in the background;
//! 3. a plugin that cannot start is reported and left out; it never stops the others.
//!
//! Runtimes: [`process`] (any executable speaking JSON-RPC over stdio), [`javascript`]
//! (a plugin folder run by the sandboxed plugin runtime, driven as a process plugin,
//! whose `api.net.fetch` the host serves through [`net`]) and [`mcp`] (MCP servers,
//! over stdio or streamable HTTP). The child processes they start (command, stderr
//! tail, restart backoff) are handled in one place, [`child`]; their configured
//! settings and secrets are resolved by [`settings`].

pub mod child;
#[cfg(test)]
mod fixed;
pub mod javascript;
pub mod mcp;
pub mod net;
pub mod oauth;
pub mod process;
pub mod runtime;
pub mod settings;
pub mod tls;
pub mod workspace;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;

use codemode_core::tool::catalog::CatalogFeed;
use codemode_core::tool::{Catalog, Recover, Tool};
use mcp::McpPlugin;
use process::ProcessPlugin;
pub use runtime::{Listed, PluginRuntime};

/// A plugin's changes are re-listed at most once per this interval, however often it
/// announces them; the first change after a quiet interval waits [`CHANGE_DEBOUNCE`]
/// for the rest of its burst.
pub const CHANGE_INTERVAL: Duration = Duration::from_secs(1);
/// See [`CHANGE_INTERVAL`].
const CHANGE_DEBOUNCE: Duration = Duration::from_millis(50);

/// One plugin's last listing: its tools (checked and compiled, with the configuration's
/// approvals and scopes applied) and what to say about it, or why it is unavailable.
#[derive(Clone, Default)]
struct Listing {
    tools: Vec<Tool>,
    problems: Vec<LoadProblem>,
    unavailable: Option<String>,
}

impl Listing {
    /// True when `other` offers the same tools (the same definitions) and says the same.
    fn same_as(&self, other: &Listing) -> bool {
        self.unavailable == other.unavailable
            && self.problems == other.problems
            && self.tools.len() == other.tools.len()
            && self.tools.iter().zip(&other.tools).all(|(a, b)| a.definition == b.definition)
    }
}

/// The first pause of the background retries of unavailable plugins; it doubles up to
/// [`MAX_BACKGROUND_RETRY`] while some stay unavailable.
const FIRST_BACKGROUND_RETRY: Duration = Duration::from_secs(1);
const MAX_BACKGROUND_RETRY: Duration = Duration::from_secs(60);

/// The running plugins.
pub struct PluginHost {
    /// Every configured plugin's runtime, whatever its kind.
    runtimes: Vec<Arc<dyn PluginRuntime>>,
    base: Catalog,
    /// Tools the configuration marks as needing approval, by plugin (`"*"`: all).
    approvals: std::collections::HashMap<String, Vec<String>>,
    /// One-line summaries by plugin, from the configuration.
    summaries: std::collections::HashMap<String, String>,
    /// Skills, agents and `AGENTS.md` by plugin (seed 001, from its files), put in the
    /// catalog while the plugin is available.
    guidance: std::collections::HashMap<String, codemode_core::tool::skills::Guidance>,
    /// Skills of no plugin (`[[skills]]` folders).
    standalone_skills: Vec<codemode_core::tool::skills::Skill>,
    /// The scopes offered (tools of other scopes are left out).
    scopes: Vec<String>,
    /// Where the catalogs this host rebuilds go, and the current one is read from (the
    /// executor: [`PluginHost::keep_current`]).
    feed: Mutex<Option<Weak<dyn CatalogFeed>>>,
    /// One rebuild of the catalog at a time.
    rebuilding: tokio::sync::Mutex<()>,
    /// Wakes the background retries (a call found a plugin unavailable).
    retry_now: Arc<tokio::sync::Notify>,
    /// Plugins whose files could not be used when the configuration was read, with
    /// why: unavailable until the configuration is read again.
    unreadable: Vec<(String, String)>,
    /// Every plugin's last listing, by name: a change re-lists only its plugin.
    listings: Mutex<std::collections::BTreeMap<String, Listing>>,
}

/// Something to say about a plugin as it loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    /// The plugin.
    pub plugin: String,
    /// What went wrong (with the last lines of its stderr when it wrote some).
    pub reason: String,
    /// How much of the plugin it affects.
    pub severity: Severity,
}

/// How much of a plugin a [`LoadProblem`] affects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The whole plugin is unavailable.
    Unavailable,
    /// Something in its configuration or its tools is wrong (the rest loads).
    Problem,
    /// It loaded, but asks for something codemode does not honour, or leaves something
    /// out on purpose (said once, at load).
    Note,
}

impl LoadProblem {
    /// True when the whole plugin is unavailable.
    pub fn unavailable(&self) -> bool {
        self.severity == Severity::Unavailable
    }

    /// The problem as one line.
    pub fn describe(&self) -> String {
        match self.severity {
            Severity::Unavailable => format!("plugin {} is unavailable: {}", self.plugin, self.reason),
            Severity::Problem => format!("plugin {}: {}", self.plugin, self.reason),
            Severity::Note => format!("plugin {} (note): {}", self.plugin, self.reason),
        }
    }
}

/// Tries one unavailable plugin again when a program calls it.
struct RecoverPlugin {
    host: Weak<PluginHost>,
    plugin: String,
}

impl Recover for RecoverPlugin {
    fn recover(&self) -> BoxFuture<'static, ()> {
        let (host, plugin) = (self.host.clone(), self.plugin.clone());
        Box::pin(async move {
            let Some(host) = host.upgrade() else { return };
            host.retry_now.notify_one();
            if host.retry_in(&plugin).is_zero() {
                host.refresh(std::slice::from_ref(&plugin)).await;
            }
        })
    }
}

impl PluginHost {
    /// Process plugins on top of `base` (tools served in-process, such as the examples).
    /// A thin wrapper over [`PluginHost::with_runtimes`].
    pub fn new(base: Catalog, process: Vec<Arc<ProcessPlugin>>) -> Self {
        Self::with_runtimes(base, process.into_iter().map(|p| p as Arc<dyn PluginRuntime>).collect())
    }

    /// Plugins of any kind, each through its runtime, on top of `base`.
    pub fn with_runtimes(base: Catalog, runtimes: Vec<Arc<dyn PluginRuntime>>) -> Self {
        Self {
            runtimes,
            base,
            approvals: Default::default(),
            summaries: Default::default(),
            guidance: Default::default(),
            standalone_skills: Vec::new(),
            scopes: Vec::new(),
            feed: Mutex::new(None),
            rebuilding: tokio::sync::Mutex::new(()),
            retry_now: Arc::new(tokio::sync::Notify::new()),
            unreadable: Vec::new(),
            listings: Mutex::new(std::collections::BTreeMap::new()),
        }
    }

    /// Plugins whose files could not be used (each with why): listed as unavailable,
    /// never started.
    pub fn with_unreadable(mut self, unreadable: Vec<(String, String)>) -> Self {
        self.unreadable = unreadable;
        self
    }

    /// Marks tools as needing a person's approval for every call, by plugin (`"*"`:
    /// every tool of the plugin), on top of what the plugins themselves mark.
    pub fn with_approvals(mut self, approvals: std::collections::HashMap<String, Vec<String>>) -> Self {
        self.approvals = approvals;
        self
    }

    /// Gives plugins their one-line summaries (shown for large catalogs), by plugin.
    pub fn with_summaries(mut self, summaries: std::collections::HashMap<String, String>) -> Self {
        self.summaries = summaries;
        self
    }

    /// Each plugin's skills, agents and `AGENTS.md` (seed 001), and the skills of no
    /// plugin (`[[skills]]` folders): in the catalog beside the tools.
    pub fn with_skills(
        mut self,
        guidance: std::collections::HashMap<String, codemode_core::tool::skills::Guidance>,
        standalone: Vec<codemode_core::tool::skills::Skill>,
    ) -> Self {
        self.guidance = guidance;
        self.standalone_skills = standalone;
        self
    }

    /// The scopes this host offers tools of (seed 000's `scope`): a tool with any other
    /// scope is left out, with a note.
    pub fn with_scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = scopes;
        self
    }

    /// Adds MCP servers (after the plugins already added).
    pub fn with_mcp(mut self, servers: Vec<Arc<McpPlugin>>) -> Self {
        self.runtimes.extend(servers.into_iter().map(|s| s as Arc<dyn PluginRuntime>));
        self
    }

    /// The runtime of `plugin` (the first configured under that name).
    fn runtime(&self, plugin: &str) -> Option<&Arc<dyn PluginRuntime>> {
        self.runtimes.iter().find(|r| r.name() == plugin)
    }

    /// How long until `plugin` may be tried again (zero: now).
    fn retry_in(&self, plugin: &str) -> Duration {
        self.runtime(plugin).map(|r| r.retry_in()).unwrap_or_default()
    }

    /// Asks every plugin for its tools and builds the catalog. A plugin that cannot be
    /// started is in the catalog as unavailable, with the reason (and the last lines of
    /// its stderr) and a way to try it again; a plugin still backing off after a
    /// failure is not started now.
    pub async fn catalog(self: &Arc<Self>) -> (Catalog, Vec<LoadProblem>) {
        let names: Vec<String> = self.plugin_names().collect();
        let listed = futures::future::join_all(names.iter().map(|name| self.list_plugin(name))).await;
        let mut listings = self.listings.lock().unwrap_or_else(|p| p.into_inner());
        for (name, listing) in names.into_iter().zip(listed) {
            listings.insert(name, listing);
        }
        self.assemble(&listings)
    }

    /// Every configured plugin's name (of every runtime kind).
    fn plugin_names(&self) -> impl Iterator<Item = String> + '_ {
        self.runtimes.iter().map(|r| r.name().to_string())
    }

    /// Asks one plugin for its tools: what it offers now, checked and compiled, with
    /// the configuration's approvals and scopes applied, or why it is unavailable.
    async fn list_plugin(self: &Arc<Self>, plugin: &str) -> Listing {
        let listed = match self.runtime(plugin) {
            Some(runtime) => Arc::clone(runtime).list().await,
            None => Err(format!("no plugin is configured as {plugin}")),
        };
        let mut problems = Vec::new();
        let Listed { tools, notes } = match listed {
            Ok(listed) => listed,
            Err(reason) => {
                tracing::warn!("plugin {plugin}: {reason}");
                problems.push(LoadProblem {
                    plugin: plugin.to_string(),
                    reason: reason.clone(),
                    severity: Severity::Unavailable,
                });
                return Listing { tools: Vec::new(), problems, unavailable: Some(reason) };
            }
        };
        problems.extend(notes.into_iter().map(|reason| LoadProblem {
            plugin: plugin.to_string(),
            reason,
            severity: Severity::Note,
        }));
        let approve = self.approvals.get(plugin);
        // A mistyped name would leave a tool running without approval: say so.
        for name in approve.into_iter().flatten().filter(|n| *n != "*" && !tools.iter().any(|(_, d)| d.name == **n)) {
            let have: Vec<&str> = tools.iter().map(|(_, d)| d.name.as_str()).collect();
            problems.push(LoadProblem {
                plugin: plugin.to_string(),
                reason: format!(
                    "require_approval names {name}, which this plugin does not have (its tools: {})",
                    have.join(", ")
                ),
                severity: Severity::Problem,
            });
        }
        let mut checked = Vec::new();
        for (handler, mut definition) in tools {
            if let Some(scope) = definition.scope.as_ref().filter(|s| !self.scopes.contains(s)) {
                problems.push(LoadProblem {
                    plugin: plugin.to_string(),
                    reason: format!(
                        "tool {} is offered only in the scope {scope:?}, which this configuration does not serve; add scopes = [{scope:?}] to offer it",
                        definition.name
                    ),
                    severity: Severity::Note,
                });
                continue;
            }
            if approve.is_some_and(|names| names.iter().any(|n| n == "*" || *n == definition.name)) {
                definition.requires_approval = codemode_core::tool::Approval::Always;
            }
            match Catalog::checked(plugin, Tool::new(definition, handler)) {
                Ok(tool) => checked.push(tool),
                Err(e) => problems.push(LoadProblem {
                    plugin: plugin.to_string(),
                    reason: e.to_string(),
                    severity: Severity::Problem,
                }),
            }
        }
        for p in problems.iter().filter(|p| p.severity == Severity::Problem) {
            tracing::warn!("plugin {}: {}", p.plugin, p.reason);
        }
        Listing { tools: checked, problems, unavailable: None }
    }

    /// The catalog made of the base tools and every plugin's last listing, and what to
    /// say about it. Nothing is asked of any plugin: the tools are already checked.
    fn assemble(
        self: &Arc<Self>,
        listings: &std::collections::BTreeMap<String, Listing>,
    ) -> (Catalog, Vec<LoadProblem>) {
        let mut catalog = self.base.clone();
        let mut problems = Vec::new();
        for (plugin, reason) in &self.unreadable {
            catalog.mark_unavailable(plugin, reason.clone(), None);
            problems.push(LoadProblem {
                plugin: plugin.clone(),
                reason: reason.clone(),
                severity: Severity::Unavailable,
            });
        }
        for (plugin, listing) in listings {
            problems.extend(listing.problems.iter().cloned());
            if let Some(reason) = &listing.unavailable {
                let recover = Arc::new(RecoverPlugin { host: Arc::downgrade(self), plugin: plugin.clone() });
                catalog.mark_unavailable(plugin, reason.clone(), Some(recover as Arc<dyn Recover>));
                continue;
            }
            for tool in &listing.tools {
                if let Some(why) = self.unknown_owner(plugin, tool) {
                    problems.push(LoadProblem { plugin: plugin.clone(), reason: why, severity: Severity::Problem });
                    continue;
                }
                if let Err(e) = catalog.add(plugin, tool.clone()) {
                    problems.push(LoadProblem {
                        plugin: plugin.clone(),
                        reason: e.to_string(),
                        severity: Severity::Problem,
                    });
                }
            }
        }
        for (plugin, summary) in &self.summaries {
            catalog.set_summary(plugin, summary);
        }
        for (plugin, guidance) in &self.guidance {
            if listings.get(plugin).is_some_and(|l| l.unavailable.is_none()) {
                catalog.set_guidance(plugin, guidance.clone());
            }
        }
        catalog.add_standalone_skills(self.standalone_skills.iter().cloned());
        (catalog, problems)
    }

    /// Why `tool` of `plugin` is refused, when it names an owner (`owner`, seed 001's
    /// private tools) that is none of the plugin's skills and agents: it could never be
    /// unlocked.
    fn unknown_owner(&self, plugin: &str, tool: &Tool) -> Option<String> {
        let owner = tool.definition.owner.as_deref()?;
        let guidance = self.guidance.get(plugin);
        let known = guidance
            .is_some_and(|g| g.skills.iter().any(|s| s.folder == owner) || g.agents.iter().any(|a| a.folder == owner));
        (!known).then(|| {
            format!(
                "tool {} is not offered: it is private to {owner:?}, which is none of the plugin's skills (a folder with SKILL.md) and agents",
                tool.definition.name
            )
        })
    }

    /// Asks only `plugins` for their tools again, rebuilds the catalog from every
    /// plugin's last listing, and hands it to the feed (when there is one).
    /// When nothing they list changed (a plugin announcing changes it did not make),
    /// the catalog stays as it is and nobody is told.
    async fn refresh(self: &Arc<Self>, plugins: &[String]) {
        if plugins.is_empty() {
            return;
        }
        let _one = self.rebuilding.lock().await;
        let listed = futures::future::join_all(plugins.iter().map(|name| self.list_plugin(name))).await;
        let catalog = {
            let mut listings = self.listings.lock().unwrap_or_else(|p| p.into_inner());
            let mut changed = false;
            for (name, listing) in plugins.iter().zip(listed) {
                changed |= listings.get(name).is_none_or(|old| !old.same_as(&listing));
                listings.insert(name.clone(), listing);
            }
            if !changed {
                return;
            }
            self.assemble(&listings).0
        };
        if let Some(feed) = self.feed() {
            feed.replace(catalog);
        }
    }

    /// The feed, while it lives.
    fn feed(&self) -> Option<Arc<dyn CatalogFeed>> {
        self.feed.lock().ok().and_then(|f| f.as_ref().and_then(Weak::upgrade))
    }

    /// Keeps `feed`'s catalog current (the executor's): whenever a plugin announces a
    /// change, the catalog is rebuilt and replaced; unavailable plugins are tried again
    /// in the background, with a pause that doubles from 1 s to a minute while some stay
    /// unavailable, and at once when a program calls one. Ends when the host is dropped.
    pub fn keep_current<F: CatalogFeed>(self: &Arc<Self>, feed: Arc<F>) {
        let feed: Arc<dyn CatalogFeed> = feed;
        if let Ok(mut slot) = self.feed.lock() {
            *slot = Some(Arc::downgrade(&feed));
        }
        let watches = self.runtimes.iter().map(|r| (r.name().to_string(), r.watch_changes()));
        for (plugin, mut changes) in watches {
            // Weak: this task must not keep the plugins alive.
            let host = Arc::downgrade(self);
            tokio::spawn(async move {
                let mut last: Option<tokio::time::Instant> = None;
                while changes.changed().await.is_ok() {
                    // Coalesced: every change announced while this waits is one re-list
                    // of this plugin alone, at most once per CHANGE_INTERVAL.
                    let since = last.map_or(CHANGE_INTERVAL, |l| l.elapsed());
                    tokio::time::sleep(CHANGE_DEBOUNCE.max(CHANGE_INTERVAL.saturating_sub(since))).await;
                    changes.borrow_and_update();
                    let Some(host) = host.upgrade() else { return };
                    host.refresh(std::slice::from_ref(&plugin)).await;
                    last = Some(tokio::time::Instant::now());
                }
            });
        }
        let host = Arc::downgrade(self);
        let woken = Arc::clone(&self.retry_now);
        tokio::spawn(async move {
            let mut pause = FIRST_BACKGROUND_RETRY;
            loop {
                let Some(strong) = host.upgrade() else { return };
                // Only plugins with a runtime to start again (one whose files could not be
                // read stays unavailable until the configuration is read again).
                let unavailable: Vec<String> = strong.feed().map_or_else(Vec::new, |feed| {
                    feed.current()
                        .unavailable_plugins()
                        .map(|(p, _)| p.to_string())
                        .filter(|p| strong.plugin_names().any(|n| n == *p))
                        .collect()
                });
                if unavailable.is_empty() {
                    pause = FIRST_BACKGROUND_RETRY;
                } else if unavailable.iter().any(|p| strong.retry_in(p).is_zero()) {
                    // Only the unavailable plugins are asked again (the rest keep their
                    // last listing).
                    let due: Vec<String> = unavailable.into_iter().filter(|p| strong.retry_in(p).is_zero()).collect();
                    strong.refresh(&due).await;
                    pause = (pause * 2).min(MAX_BACKGROUND_RETRY);
                }
                // Never hold the host while waiting: dropping it must end its plugins.
                drop(strong);
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = woken.notified() => {}
                }
            }
        });
    }
}
