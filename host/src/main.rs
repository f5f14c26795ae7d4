//! `codemode`: the command line of the codemode host.
//!
//! `codemode run FILE|-` runs one program and prints what an agent would read;
//! `--json` prints the structured outcome instead. Exit codes: 0 ok, 1 the program
//! failed (threw, stuck, unserialisable result), 3 a limit stopped it, 4 the worker
//! crashed or the host could not run it, 2 a usage or configuration mistake (a bad
//! flag, a limit out of range, a missing or empty program, an invalid configuration).
//!
//! `codemode mcp` serves MCP on standard input and output; `codemode serve --listen
//! ADDR` on streamable HTTP. Both read the same configuration file as `run`.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use codemode::examples::example_catalog;

use codemode::config::{Config, ConfigError};
use codemode::limits::{LimitError, LimitOverrides, LimitSource};
use codemode::plugins::mcp::McpPlugin;
use codemode::plugins::process::ProcessPlugin;
use codemode::plugins::{PluginHost, Severity};
use codemode::{Catalog, Executor, LaunchMode, OutcomeKind, SandboxPolicy};

#[derive(Parser)]
#[command(name = "codemode", version, about = "Runs agent-written JavaScript programs in sandboxed workers")]
struct Cli {
    /// Log verbosity on stderr (error, warn, info, debug, trace; or tracing's per-target
    /// directives). By default the MCP SDK's own log is off: codemode reports what it
    /// makes fail in its own words.
    #[arg(long, global = true, env = "CODEMODE_LOG", default_value = "warn,rmcp=off")]
    log: String,
    /// How log lines are written on stderr: `text` for people, `json` (one object per
    /// line) for a log shipper. With `--log info` (or `codemode::program=info`), every
    /// program ends in one event: id, caller, outcome kind, duration, tool calls, sizes.
    #[arg(long, global = true, env = "CODEMODE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Put each program's text into its log event (off by default: programs may hold
    /// what tools returned). Tool inputs are never logged.
    #[arg(long, global = true)]
    log_program_text: bool,
    #[command(subcommand)]
    command: Command,
}

