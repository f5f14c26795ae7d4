//! `codemode auth login|status|logout`: the arguments, and the configuration the
//! commands of `codemode::oauth::commands` act on.

use std::path::PathBuf;

use clap::Subcommand;
use codemode::config::Config;

use super::{load_config, none_found, print_result, Search, UsageError};

/// `codemode auth ...`.
#[derive(Subcommand)]
pub enum AuthCommand {
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
pub async fn auth(command: AuthCommand) -> anyhow::Result<i32> {
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
