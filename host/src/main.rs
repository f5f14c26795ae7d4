//! `codemode`: the command line of the codemode host.
//!
//! `codemode run FILE|-` runs one program and prints what an agent would read;
//! `--json` prints the structured outcome instead. Exit codes: 0 ok, 1 the program
//! failed (threw, stuck, unserialisable result), 3 a limit stopped it, 4 the worker
//! crashed or the host could not run it, 2 bad command-line usage.
//!
//! `codemode mcp` serves MCP on standard input and output; `codemode serve --listen
//! ADDR` on streamable HTTP. Both read the same configuration file as `run`.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use codemode::examples::example_catalog;

use codemode::config::{Config, LimitsConfig};
use codemode::plugins::mcp::McpPlugin;
use codemode::plugins::process::ProcessPlugin;
use codemode::plugins::PluginHost;
use codemode::{Catalog, Executor, LaunchMode, Limits, OutcomeKind, SandboxPolicy};

#[derive(Parser)]
#[command(name = "codemode", version, about = "Runs agent-written JavaScript programs in sandboxed workers")]
struct Cli {
    /// Log verbosity for codemode's own logs on stderr (error, warn, info, debug, trace).
    #[arg(long, global = true, env = "CODEMODE_LOG", default_value = "warn")]
    log: String,
    #[command(subcommand)]
    command: Command,
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
    Tools {
        /// The configuration file (plugins and limits).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Offer the bundled example tools (weather.forecast, math.add).
        #[arg(long)]
        example_tools: bool,
        /// Print the TypeScript declarations the MCP server gives agents instead.
        #[arg(long)]
        typescript: bool,
    },
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

/// What `mcp` and `serve` share.
#[derive(Args)]
struct ServeArgs {
    /// The configuration file (plugins, limits, `[server]`).
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
    /// The configuration file (plugins and limits).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// How workers start.
    #[arg(long, value_enum, default_value_t = LaunchMode::Auto)]
    launch: LaunchMode,
    /// The sandbox-worker binary (default: $CODEMODE_WORKER, or next to codemode).
    #[arg(long)]
    worker: Option<PathBuf>,
    /// Memory limit in MiB.
    #[arg(long, value_name = "MIB")]
    memory_mib: Option<u64>,
    /// JavaScript time between two tool answers, in milliseconds.
    #[arg(long, value_name = "MS")]
    cpu_step_ms: Option<u64>,
    /// Total time, in milliseconds.
    #[arg(long, value_name = "MS")]
    wall_clock_ms: Option<u64>,
    /// Console output kept, in bytes.
    #[arg(long, value_name = "BYTES")]
    console_bytes: Option<u64>,
    /// Run even if some sandbox layers cannot be applied on this machine. Every outcome
    /// then names the missing layers. Never use this where programs are untrusted.
    #[arg(long)]
    insecure_allow_weaker_sandbox: bool,
}

impl RunArgs {
    /// The command line's limit overrides, applied over `limits`.
    fn limits(&self, limits: Limits) -> Limits {
        let overrides = LimitsConfig {
            memory_mib: self.memory_mib,
            cpu_step_ms: self.cpu_step_ms,
            wall_clock_ms: self.wall_clock_ms,
            console_bytes: self.console_bytes,
            result_bytes: None,
        };
        overrides.apply(limits)
    }
}

fn load_config(path: Option<&std::path::Path>) -> anyhow::Result<Config> {
    match path {
        Some(p) => Ok(Config::load(p)?),
        None => Ok(Config::default()),
    }
}

/// The configured plugins; JavaScript plugins run in `worker`'s plugin runtime under `sandbox`.
fn plugin_host(config: &Config, example_tools: bool, worker: &std::path::Path, sandbox: SandboxPolicy) -> PluginHost {
    let base = if example_tools || config.example_tools { example_catalog() } else { Catalog::new() };
    let javascript = config.javascript_plugins().into_iter().map(|p| p.process_config(worker, sandbox));
    PluginHost::new(base, config.process_plugins().into_iter().chain(javascript).map(ProcessPlugin::new).collect())
        .with_mcp(config.mcp_servers().into_iter().map(McpPlugin::new).collect())
        .with_approvals(config.approvals())
}

/// `codemode tools`: every tool as `tools.<plugin>.<tool>(input) -> output`, or the
/// TypeScript declarations.
async fn list_tools(config: Option<PathBuf>, example_tools: bool, typescript: bool) -> anyhow::Result<i32> {
    let config = load_config(config.as_deref())?;
    let (catalog, problems) = plugin_host(&config, example_tools, &codemode::default_worker_path(), SandboxPolicy::Required).catalog().await;
    for p in problems.iter().filter(|_| typescript) {
        eprintln!("codemode: plugin {} is unavailable: {}", p.plugin, p.reason);
    }
    if typescript {
        print_result(codemode::serve::declarations::declarations(&catalog).trim_end())?;
        return Ok(if problems.is_empty() { 0 } else { 1 });
    }
    let mut out = String::new();
    for (plugin, tools) in catalog.plugins() {
        for tool in tools {
            let d = &tool.definition;
            let output = d.output_schema.as_ref().map_or("string".to_string(), codemode::signature::type_of);
            out.push_str(&format!("tools.{plugin}.{}({}) -> {output}\n", d.name, codemode::signature::type_of(&d.input_schema)));
            out.push_str(&format!("    {}\n", d.description.lines().next().unwrap_or_default()));
        }
    }
    for p in &problems {
        out.push_str(&format!("! plugin {} is unavailable: {}\n", p.plugin, p.reason));
    }
    print_result(out.trim_end())?;
    Ok(if problems.is_empty() { 0 } else { 1 })
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
    let code = if args.file == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("reading the program from standard input")?;
        s
    } else {
        std::fs::read_to_string(&args.file).with_context(|| format!("reading the program {}", args.file))?
    };
    let config = load_config(args.config.as_deref())?;
    let sandbox = if args.insecure_allow_weaker_sandbox { SandboxPolicy::InsecureAllowWeaker } else { SandboxPolicy::Required };
    let worker = args.worker.clone().unwrap_or_else(codemode::default_worker_path);
    let plugins = Arc::new(plugin_host(&config, args.example_tools, &worker, sandbox));
    let (catalog, _problems) = plugins.catalog().await;
    let mut builder = Executor::builder().launch_mode(args.launch).limits(args.limits(config.limits())).catalog(catalog).sandbox(sandbox);
    if let Some(w) = &args.worker {
        builder = builder.worker_path(w);
    }
    let executor = Arc::new(builder.build().await.context("starting the executor")?);
    plugins.keep_current(Arc::clone(&executor));
    let outcome = executor.run(&code).await;
    // Ends the template (and the plugins) and removes the pool cgroup before exiting.
    drop(plugins);
    drop(executor);
    let text = if args.json { serde_json::to_string_pretty(&outcome)? } else { outcome.agent_text() };
    print_result(&text)?;
    Ok(exit_code(&outcome.kind))
}