/// `--log-format`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run one program (a file, or - for standard input) and print its result.
    Run(RunArgs),
    /// Print the rules of every enabled plugin, each under a heading with its name.
    Rules {
        /// The configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// List the tools a program may call, with their signatures.
    Tools(ToolsArgs),
    /// Serve MCP on standard input and output (for an agent that starts codemode).
    Mcp(ServeArgs),
    /// Serve MCP over streamable HTTP.
    Serve {
        #[command(flatten)]
        common: ServeArgs,
        /// Where to listen. Loopback by default; anything else needs --allow-remote.
        #[arg(long, default_value = "127.0.0.1:8931")]
        listen: std::net::SocketAddr,
        /// Allow listening on a non-loopback address (a bearer token is then required).
        #[arg(long)]
        allow_remote: bool,
        /// The environment variable holding the bearer token clients must send. When it
        /// is set, every request needs `Authorization: Bearer <token>`.
        #[arg(long, default_value = "CODEMODE_TOKEN")]
        token_env: String,
        /// Serve HTTPS with this certificate chain (PEM); needs --tls-key. Overrides
        /// `[server] tls_cert`.
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The certificate's private key (PEM).
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// A browser origin allowed to call the server (repeatable), on top of
        /// `[server] allowed_origins`; a loopback server always allows the loopback origins.
        #[arg(long = "allow-origin", value_name = "ORIGIN")]
        allow_origins: Vec<String>,
        /// Answer every request on its own, with no MCP session, so that any replica
        /// behind a load balancer can take any request (overrides `[server] stateless`).
        /// Approvals through elicitation and list changes need a session: without one,
        /// tools that need approval are refused and clients see catalog changes on
        /// their next tools/list.
        #[arg(long)]
        stateless: bool,
        /// Serve /healthz, /readyz and Prometheus /metrics on this address (overrides
        /// `[server] ops_listen`).
        #[arg(long, value_name = "ADDR")]
        ops_listen: Option<std::net::SocketAddr>,
        /// This replica's own MCP URL as the other replicas reach it (overrides
        /// `[server] replica_url`): a 2026-07-28 client's retry that reaches another
        /// replica is passed on to the one holding its program.
        #[arg(long, value_name = "URL")]
        replica_url: Option<String>,
    },
    /// Log in to MCP servers that ask for OAuth, and see or forget what is stored.
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    /// Write a commented starter configuration (./codemode.toml unless given a path).
    Init {
        /// Where to write it.
        #[arg(default_value = codemode::config_discovery::CURRENT_FOLDER_FILE)]
        path: PathBuf,
        /// Replace a file that is already there.
        #[arg(long)]
        force: bool,
    },
    /// Write a copy of the search model (the folder of all-MiniLM-L6-v2's
    /// `model.safetensors` and `tokenizer.json`) with its weight matrices as int8: a
    /// quarter of the size, the same rankings.
    PackSearchModel {
        /// The model's folder.
        from: PathBuf,
        /// Where to write the packed copy.
        to: PathBuf,
    },
    /// Print each sandbox layer, whether it is active on this machine, and why not.
    SandboxCheck {
        /// The sandbox-worker binary (default: $CODEMODE_WORKER, or next to codemode).
        #[arg(long)]
        worker: Option<PathBuf>,
    },
    /// Run a native payload under exactly the worker's policy (for escape testing).
    ///
    /// PAYLOAD is a shared object exporting `int codemode_payload(int argc, char **argv)`
    /// (build it with `cc -shared -fPIC`). It is loaded before the sandbox hides the
    /// filesystem, then called inside a worker set up like every program's: its own pid
    /// namespace, an empty read-only root, Landlock, no capabilities, the resource limits
    /// and the worker's seccomp table. It keeps standard output and error to report;
    /// its exit code (or the signal that killed it) is codemode's.
    SandboxExec {
        /// Run even if some sandbox layers cannot be applied (they are listed on stderr).
        #[arg(long)]
        insecure_allow_weaker_sandbox: bool,
        /// The sandbox-worker binary (default: $CODEMODE_WORKER, or next to codemode).
        #[arg(long)]
        worker: Option<PathBuf>,
        /// The payload and its arguments.
        #[arg(last = true, required = true)]
        payload: Vec<String>,
    },
}

