//! The commands of `codemode`, one module each, and what they share: how a
//! configuration is found and read, how results and notices are written, and which
//! errors are usage mistakes (exit code 2).
//!
//! Where it sits: `main` parses the arguments and calls one command; `run`, `tools`,
//! `mcp` and `serve` build what they run from [`codemode::app`], the composition root
//! the integration tests reach too.

pub mod auth;
pub mod init;
pub mod pack_search_model;
pub mod rules;
pub mod run;
pub mod sandbox;
pub mod serve;
pub mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use codemode::config::{Config, ConfigError};
use codemode::limits::LimitError;

/// A mistake in how codemode was called (exit code 2), as opposed to a failure while
/// it ran (exit code 4).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The exit code for an error that ended a command: 2 for usage and configuration
/// mistakes, 4 for everything else.
pub fn exit_code_of(error: &anyhow::Error) -> i32 {
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
pub enum Search {
    /// `run` and `tools`: the current folder, then the user's folder.
    CurrentFolderToo,
    /// `mcp` and `serve`: the user's folder only (see [`codemode::config_discovery`]).
    UserFolderOnly,
}

/// The configuration `given` names, or the one found without it (announced on stderr
/// when it came from the current folder), or the defaults; and where it came from.
pub fn load_config(
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
pub fn none_found(search: Search) -> String {
    let env = |name: &str| std::env::var(name).ok();
    format!(
        "no configuration found (looked for {}); `codemode init` writes a commented starter one, or pass --config FILE",
        codemode::config_discovery::searched(search == Search::CurrentFolderToo, &env)
    )
}

/// Set when `--log-format json` asked for nothing but JSON lines on stderr.
pub static JSON_LOGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Tells the person where the server listens: a line on stderr, or, when stderr carries
/// JSON logs, an `info` event (so a log shipper reads only JSON).
pub fn announce(text: &str) {
    if JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::info!("{text}");
    } else {
        eprintln!("codemode: {text}");
    }
}

/// Prints the result; a reader that went away (a closed pipe) is not an error.
pub fn print_result(text: &str) -> anyhow::Result<()> {
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

/// The search model of `config`, loaded, when there is one (a model that cannot be
/// loaded is said on stderr, and search ranks by words alone).
pub async fn search_model(config: &Config) -> Option<Arc<codemode::tool::semantic::Semantic>> {
    load_search_model(config.search_model()?).await
}

/// The search model in the folder `model`, loaded ([`codemode::app::load_search_model`]);
/// a model that cannot be used is said on stderr (or logged, with JSON logs), and search
/// ranks by words alone.
pub async fn load_search_model(model: PathBuf) -> Option<Arc<codemode::tool::semantic::Semantic>> {
    let problem = match codemode::app::load_search_model(model).await {
        Ok(semantic) => return Some(semantic),
        Err(problem) => problem,
    };
    let text = format!("the search model cannot be used ({problem}); tools.$search ranks by words alone");
    if JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!("{text}");
    } else {
        eprintln!("codemode: {text}");
    }
    None
}