/// `codemode mcp` (stdio) and `codemode serve` (HTTP, when `http` names where).
async fn serve(args: ServeArgs, http: Option<(std::net::SocketAddr, bool, String)>) -> anyhow::Result<i32> {
    let mut config = load_config(args.config.as_deref())?;
    match args.mode.as_deref() {
        Some("tools") => config.server.mode = codemode::config::ServerMode::Tools,
        Some("code") => config.server.mode = codemode::config::ServerMode::Code,
        _ => {}
    }
    let rules = config.rules_text()?;
    let sandbox = if args.insecure_allow_weaker_sandbox { SandboxPolicy::InsecureAllowWeaker } else { SandboxPolicy::Required };
    let worker = args.worker.clone().unwrap_or_else(codemode::default_worker_path);
    let plugins = Arc::new(plugin_host(&config, args.example_tools, &worker, sandbox));
    let (catalog, problems) = plugins.catalog().await;
    for p in &problems {
        tracing::warn!("plugin {} is unavailable: {}", p.plugin, p.reason);
    }
    let limits = config.limits();
    let executor = Arc::new(Executor::builder().worker_path(&worker).limits(limits).catalog(catalog).sandbox(sandbox).build().await.context("starting the executor")?);
    plugins.keep_current(Arc::clone(&executor));
    let server = codemode::serve::CodemodeServer::new(Arc::clone(&executor), limits, config.server.clone(), &rules);
    match http {
        None => {
            use rmcp::ServiceExt;
            let running = server.serve(rmcp::transport::stdio()).await.context("starting the MCP server on standard input and output")?;
            running.waiting().await.context("serving MCP")?;
        }
        Some((listen, allow_remote, token_env)) => {
            let token = std::env::var(&token_env).ok().filter(|t| !t.is_empty());
            codemode::serve::http::check_exposure(listen, allow_remote, token.as_deref())?;
            let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
            eprintln!("codemode: serving MCP on http://{}/mcp{}", listener.local_addr()?, if token.is_some() { " (bearer token required)" } else { "" });
            codemode::serve::http::serve(listener, server, token).await.context("serving MCP over HTTP")?;
        }
    }
    drop(plugins);
    drop(executor);
    Ok(0)
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
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_new(&cli.log).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")))
        .init();
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
            Command::Tools { config, example_tools, typescript } => list_tools(config, example_tools, typescript).await,
            Command::Mcp(args) => serve(args, None).await,
            Command::Serve { common, listen, allow_remote, token_env } => serve(common, Some((listen, allow_remote, token_env))).await,
            Command::Rules { config } => Config::load(&config).map_err(anyhow::Error::from).and_then(|c| Ok(c.rules_text()?)).and_then(|text| {
                print_result(&text)?;
                Ok(0)
            }),
            Command::SandboxCheck { worker } => codemode::sandbox_report::check(&worker.unwrap_or_else(codemode::default_worker_path)),
            Command::SandboxExec { insecure_allow_weaker_sandbox, worker, payload } => {
                let policy = if insecure_allow_weaker_sandbox { SandboxPolicy::InsecureAllowWeaker } else { SandboxPolicy::Required };
                codemode::sandbox_report::exec(&worker.unwrap_or_else(codemode::default_worker_path), policy, &payload)
            }
        }
    });
    match code {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("codemode: {e:#}");
            std::process::exit(4);
        }
    }
}