/// `codemode auth ...`.
#[derive(Subcommand)]
enum AuthCommand {
    /// Authorize codemode with a plugin's MCP server: prints a link to open in a
    /// browser, then waits for the browser to come back to 127.0.0.1.
    Login {
        /// The plugin (an MCP server at a `url`).
        plugin: String,
        /// The configuration file. Without it: ./codemode.toml, then
        /// $XDG_CONFIG_HOME/codemode/config.toml (~/.config/codemode/config.toml).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// How long to wait for the browser, in seconds.
        #[arg(long, default_value_t = 300, value_name = "SECONDS")]
        wait: u64,
    },
    /// Show, for each MCP server at a `url`, whether codemode is logged in to it.
    Status {
        /// The configuration file (found as for `login` without it).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Forget the tokens of a plugin's server.
    Logout {
        /// The plugin.
        plugin: String,
        /// The configuration file (found as for `login` without it).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
}

/// `codemode auth ...`.
async fn auth(command: AuthCommand) -> anyhow::Result<i32> {
    use codemode::oauth::commands::{login_command, logout_command, status_command, AuthCommandError};
    let config_of = |config: Option<PathBuf>| -> anyhow::Result<Config> {
        let (config, found) = load_config(config.as_deref(), Search::CurrentFolderToo, None)?;
        if found.is_none() {
            return Err(UsageError(none_found(Search::CurrentFolderToo)).into());
        }
        Ok(config)
    };
    let usage = |e: AuthCommandError| -> anyhow::Error {
        match e {
            AuthCommandError::NotApplicable(why) => UsageError(why).into(),
            other => other.into(),
        }
    };
    let text = match command {
        AuthCommand::Login { plugin, config, wait } => {
            let config = config_of(config)?;
            let announce = |url: &str| {
                eprintln!("codemode: open this link in a browser to authorize plugin {plugin}:\n{url}");
            };
            login_command(&config, &plugin, std::time::Duration::from_secs(wait), &announce).await.map_err(usage)?
        }
        AuthCommand::Status { config } => status_command(&config_of(config)?).map_err(usage)?,
        AuthCommand::Logout { plugin, config } => logout_command(&config_of(config)?, &plugin).map_err(usage)?,
    };
    print_result(&text)?;
    Ok(0)
}

/// The search model of `config`, loaded, when there is one (a model that cannot be
/// loaded is said on stderr, and search ranks by words alone).
async fn search_model(config: &Config) -> Option<Arc<codemode::tool::semantic::Semantic>> {
    load_search_model(config.search_model()?).await
}

/// The search model in the folder `model`, loaded on a blocking thread (its files are
/// read within their bounds and checked: `codemode::tool::bounded_file`); a model that
/// cannot be used is said on stderr, and search ranks by words alone.
async fn load_search_model(model: PathBuf) -> Option<Arc<codemode::tool::semantic::Semantic>> {
    let env = |name: &str| std::env::var(name).ok();
    let cache = codemode::tool::semantic::cache_folder(&env);
    let loaded =
        tokio::task::spawn_blocking(move || codemode::tool::semantic::Semantic::load(&model, cache.as_deref())).await;
    let problem = match loaded {
        Ok(Ok(semantic)) => return Some(Arc::new(semantic)),
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    let text = format!("the search model cannot be used ({problem}); tools.$search ranks by words alone");
    if JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!("{text}");
    } else {
        eprintln!("codemode: {text}");
    }
    None
}

/// What `mcp` and `serve` share.
#[derive(Args)]
struct ServeArgs {
    /// The configuration file (plugins, limits, `[server]`). Without it:
    /// $XDG_CONFIG_HOME/codemode/config.toml (~/.config/codemode/config.toml); never the
    /// current folder's, so a cloned repository does not start its plugins.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Offer the bundled example tools (weather.forecast, math.add).
    #[arg(long)]
    example_tools: bool,
    /// Present the tools as one `execute` tool (code) or each as its own (tools);
    /// overrides `[server] mode`.
    #[arg(long, value_parser = ["code", "tools"])]
    mode: Option<String>,
    /// The sandbox-worker binary (default: $CODEMODE_WORKER, or next to codemode).
    #[arg(long)]
    worker: Option<PathBuf>,
    /// Run even if some sandbox layers cannot be applied on this machine. Never use this
    /// where programs are untrusted.
    #[arg(long)]
    insecure_allow_weaker_sandbox: bool,
}

#[derive(Args)]
struct RunArgs {
    /// The program: a file, or - to read standard input.
    file: String,
    /// Print the structured outcome as JSON instead of the agent's text.
    #[arg(long)]
    json: bool,
    /// Offer the bundled example tools (weather.forecast, math.add).
    #[arg(long)]
    example_tools: bool,
    /// The configuration file (plugins and limits). Without it: ./codemode.toml, then
    /// $XDG_CONFIG_HOME/codemode/config.toml (~/.config/codemode/config.toml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// How workers start.
    #[arg(long, value_enum, default_value_t = LaunchMode::Auto)]
    launch: LaunchMode,
    /// The sandbox-worker binary (default: $CODEMODE_WORKER, or next to codemode).
    #[arg(long)]
    worker: Option<PathBuf>,
    // The limits, over the configuration's `[limits]` (each flag is a row of
    // `codemode::limits::SETTINGS`).
    #[command(flatten)]
    limits: LimitOverrides,
    /// Run even if some sandbox layers cannot be applied on this machine. Every outcome
    /// then names the missing layers. Never use this where programs are untrusted.
    #[arg(long)]
    insecure_allow_weaker_sandbox: bool,
    /// Allow calls of PLUGIN.TOOL that need a person's approval without asking
    /// (repeatable). Otherwise they ask on the terminal, or are refused without one.
    #[arg(long = "approve", value_name = "PLUGIN.TOOL")]
    approve: Vec<String>,
    /// Allow every call that needs a person's approval without asking.
    #[arg(long)]
    approve_all: bool,
    /// Answer every form a tool's server asks to fill in during a call (MCP
    /// elicitation) with the server's defaults, without asking.
    #[arg(long)]
    accept_defaults: bool,
}

/// A mistake in how codemode was called (exit code 2), as opposed to a failure while
/// it ran (exit code 4).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

/// The exit code for an error that ended a command: 2 for usage and configuration
/// mistakes, 4 for everything else.
fn exit_code_of(error: &anyhow::Error) -> i32 {
    let usage =
        error.chain().any(|cause| cause.is::<UsageError>() || cause.is::<ConfigError>() || cause.is::<LimitError>());
    if usage {
        2
    } else {
        4
    }
}

/// Which commands may read `./codemode.toml` when given no `--config`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Search {
    /// `run` and `tools`: the current folder, then the user's folder.
    CurrentFolderToo,
    /// `mcp` and `serve`: the user's folder only (see [`codemode::config_discovery`]).
    UserFolderOnly,
}

/// The configuration `given` names, or the one found without it (announced on stderr
/// when it came from the current folder), or the defaults; and where it came from.
fn load_config(
    given: Option<&std::path::Path>,
    search: Search,
    worker: Option<&std::path::Path>,
) -> anyhow::Result<(Config, Option<codemode::config_discovery::Found>)> {
    use codemode::config_discovery::{find, Source};
    let env = |name: &str| std::env::var(name).ok();
    let cwd = std::env::current_dir().unwrap_or_default();
    let found = find(given, search == Search::CurrentFolderToo, &cwd, &env, &|p: &std::path::Path| p.is_file());
    match found {
        Some(found) => {
            if found.source == Source::CurrentFolder {
                eprintln!(
                    "codemode: reading {} (found in the current folder; --config FILE reads another)",
                    found.path.display()
                );
            }
            let worker = worker.map_or_else(codemode::default_worker_path, std::path::Path::to_path_buf);
            Ok((Config::load_with_worker(&found.path, &worker)?, Some(found)))
        }
        None => Ok((Config::default(), None)),
    }
}

/// What to say when no configuration was found.
fn none_found(search: Search) -> String {
    let env = |name: &str| std::env::var(name).ok();
    format!(
        "no configuration found (looked for {}); `codemode init` writes a commented starter one, or pass --config FILE",
        codemode::config_discovery::searched(search == Search::CurrentFolderToo, &env)
    )
}

/// `codemode init`: writes the starter configuration, never over a file unless forced.
fn init(path: &std::path::Path, force: bool) -> anyhow::Result<i32> {
    if path.exists() && !force {
        return Err(UsageError(format!(
            "{} already exists; pass --force to replace it, or give another path",
            path.display()
        ))
        .into());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, codemode::config_discovery::STARTER).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "codemode: wrote {}; `codemode tools` lists what it offers, `codemode run PROGRAM.js` runs a program",
        path.display()
    );
    Ok(0)
}

