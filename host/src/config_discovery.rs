//! Which configuration file a command reads when it is given none, and the starter
//! configuration `codemode init` writes.
//!
//! The order: `--config FILE`; then `./codemode.toml`, for `run` and `tools` only (it is
//! announced by its path); then the user's own file,
//! `$XDG_CONFIG_HOME/codemode/config.toml` (or `~/.config/codemode/config.toml`); then
//! none. `mcp` and `serve` never look in the current folder: an agent host starts them
//! in whatever folder it is in, and cloning a repository must not start its plugins
//! unasked. The decision is one pure function ([`find`]), so it is unit-tested without
//! touching the disk.

use std::path::{Path, PathBuf};

/// The file name looked for in the current folder.
pub const CURRENT_FOLDER_FILE: &str = "codemode.toml";

/// Where the configuration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--config FILE`.
    Given,
    /// `./codemode.toml`.
    CurrentFolder,
    /// The user's config folder.
    UserFolder,
}

/// A configuration file to read, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file.
    pub path: PathBuf,
    /// How it was found.
    pub source: Source,
}

/// The user's configuration file: `$XDG_CONFIG_HOME/codemode/config.toml` when that is
/// an absolute path, else `$HOME/.config/codemode/config.toml`; `None` without either.
pub fn user_file(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let xdg = env("XDG_CONFIG_HOME").map(PathBuf::from).filter(|p| p.is_absolute());
    let base = xdg.or_else(|| env("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(&h).join(".config")))?;
    Some(base.join("codemode").join("config.toml"))
}

/// Decides which configuration to read: `given`, else `cwd/codemode.toml` when
/// `search_current_folder` and it exists, else the user's file when it exists.
pub fn find(
    given: Option<&Path>,
    search_current_folder: bool,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    exists: &dyn Fn(&Path) -> bool,
) -> Option<Found> {
    if let Some(path) = given {
        return Some(Found { path: path.to_path_buf(), source: Source::Given });
    }
    let here = cwd.join(CURRENT_FOLDER_FILE);
    if search_current_folder && exists(&here) {
        return Some(Found { path: here, source: Source::CurrentFolder });
    }
    user_file(env).filter(|p| exists(p)).map(|path| Found { path, source: Source::UserFolder })
}

/// Where [`find`] looked, for the message that says nothing was found.
pub fn searched(search_current_folder: bool, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut places = Vec::new();
    if search_current_folder {
        places.push(format!("./{CURRENT_FOLDER_FILE}"));
    }
    places.extend(user_file(env).map(|p| p.display().to_string()));
    places.join(" and ")
}

/// What `codemode init` writes: every section with its defaults, commented, and one
/// plugin of each kind to copy.
pub const STARTER: &str = r#"# codemode's configuration. `codemode tools` lists what programs may call;
# `codemode run PROGRAM.js` runs one; `codemode mcp` serves agents over stdio.
# Every setting below is optional; the values shown are the defaults.

# The bundled example tools (weather.forecast, math.add), served in-process.
example_tools = true

[limits]
# memory_mib = 256          # a program's memory
# cpu_step_ms = 10000       # JavaScript time between two tool answers (waiting does not count)
# wall_clock_ms = 900000    # a program's whole run
# console_bytes = 65536     # console output kept
# tool_calls_in_flight = 4096  # tool calls running at once

[server]
# mode = "code"             # one `execute` tool; "tools": each plugin tool as a tool of its own
# tool_names = "own"        # (tools mode) or "prefixed": <plugin>__<tool>
# output_bytes = 65536      # longer results are cut, keeping JSON valid
# max_concurrent_programs = 8
# max_paused_programs = 16  # programs waiting for a person's answer (they hold no slot)
# answer_wait_ms = 300000   # how long a question waits; unanswered, the program asks no more
# catalog_budget = 8000     # past it, plugins are listed by name and programs use tools.$search

# A process plugin: any executable speaking JSON-RPC over stdio.
# [[plugin]]
# name = "notes"
# kind = "process"
# command = "python3"
# args = ["notes/plugin.py"]        # relative paths are relative to this file
# summary = "Personal notes."       # one line, shown when the catalog is large
# require_approval = ["delete"]     # calls a person approves first ("*": every tool)

# A JavaScript plugin, in any seed format (a folder or one module file).
# [[plugin]]
# name = "hello"
# kind = "javascript"
# path = "hello-tools"
# settings = { token = { env = "HELLO_TOKEN" } }

# An MCP server, over stdio or streamable HTTP.
# [[plugin]]
# name = "everything"
# kind = "mcp"
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-everything"]
"#;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_string())
    }

    #[test]
    fn the_order_is_given_then_current_folder_then_user_folder() {
        let home = env(&[("HOME", "/home/ann")]);
        let all = |_: &Path| true;
        let cwd = Path::new("/work/repo");
        assert_eq!(find(Some(Path::new("x.toml")), true, cwd, &home, &all).unwrap().source, Source::Given);
        assert_eq!(
            find(None, true, cwd, &home, &all),
            Some(Found { path: "/work/repo/codemode.toml".into(), source: Source::CurrentFolder })
        );
        // mcp and serve never read the current folder's file.
        assert_eq!(
            find(None, false, cwd, &home, &all),
            Some(Found { path: "/home/ann/.config/codemode/config.toml".into(), source: Source::UserFolder })
        );
        let only_user = |p: &Path| p.starts_with("/home");
        assert_eq!(find(None, true, cwd, &home, &only_user).unwrap().source, Source::UserFolder);
        assert_eq!(find(None, true, cwd, &home, &|_: &Path| false), None);
    }

    #[test]
    fn xdg_config_home_wins_when_absolute() {
        assert_eq!(
            user_file(&env(&[("HOME", "/home/ann"), ("XDG_CONFIG_HOME", "/cfg")])),
            Some("/cfg/codemode/config.toml".into())
        );
        assert_eq!(
            user_file(&env(&[("HOME", "/home/ann"), ("XDG_CONFIG_HOME", "relative")])),
            Some("/home/ann/.config/codemode/config.toml".into())
        );
        assert_eq!(user_file(&env(&[])), None);
        assert_eq!(searched(true, &env(&[("HOME", "/h")])), "./codemode.toml and /h/.config/codemode/config.toml");
    }

    #[test]
    fn the_starter_configuration_loads() {
        let dir = std::env::temp_dir().join(format!("codemode-starter-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("codemode.toml");
        std::fs::write(&path, STARTER).unwrap();
        let config = crate::config::Config::load(&path).unwrap();
        assert!(config.example_tools);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
