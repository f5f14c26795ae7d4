//! The composition root: what `codemode run`, `tools`, `mcp` and `serve` build from a
//! [`Config`] before each does its own work, in one ordered sequence.
//!
//! 1. The plugins ([`plugin_host`]): the example tools when asked, the process
//!    plugins, the JavaScript plugins (each in the worker's plugin runtime, under the
//!    sandbox policy), the plugins whose files cannot be used, the MCP servers, and
//!    the configuration's approvals, summaries and scopes.
//! 2. Their catalog, with what went wrong loading each plugin ([`LoadProblem`]).
//! 3. The [`Executor`] over that catalog: the limits, the worker binary, the sandbox
//!    policy, the launch mode, the warm pool and the search model ([`AppOptions`]).
//!    A search model given here has the catalog's tools embedded before the first
//!    program starts.
//! 4. The plugins keep the executor's catalog current as their tools change.
//!
//! `tools` stops after step 2 ([`plugin_host`]); `run`, `mcp` and `serve` take the
//! whole [`App`]. Integration tests build one the same way (`tests/app.rs`), without
//! spawning the binary.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::examples::example_catalog;
use crate::plugins::mcp::McpPlugin;
use crate::plugins::process::ProcessPlugin;
use crate::plugins::{LoadProblem, PluginHost};
use crate::tool::semantic::Semantic;
use crate::{Catalog, Executor, ExecutorError, LaunchMode, Limits, SandboxPolicy};

/// How to build an [`App`] from a configuration: what the command line adds to it.
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// Offer the bundled example tools (`weather.forecast`, `math.add`), whatever the
    /// configuration's `example_tools` says.
    pub example_tools: bool,
    /// The sandbox-worker binary: it runs the programs and the JavaScript plugins.
    pub worker: PathBuf,
    /// Whether every sandbox layer must apply.
    pub sandbox: SandboxPolicy,
    /// How workers start.
    pub launch: LaunchMode,
    /// The limits every program runs under.
    pub limits: Limits,
    /// Workers kept forked ahead of demand (0: none).
    pub warm_workers: usize,
    /// `tools.$search`'s sentence encoder, loaded ([`load_search_model`]); without it,
    /// search ranks by words alone (until [`Executor::set_semantic`]).
    pub semantic: Option<Arc<Semantic>>,
}

impl AppOptions {
    /// What `config` implies on its own: its limits and warm pool, the default worker
    /// ([`crate::default_worker_path`]), every sandbox layer required, workers started
    /// as [`LaunchMode::Auto`] decides, no example tools beyond the configuration's and
    /// no search model.
    pub fn of(config: &Config) -> Self {
        Self {
            example_tools: false,
            worker: crate::default_worker_path(),
            sandbox: SandboxPolicy::Required,
            launch: LaunchMode::Auto,
            limits: config.limits(),
            warm_workers: config.server.warm_workers.unwrap_or_else(crate::launcher::default_warm_workers),
            semantic: None,
        }
    }
}

/// Why an [`App`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The executor did not start.
    #[error("starting the executor")]
    Executor(#[source] ExecutorError),
    /// Embedding the catalog's tools for the search model did not finish.
    #[error(transparent)]
    Embedding(#[from] tokio::task::JoinError),
}

/// The plugins and the executor serving their tools to programs, built from one
/// configuration.
pub struct App {
    /// The plugins, keeping the executor's catalog current.
    pub plugins: Arc<PluginHost>,
    /// The executor.
    pub executor: Arc<Executor>,
    /// What went wrong loading each plugin (an unavailable plugin's tools are missing
    /// from the catalog; the others load).
    pub problems: Vec<LoadProblem>,
}

impl App {
    /// Builds the plugins, their catalog and the executor (steps 1 to 4 of the module
    /// docs).
    pub async fn from_config(config: &Config, options: AppOptions) -> Result<Self, AppError> {
        let plugins = Arc::new(plugin_host(config, &options));
        let (catalog, problems) = plugins.catalog().await;
        let executor = Executor::builder()
            .worker_path(&options.worker)
            .launch_mode(options.launch)
            .limits(options.limits)
            .catalog(catalog)
            .sandbox(options.sandbox)
            .warm_workers(options.warm_workers)
            .semantic(options.semantic)
            .build()
            .await
            .map_err(AppError::Executor)?;
        let executor = Arc::new(executor);
        if let Some(semantic) = executor.semantic().cloned() {
            let catalog = executor.catalog();
            tokio::task::spawn_blocking(move || catalog.search_index().build_dense(&semantic)).await?;
        }
        plugins.keep_current(Arc::clone(&executor));
        Ok(Self { plugins, executor, problems })
    }
}

/// The configured plugins (step 1): the example tools when `options` or the
/// configuration asks for them; JavaScript plugins run in `options.worker`'s plugin
/// runtime under `options.sandbox`.
pub fn plugin_host(config: &Config, options: &AppOptions) -> PluginHost {
    let base = if options.example_tools || config.example_tools { example_catalog() } else { Catalog::new() };
    let javascript =
        config.javascript_plugins().into_iter().map(|p| p.process_config(&options.worker, options.sandbox));
    PluginHost::new(base, config.process_plugins().into_iter().chain(javascript).map(ProcessPlugin::new).collect())
        .with_unreadable(config.unreadable_javascript_plugins())
        .with_mcp(config.mcp_servers().into_iter().map(McpPlugin::new).collect())
        .with_approvals(config.approvals())
        .with_summaries(config.summaries())
        .with_skills(config.guidance(), config.standalone_skills.clone())
        .with_scopes(config.scopes.clone())
}

/// Loads the search model in the folder `model` on a blocking thread (its files are
/// read within their bounds and checked: `crate::tool::bounded_file`), with its cache
/// where the environment says; the error says why it cannot be used.
pub async fn load_search_model(model: PathBuf) -> Result<Arc<Semantic>, String> {
    let env = |name: &str| std::env::var(name).ok();
    let cache = crate::tool::semantic::cache_folder(&env);
    let loaded = tokio::task::spawn_blocking(move || Semantic::load(&model, cache.as_deref())).await;
    match loaded {
        Ok(Ok(semantic)) => Ok(Arc::new(semantic)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}