/// The configured plugins; JavaScript plugins run in `worker`'s plugin runtime under `sandbox`.
fn plugin_host(config: &Config, example_tools: bool, worker: &std::path::Path, sandbox: SandboxPolicy) -> PluginHost {
    let base = if example_tools || config.example_tools { example_catalog() } else { Catalog::new() };
    let javascript = config.javascript_plugins().into_iter().map(|p| p.process_config(worker, sandbox));
    PluginHost::new(base, config.process_plugins().into_iter().chain(javascript).map(ProcessPlugin::new).collect())
        .with_unreadable(config.unreadable_javascript_plugins())
        .with_mcp(config.mcp_servers().into_iter().map(McpPlugin::new).collect())
        .with_approvals(config.approvals())
        .with_summaries(config.summaries())
        .with_scopes(config.scopes.clone())
}

/// `codemode tools`: which configuration, and which form of the listing.
#[derive(Args)]
struct ToolsArgs {
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
async fn list_tools(args: ToolsArgs) -> anyhow::Result<i32> {
    let ToolsArgs { config, example_tools, typescript, json, description } = args;
    let (config, found) = load_config(config.as_deref(), Search::CurrentFolderToo, None)?;
    match &found {
        Some(found) if found.source != codemode::config_discovery::Source::CurrentFolder => {
            eprintln!("codemode: reading {}", found.path.display())
        }
        Some(_) => {}
        None => eprintln!("codemode: {}", none_found(Search::CurrentFolderToo)),
    }
    let (catalog, problems) =
        Arc::new(plugin_host(&config, example_tools, &codemode::default_worker_path(), SandboxPolicy::Required))
            .catalog()
            .await;
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

fn exit_code(kind: &OutcomeKind) -> i32 {
    match kind {
        OutcomeKind::Ok { .. } => 0,
        k if k.is_limit() => 3,
        OutcomeKind::WorkerCrash { .. } | OutcomeKind::Internal { .. } => 4,
        _ => 1,
    }
}

async fn run(args: RunArgs) -> anyhow::Result<i32> {
    let (code, source) = if args.file == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| UsageError(format!("cannot read the program from standard input: {e}")))?;
        (s, "standard input".to_string())
    } else {
        let text = std::fs::read_to_string(&args.file)
            .map_err(|e| UsageError(format!("cannot read the program {}: {e}", args.file)))?;
        (text, args.file.clone())
    };
    if code.trim().is_empty() {
        return Err(UsageError(format!("the program ({source}) is empty: give a file (or - for standard input) holding the body of an async function or one expression")).into());
    }
    let (config, found) = load_config(args.config.as_deref(), Search::CurrentFolderToo, args.worker.as_deref())?;
    let limits = args.limits.apply(config.limits(), LimitSource::CommandLine)?;
    let sandbox =
        if args.insecure_allow_weaker_sandbox { SandboxPolicy::InsecureAllowWeaker } else { SandboxPolicy::Required };
    let worker = args.worker.clone().unwrap_or_else(codemode::default_worker_path);
    let plugins = Arc::new(plugin_host(&config, args.example_tools, &worker, sandbox));
    let (catalog, _problems) = plugins.catalog().await;
    // A program that searches gets its tools embedded before it starts (from the
    // cache after the first run): one run has no later searches to embed for.
    let semantic = if code.contains("$search") { search_model(&config).await } else { None };
    // One program: a warm pool would only fork workers that nobody takes.
    let mut builder = Executor::builder()
        .launch_mode(args.launch)
        .limits(limits)
        .catalog(catalog)
        .sandbox(sandbox)
        .warm_workers(0)
        .semantic(semantic);
    if let Some(w) = &args.worker {
        builder = builder.worker_path(w);
    }
    let executor = Arc::new(builder.build().await.context("starting the executor")?);
    if let Some(semantic) = executor.semantic().cloned() {
        let catalog = executor.catalog();
        tokio::task::spawn_blocking(move || catalog.search_index().build_dense(&semantic)).await?;
    }
    plugins.keep_current(Arc::clone(&executor));
    let approvals =
        codemode::terminal_approvals::PreApproved::new(args.approve_all, &args.approve, args.accept_defaults)
            .map_err(UsageError)?;
    let hooks = codemode::terminal_approvals::TerminalApprovals::new(approvals);
    let outcome = executor.run(codemode::Program::new(code).hooks(hooks)).await;
    // Ends the template (and the plugins) and removes the pool cgroup before exiting.
    drop(plugins);
    drop(executor);
    if found.is_none() && !args.example_tools && outcome.tool_calls > 0 {
        eprintln!("codemode: {}; this run had no tools to call", none_found(Search::CurrentFolderToo));
    }
    let text = if args.json { serde_json::to_string_pretty(&outcome)? } else { outcome.agent_text() };
    print_result(&text)?;
    Ok(exit_code(&outcome.kind))
}

