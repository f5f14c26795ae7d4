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

//!
//! This file is the argument parsing and the dispatch: each command is a module of
//! `commands` (beside this file, part of the binary), and `run`, `tools`, `mcp` and
//! `serve` build what they run through `codemode::app`, the library's composition root.

mod commands;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use commands::{auth, init, pack_search_model, rules, run, sandbox, serve, tools};

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
    Run(run::RunArgs),
    /// Print the rules of every enabled plugin, each under a heading with its name.
    Rules {
        /// The configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// List the tools a program may call, with their signatures.
    Tools(tools::ToolsArgs),
    /// Serve MCP on standard input and output (for an agent that starts codemode).
    Mcp(serve::ServeArgs),
    /// Serve MCP over streamable HTTP.
    Serve(serve::HttpArgs),
    /// Log in to MCP servers that ask for OAuth, and see or forget what is stored.
    Auth {
        #[command(subcommand)]
        command: auth::AuthCommand,
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

fn main() {
    // Not dumpable, before anything secret is read: processes of the same user (process
    // plugins, MCP servers started as commands) cannot read this process's memory or
    // environment through /proc or ptrace. Plugins started as root also lose
    // CAP_SYS_PTRACE (`plugins::child::plugin_command`), which would bypass this.
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
    commands::JSON_LOGS.store(cli.log_format == LogFormat::Json, std::sync::atomic::Ordering::Relaxed);
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
            Command::Run(args) => run::run(args).await,
            Command::Tools(args) => tools::list_tools(args).await,
            Command::Mcp(args) => serve::mcp(args).await,
            Command::Serve(args) => serve::serve_http(args).await,
            Command::Rules { config } => rules::rules(&config),
            Command::Init { path, force } => init::init(&path, force),
            Command::Auth { command } => auth::auth(command).await,
            Command::SandboxCheck { worker } => sandbox::sandbox_check(worker),
            Command::PackSearchModel { from, to } => pack_search_model::pack_search_model(&from, &to),
            Command::SandboxExec { insecure_allow_weaker_sandbox, worker, payload } => {
                sandbox::sandbox_exec(insecure_allow_weaker_sandbox, worker, &payload)
            }
        }
    });
    match code {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("codemode: {e:#}");
            std::process::exit(commands::exit_code_of(&e));
        }
    }
}
