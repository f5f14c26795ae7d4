//! `codemode run FILE|-`: one program, through the whole `codemode::app`, and what
//! an agent would read of its outcome (or the outcome as JSON).

use std::io::Read;
use std::path::PathBuf;

use clap::Args;
use codemode::app::{App, AppOptions};
use codemode::limits::{LimitOverrides, LimitSource};
use codemode::{LaunchMode, OutcomeKind, SandboxPolicy};

use super::{load_config, none_found, print_result, search_model, Search, UsageError};

/// `codemode run`'s arguments.
#[derive(Args)]
pub struct RunArgs {
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

/// The exit code of an outcome: 0 ok, 3 a limit stopped it, 4 the worker crashed or
/// the host could not run it, 1 the program failed.
fn exit_code(kind: &OutcomeKind) -> i32 {
    match kind {
        OutcomeKind::Ok { .. } => 0,
        k if k.is_limit() => 3,
        OutcomeKind::WorkerCrash { .. } | OutcomeKind::Internal { .. } => 4,
        _ => 1,
    }
}

/// Runs the program `args` names and prints its outcome; the exit code says how it ended.
pub async fn run(args: RunArgs) -> anyhow::Result<i32> {
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
    // A program that searches gets its tools embedded before it starts (from the
    // cache after the first run): one run has no later searches to embed for.
    let semantic = if code.contains("$search") { search_model(&config).await } else { None };
    let options = AppOptions {
        example_tools: args.example_tools,
        worker: args.worker.clone().unwrap_or_else(codemode::default_worker_path),
        sandbox,
        launch: args.launch,
        limits,
        // One program: a warm pool would only fork workers that nobody takes.
        warm_workers: 0,
        semantic,
    };
    let App { plugins, executor, problems: _ } = App::from_config(&config, options).await?;
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