/// Where and how `codemode serve` listens.
struct Listen {
    addr: std::net::SocketAddr,
    allow_remote: bool,
    token_env: String,
    tls: Option<(PathBuf, PathBuf)>,
    allow_origins: Vec<String>,
    stateless: bool,
    ops_listen: Option<std::net::SocketAddr>,
    replica_url: Option<String>,
}

/// `codemode mcp` (stdio) and `codemode serve` (HTTP, when `http` says where).
async fn serve(args: ServeArgs, http: Option<Listen>) -> anyhow::Result<i32> {
    let (mut config, found) = load_config(args.config.as_deref(), Search::UserFolderOnly, args.worker.as_deref())?;
    if let Some(found) = found.filter(|f| f.source == codemode::config_discovery::Source::UserFolder) {
        tracing::info!("reading {}", found.path.display());
    }
    match args.mode.as_deref() {
        Some("tools") => config.server.mode = codemode::config::ServerMode::Tools,
        Some("code") => config.server.mode = codemode::config::ServerMode::Code,
        _ => {}
    }
    let rules = config.rules_text()?;
    let sandbox =
        if args.insecure_allow_weaker_sandbox { SandboxPolicy::InsecureAllowWeaker } else { SandboxPolicy::Required };
    let worker = args.worker.clone().unwrap_or_else(codemode::default_worker_path);
    let plugins = Arc::new(plugin_host(&config, args.example_tools, &worker, sandbox));
    let (catalog, problems) = plugins.catalog().await;
    for p in problems.iter().filter(|p| p.unavailable()) {
        tracing::warn!("plugin {} is unavailable: {}", p.plugin, p.reason);
    }
    let limits = config.limits();
    let executor = Arc::new(
        Executor::builder()
            .worker_path(&worker)
            .limits(limits)
            .catalog(catalog)
            .sandbox(sandbox)
            .warm_workers(config.server.warm_workers.unwrap_or_else(codemode::launcher::default_warm_workers))
            .build()
            .await
            .context("starting the executor")?,
    );
    plugins.keep_current(Arc::clone(&executor));
    // The search model and its cache load off the listener's path: whatever lies in
    // their place, the server listens and answers /healthz meanwhile (/readyz waits).
    let model_loading = {
        let (model, executor) = (config.search_model(), Arc::clone(&executor));
        tokio::spawn(async move {
            if let Some(semantic) = match model {
                Some(model) => load_search_model(model).await,
                None => None,
            } {
                executor.set_semantic(semantic);
            }
        })
    };
    use codemode::serve::logs::ClientLogs;
    let client_logs =
        config.server.client_logs.clone().unwrap_or(if http.is_some() { ClientLogs::None } else { ClientLogs::All });
    let log_token = match &client_logs {
        ClientLogs::TokenEnv(variable) => {
            Some(std::env::var(variable).ok().filter(|t| !t.is_empty()).ok_or_else(|| {
                UsageError(format!("[server] client_logs names the token in {variable}, which is not set"))
            })?)
        }
        _ => None,
    };
    if http.is_none() {
        // Standard input and output carry one client: it may use every slot.
        config.server.max_programs_per_session.get_or_insert(config.server.max_concurrent_programs);
        let paused = config.server.paused_programs();
        config.server.max_paused_programs_per_session.get_or_insert(paused);
    }
    // 2026-07-28 clients' paused programs: their states sealed with the replicas' shared
    // key (or one of this process), naming this replica when others may get its retries.
    let key_env = config.server.state_key_env.clone();
    let key = std::env::var(&key_env).ok().filter(|k| !k.is_empty()).map(|k| (key_env, k.into_bytes()));
    let replica_url = http.as_ref().and_then(|h| h.replica_url.clone()).or_else(|| config.server.replica_url.clone());
    if let Some(url) = &replica_url {
        url::Url::parse(url).map_err(|e| UsageError(format!("the replica URL {url:?} is not a URL: {e}")))?;
    }
    let rounds = codemode::serve::rounds::Rounds::new(
        key,
        replica_url,
        limits.wall_clock + codemode::serve::approvals::ANSWER_WAIT,
    )
    .map_err(|e| UsageError(e.to_string()))?;
    let server = codemode::serve::CodemodeServer::new(
        Arc::clone(&executor),
        limits,
        config.server.clone(),
        &rules,
        client_logs,
        log_token.clone(),
        rounds,
    );
    match http {
        None => {
            use rmcp::ServiceExt;
            // One client, which lists the tools first: their description names the
            // ranker once the model has loaded.
            let _ = model_loading.await;
            let running = server
                .serve(rmcp::transport::stdio())
                .await
                .context("starting the MCP server on standard input and output")?;
            running.waiting().await.context("serving MCP")?;
        }
        Some(listen) => {
            let token = std::env::var(&listen.token_env).ok().filter(|t| !t.is_empty());
            codemode::serve::http::check_exposure(listen.addr, listen.allow_remote, token.as_deref())
                .map_err(|e| UsageError(e.to_string()))?;
            let tls_files = listen.tls.or_else(|| config.server.tls_cert.clone().zip(config.server.tls_key.clone()));
            let tls = match &tls_files {
                Some((cert, key)) => {
                    Some(codemode::serve::http::tls_config(cert, key).map_err(|e| UsageError(e.to_string()))?)
                }
                None => None,
            };
            let options = codemode::serve::http::HttpOptions {
                token: token.clone(),
                operator_token: log_token,
                allowed_origins: config.server.allowed_origins.iter().cloned().chain(listen.allow_origins).collect(),
                max_sessions: config.server.max_sessions,
                session_idle: std::time::Duration::from_millis(config.server.session_idle_ms),
                tls,
                stateless: listen.stateless || config.server.stateless,
            };
            let listener = tokio::net::TcpListener::bind(listen.addr)
                .await
                .with_context(|| format!("listening on {}", listen.addr))?;
            let ops = match listen.ops_listen.or(config.server.ops_listen) {
                Some(addr) => {
                    let ops = codemode::serve::ops::Ops::install(Arc::clone(&executor))?;
                    let ops_listener = std::net::TcpListener::bind(addr)
                        .with_context(|| format!("listening for operations on {addr}"))?;
                    announce(&format!(
                        "serving /healthz, /readyz and /metrics on http://{}",
                        ops_listener.local_addr()?
                    ));
                    codemode::serve::ops::serve_on_own_thread(ops_listener, Arc::clone(&ops))
                        .context("starting the operations listener")?;
                    Some(ops)
                }
                None => None,
            };
            let scheme = if options.tls.is_some() { "https" } else { "http" };
            announce(&format!(
                "serving MCP on {scheme}://{}/mcp{}{}",
                listener.local_addr()?,
                if options.stateless { " (stateless)" } else { "" },
                if token.is_some() { " (bearer token required)" } else { "" }
            ));
            // Ready once the model has loaded (or failed, and search ranks by words).
            let readiness = tokio::spawn({
                let ops = ops.clone();
                async move {
                    let _ = model_loading.await;
                    if let Some(ops) = ops {
                        ops.set_ready(true);
                    }
                }
            });
            tokio::select! {
                served = codemode::serve::http::serve(listener, server, options) => {
                    served.context("serving MCP over HTTP")?;
                }
                signal = shutdown_signal() => {
                    // An orchestrator stopping the replica: not ready first (the balancer
                    // stops sending), no new connections, then the programs running now
                    // end within the grace period.
                    readiness.abort();
                    if let Some(ops) = &ops {
                        ops.set_ready(false);
                    }
                    announce(&format!("{signal}: draining {} running program(s), then exiting", executor.running_programs()));
                    let deadline = tokio::time::Instant::now() + SHUTDOWN_DRAIN;
                    while executor.running_programs() > 0 && tokio::time::Instant::now() < deadline {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        }
    }
    drop(plugins);
    drop(executor);
    Ok(0)
}

/// How long `codemode serve` lets running programs finish after SIGTERM or SIGINT
/// (Kubernetes' default grace period is 30 s).
const SHUTDOWN_DRAIN: std::time::Duration = std::time::Duration::from_secs(25);

/// Resolves with the signal's name at SIGTERM or SIGINT. As a container's pid 1,
/// codemode gets no default action for them: without this, a stopping pod waits for its
/// grace period and is killed.
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

/// Set when `--log-format json` asked for nothing but JSON lines on stderr.
static JSON_LOGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Tells the person where the server listens: a line on stderr, or, when stderr carries
/// JSON logs, an `info` event (so a log shipper reads only JSON).
fn announce(text: &str) {
    if JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::info!("{text}");
    } else {
        eprintln!("codemode: {text}");
    }
}

/// Prints the result; a reader that went away (a closed pipe) is not an error.
fn print_result(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    if text.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other.context("writing the result to standard output")?),
    }
}

fn main() {
    // Not dumpable, before anything secret is read: processes of the same user (process
    // plugins, MCP servers started as commands) cannot read this process's memory or
    // environment through /proc or ptrace. Plugins started as root also lose
    // CAP_SYS_PTRACE (`plugins::process::plugin_command`), which would bypass this.
    // SAFETY: PR_SET_DUMPABLE with 0 only changes this process's dumpable flag.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        eprintln!("codemode: cannot make the process undumpable: {}", std::io::Error::last_os_error());
        std::process::exit(4);
    }
    let cli = Cli::parse();
    codemode::tls::ensure_provider();
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    // Two layers: stderr at --log's level, and MCP clients' copy (info and up, for the
    // sessions the operator chose; see codemode::serve::logs).
    let filter =
        tracing_subscriber::EnvFilter::try_new(&cli.log).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let stderr = match cli.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
    };
    codemode::telemetry::set_log_program_text(cli.log_program_text);
    JSON_LOGS.store(cli.log_format == LogFormat::Json, std::sync::atomic::Ordering::Relaxed);
    let clients = codemode::serve::logs::ClientLogLayer.with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    tracing_subscriber::registry().with(stderr).with(clients).init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codemode: cannot start the async runtime: {e}");
            std::process::exit(4);
        }
    };
    let code = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run(args).await,
            Command::Tools(args) => list_tools(args).await,
            Command::Mcp(args) => serve(args, None).await,
            Command::Serve {
                common,
                listen,
                allow_remote,
                token_env,
                tls_cert,
                tls_key,
                allow_origins,
                stateless,
                ops_listen,
                replica_url,
            } => {
                serve(
                    common,
                    Some(Listen {
                        addr: listen,
                        allow_remote,
                        token_env,
                        tls: tls_cert.zip(tls_key),
                        allow_origins,
                        stateless,
                        ops_listen,
                        replica_url,
                    }),
                )
                .await
            }
            Command::Rules { config } => {
                Config::load(&config).map_err(anyhow::Error::from).and_then(|c| Ok(c.rules_text()?)).and_then(|text| {
                    print_result(&text)?;
                    Ok(0)
                })
            }
            Command::Init { path, force } => init(&path, force),
            Command::Auth { command } => auth(command).await,
            Command::SandboxCheck { worker } => {
                codemode::sandbox_report::check(&worker.unwrap_or_else(codemode::default_worker_path))
            }
            Command::PackSearchModel { from, to } => codemode::tool::encoder::pack(&from, &to)
                .map(|()| 0)
                .map_err(|e| anyhow::Error::from(UsageError(e.to_string()))),
            Command::SandboxExec { insecure_allow_weaker_sandbox, worker, payload } => {
                let policy = if insecure_allow_weaker_sandbox {
                    SandboxPolicy::InsecureAllowWeaker
                } else {
                    SandboxPolicy::Required
                };
                codemode::sandbox_report::exec(&worker.unwrap_or_else(codemode::default_worker_path), policy, &payload)
            }
        }
    });
    match code {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("codemode: {e:#}");
            std::process::exit(exit_code_of(&e));
        }
    }
}
