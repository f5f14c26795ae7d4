//! The configuration file (TOML) that `codemode run`, `codemode tools` and the MCP
//! server read: the limits and the plugins.
//!
//! Where it sits: the command line finds the file (`crate::config_discovery`),
//! [`Config::load`] reads and checks it, and `crate::app` builds the plugins and the
//! executor from it. Each `[[plugin]]` is read as written (every setting optional),
//! then typed by its `kind` into a [`PluginConfig`] whose [`RuntimeConfig`] has one
//! variant per runtime; a setting the kind does not take is an error naming it.
//!
//! ```toml
//! [server]                 # the MCP server
//! mode = "code"            # or "tools": each plugin tool as an MCP tool of its own
//! tool_names = "own"       # (tools mode) or "prefixed": every tool as <plugin>__<tool>
//! max_concurrent_programs = 8
//! max_paused_programs = 16 # waiting for a person's answer (holding no slot)
//! output_bytes = 65536
//! catalog_budget = 8000    # past it, plugins are listed and programs use tools.$search
//!
//! [limits]
//! memory_mib = 256
//! cpu_step_ms = 10000
//! wall_clock_ms = 900000
//! console_bytes = 65536
//!
//! [[plugin]]
//! name = "py-tools"
//! summary = "Small text utilities."        # one line, shown for large catalogs
//! kind = "process"
//! command = "python3"
//! args = ["plugins/py-tools/plugin.py"]   # relative paths are relative to this file
//! timeout_ms = 30000
//!
//! [[plugin]]
//! name = "hello"
//! kind = "javascript"
//! path = "hello-tools"      # a plugin folder (or one module file), in any seed format
//! memory_mib = 128          # the plugin runtime's heap
//! cpu_step_ms = 10000       # JavaScript time between two messages from the host
//! settings = { token = { env = "HELLO_TOKEN" } }   # what the plugin reads as its settings
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use plugin_format::{Format, Layout};
use protocol::manifest::HostEntry;

use crate::limits::{LimitError, LimitOverrides, LimitSource, Limits};
use crate::oauth::OAuthSettings;
use crate::plugins::javascript::{JavascriptPlugin, DEFAULT_CPU_STEP_MS, DEFAULT_MEMORY_MIB};
use crate::plugins::mcp::http::header_name_problem;
use crate::plugins::mcp::{HttpServer, McpConfig, McpTransport};
use crate::plugins::process::ProcessConfig;
use crate::plugins::settings::SettingValue;

/// The whole file, checked ([`Config::load`]).
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `[limits]`: each one optional, in its setting's unit (`crate::limits::SETTINGS`).
    pub limits: LimitOverrides,
    /// The plugins (`[[plugin]]`), each with its runtime's settings.
    pub plugins: Vec<PluginConfig>,
    /// Offer the bundled in-process example tools (weather.forecast, math.add).
    pub example_tools: bool,
    /// How the MCP server presents the tools.
    pub server: ServerConfig,
    /// The scopes this codemode offers tools of (seed 000's `scope`, for example
    /// `"plugins-workspace"`); a tool with another scope is not offered.
    pub scopes: Vec<String>,
    /// The folder relative paths are resolved against (the file's own).
    pub base_dir: PathBuf,
    /// The skills of every `[[skills]]` folder (Agent Skills: each sub-folder a
    /// `SKILL.md`), served through `tools.$skills.load` with no tools of their own.
    pub standalone_skills: Vec<crate::tool::skills::Skill>,
}

/// One `[[skills]]` entry: a folder of Agent Skills.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillsEntry {
    /// The folder (relative to the configuration file).
    path: String,
}

/// The file as written: [`Config`] before its plugin entries are checked and typed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    limits: LimitOverrides,
    #[serde(default)]
    plugin: Vec<PluginEntry>,
    #[serde(default)]
    example_tools: bool,
    #[serde(default)]
    server: ServerConfig,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    skills: Vec<SkillsEntry>,
}

pub use crate::serve::settings::{CatalogBudget, ServerConfig, ServerMode, ToolNames};

/// One `[[plugin]]` as written: every setting of every kind, each optional, checked
/// and typed into a [`PluginConfig`] by [`PluginEntry::into_config`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginEntry {
    /// `tools.<name>`.
    name: String,
    /// The runtime.
    kind: PluginKind,
    /// The executable (process plugins, MCP servers over stdio).
    command: Option<String>,
    /// The URL of an MCP server over streamable HTTP.
    url: Option<String>,
    /// A JavaScript plugin's folder, or its one module file.
    path: Option<String>,
    /// A JavaScript plugin's format, when its files should not decide it (`manifest`,
    /// `zhin`, `plico`, `globals`, `podcode`).
    format: Option<String>,
    /// A JavaScript plugin's settings (each written here, or `{ env = "VAR" }`).
    #[serde(default)]
    settings: std::collections::BTreeMap<String, SettingValue>,
    /// The hosts a JavaScript plugin whose format has no allowlist of its own may reach.
    #[serde(default)]
    net_hosts: Vec<String>,
    /// A JavaScript plugin's heap limit, in MiB (default 128).
    memory_mib: Option<u64>,
    /// A JavaScript plugin's longest run of JavaScript between two host messages, in ms
    /// (default 10 s).
    cpu_step_ms: Option<u64>,
    /// Its arguments.
    #[serde(default)]
    args: Vec<String>,
    /// Environment variables for it (each written here, or `{ env = "VAR" }`).
    #[serde(default)]
    env: std::collections::BTreeMap<String, SettingValue>,
    /// Per-call time limit, in ms (default 30 s).
    timeout_ms: Option<u64>,
    /// Headers sent with every request to an MCP server at a `url` (each written here,
    /// or `{ env = "VAR" }`).
    #[serde(default)]
    headers: std::collections::BTreeMap<String, SettingValue>,
    /// A bearer token for an MCP server at a `url` (usually `{ env = "VAR" }`).
    bearer_token: Option<SettingValue>,
    /// How codemode identifies itself when an MCP server at a `url` asks for OAuth
    /// (`codemode auth login`).
    oauth: Option<OAuthSettings>,
    /// Which revision of MCP to speak to an MCP server: `"auto"` (the default: ask with
    /// `server/discover` and use 2026-07-28 where the server offers it, else the
    /// `initialize` handshake), `"2026-07-28"` or `"2025-11-25"`.
    protocol: Option<crate::plugins::mcp::McpProtocol>,
    /// Off: the plugin is configured but not started.
    #[serde(default = "yes")]
    enabled: bool,
    /// Markdown files with the plugin's rules for agents (relative to this file).
    #[serde(default)]
    rules: Vec<String>,
    /// Off: the plugin's rules are not given to agents (its tools still are).
    #[serde(default = "yes")]
    rules_enabled: bool,
    /// Tools whose every call a person must approve first (`"*"`: all of the plugin's).
    #[serde(default)]
    require_approval: Vec<String>,
    /// One line saying what the plugin is for, shown beside its tool names when the
    /// catalog is too large to declare in full (`[server] catalog_budget`).
    summary: Option<String>,
}

/// One `[[plugin]]`, checked: what every kind takes, and its runtime's own settings.
#[derive(Debug, Clone)]
pub struct PluginConfig {
    /// `tools.<name>`.
    pub name: String,
    /// The runtime that serves it, with the settings only that runtime takes.
    pub runtime: RuntimeConfig,
    /// Per-call time limit, in ms (default 30 s).
    pub timeout_ms: Option<u64>,
    /// Off: the plugin is configured but not started.
    pub enabled: bool,
    /// Markdown files with the plugin's rules for agents (relative to the file).
    pub rules: Vec<String>,
    /// Off: the plugin's rules are not given to agents (its tools still are).
    pub rules_enabled: bool,
    /// Tools whose every call a person must approve first (`"*"`: all of the plugin's).
    pub require_approval: Vec<String>,
    /// One line saying what the plugin is for, shown beside its tool names when the
    /// catalog is too large to declare in full (`[server] catalog_budget`).
    pub summary: Option<String>,
}

/// A plugin's runtime and its settings: one variant per [`PluginKind`] (the entry's
/// `kind`), so a new kind of runtime is a new variant.
#[derive(Debug, Clone)]
pub enum RuntimeConfig {
    /// An executable speaking JSON-RPC over stdio.
    Process(CommandConfig),
    /// An MCP server.
    Mcp(McpServerConfig),
    /// A JavaScript plugin, run in the worker's plugin runtime.
    Javascript(JavascriptConfig),
}

/// A program to start: a process plugin, or an MCP server over stdio.
#[derive(Debug, Clone)]
pub struct CommandConfig {
    /// The executable (a relative path is relative to the file; a bare name is looked
    /// up in PATH).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables for it (each written here, or `{ env = "VAR" }`).
    pub env: std::collections::BTreeMap<String, SettingValue>,
}

/// An MCP server: where it is, and which revision of MCP to speak to it.
#[derive(Debug, Clone)]
pub struct McpServerConfig {
    /// Started as a command, or reached at a URL.
    pub endpoint: McpEndpoint,
    /// `"auto"` (the default: ask with `server/discover` and use 2026-07-28 where the
    /// server offers it, else the `initialize` handshake), `"2026-07-28"` or
    /// `"2025-11-25"`.
    pub protocol: Option<crate::plugins::mcp::McpProtocol>,
}

/// Where an MCP server is.
#[derive(Debug, Clone)]
pub enum McpEndpoint {
    /// Started with `command`, spoken to over stdio.
    Command(CommandConfig),
    /// At a `url`, over streamable HTTP.
    Url(UrlServerConfig),
}

/// An MCP server at a `url`.
#[derive(Debug, Clone)]
pub struct UrlServerConfig {
    /// Its URL (http or https).
    pub url: String,
    /// Headers sent with every request (each written here, or `{ env = "VAR" }`).
    pub headers: std::collections::BTreeMap<String, SettingValue>,
    /// A bearer token (usually `{ env = "VAR" }`).
    pub bearer_token: Option<SettingValue>,
    /// How codemode identifies itself when the server asks for OAuth (`codemode auth
    /// login`).
    pub oauth: Option<OAuthSettings>,
}

/// A JavaScript plugin.
#[derive(Debug, Clone)]
pub struct JavascriptConfig {
    /// Its folder, or its one module file (relative to the file).
    pub path: String,
    /// Its format, when its files should not decide it (`manifest`, `zhin`, `plico`,
    /// `globals`, `podcode`).
    pub format: Option<String>,
    /// Its settings (each written here, or `{ env = "VAR" }`).
    pub settings: std::collections::BTreeMap<String, SettingValue>,
    /// The hosts it may reach when its format has no allowlist of its own.
    pub net_hosts: Vec<String>,
    /// Its heap limit, in MiB (default 128).
    pub memory_mib: Option<u64>,
    /// Its longest run of JavaScript between two host messages, in ms (default 10 s).
    pub cpu_step_ms: Option<u64>,
    /// Its layout, read when the file is loaded (enabled plugins only); `Err` says why
    /// its files cannot be used (the plugin is then unavailable, the others load).
    pub layout: Option<Result<Layout, String>>,
}

impl PluginConfig {
    /// The entry's `kind`.
    pub fn kind(&self) -> PluginKind {
        match self.runtime {
            RuntimeConfig::Process(_) => PluginKind::Process,
            RuntimeConfig::Mcp(_) => PluginKind::Mcp,
            RuntimeConfig::Javascript(_) => PluginKind::Javascript,
        }
    }

    /// A JavaScript plugin's layout, once read.
    pub fn layout(&self) -> Option<&Result<Layout, String>> {
        match &self.runtime {
            RuntimeConfig::Javascript(js) => js.layout.as_ref(),
            _ => None,
        }
    }

    /// The per-call time limit.
    fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.unwrap_or(30_000))
    }
}

impl PluginEntry {
    /// The entry typed by its `kind`, or what is wrong with it: settings its kind does
    /// not take, or an entry incomplete for its kind.
    fn into_config(self) -> Result<PluginConfig, String> {
        let misplaced = misplaced_settings(&self);
        if !misplaced.is_empty() {
            return Err(format!(
                "{} {} not apply to a {} plugin; remove {} or change `kind`",
                misplaced.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
                if misplaced.len() == 1 { "does" } else { "do" },
                self.kind.as_str(),
                if misplaced.len() == 1 { "it" } else { "them" },
            ));
        }
        let runtime = match self.kind {
            PluginKind::Process => {
                let Some(command) = self.command else {
                    return Err("a process plugin needs `command`".into());
                };
                RuntimeConfig::Process(CommandConfig { command, args: self.args, env: self.env })
            }
            PluginKind::Mcp => {
                let endpoint = match (self.command, self.url) {
                    (Some(_), Some(_)) | (None, None) => {
                        return Err("an MCP server needs either `command` (stdio) or `url` (streamable HTTP)".into())
                    }
                    (None, Some(_)) if !self.args.is_empty() => {
                        return Err(
                            "`args` applies to an MCP server started with `command`, not to one at a `url`".into()
                        )
                    }
                    (None, Some(url)) => {
                        let server = UrlServerConfig {
                            url,
                            headers: self.headers,
                            bearer_token: self.bearer_token,
                            oauth: self.oauth,
                        };
                        if let Some(why) = url_server_problem(&server) {
                            return Err(why);
                        }
                        McpEndpoint::Url(server)
                    }
                    (Some(_), None)
                        if !self.headers.is_empty() || self.bearer_token.is_some() || self.oauth.is_some() =>
                    {
                        return Err("`headers`, `bearer_token` and `oauth` apply to an MCP server at a `url`, not to one started with `command` (give it `env` instead)".into())
                    }
                    (Some(command), None) => {
                        McpEndpoint::Command(CommandConfig { command, args: self.args, env: self.env })
                    }
                };
                RuntimeConfig::Mcp(McpServerConfig { endpoint, protocol: self.protocol })
            }
            PluginKind::Javascript => {
                let Some(path) = self.path else {
                    return Err("a JavaScript plugin needs `path`, its folder (or its one module file)".into());
                };
                RuntimeConfig::Javascript(JavascriptConfig {
                    path,
                    format: self.format,
                    settings: self.settings,
                    net_hosts: self.net_hosts,
                    memory_mib: self.memory_mib,
                    cpu_step_ms: self.cpu_step_ms,
                    layout: None,
                })
            }
        };
        Ok(PluginConfig {
            name: self.name,
            runtime,
            timeout_ms: self.timeout_ms,
            enabled: self.enabled,
            rules: self.rules,
            rules_enabled: self.rules_enabled,
            require_approval: self.require_approval,
            summary: self.summary,
        })
    }
}

fn yes() -> bool {
    true
}

/// Which runtime serves a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginKind {
    /// An executable speaking JSON-RPC over stdio.
    Process,
    /// An MCP server: `command` (stdio) or `url` (streamable HTTP).
    Mcp,
    /// A folder with `manifest.json` and a main module exporting `activate(api)`.
    Javascript,
}

/// Why the configuration could not be used. Every variant names the file (or, for
/// rules, the rules file) and the plugin it is about.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this format.
    #[error("the configuration {path} is invalid: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What and where.
        message: String,
    },
    /// A limit is out of range.
    #[error("the configuration {path}: {source}")]
    Limit {
        /// The file.
        path: PathBuf,
        /// Which limit, and its range.
        source: LimitError,
    },
    /// A `[server]` setting is wrong.
    #[error("the configuration {path}: [server] {problem}")]
    Server {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A `[[skills]]` folder cannot be read.
    #[error("the configuration {path}: [[skills]] {problem}")]
    Skills {
        /// The file.
        path: PathBuf,
        /// Which skill file, and what is wrong.
        problem: String,
    },
    /// A plugin entry is incomplete or contradicts itself.
    #[error("the configuration {path}: plugin {plugin:?}: {problem}")]
    Plugin {
        /// The file.
        path: PathBuf,
        /// The plugin.
        plugin: String,
        /// What is wrong.
        problem: String,
    },
    /// A plugin's rules file cannot be used.
    #[error("plugin {plugin:?}: the rules file {file} {problem}")]
    Rules {
        /// The plugin.
        plugin: String,
        /// The rules file.
        file: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

/// The settings of a `[[plugin]]` entry that only some kinds take, with the kinds
/// that take each (a pure table, checked by [`misplaced_settings`]).
const KIND_SETTINGS: &[(&str, &[PluginKind])] = &[
    ("command", &[PluginKind::Process, PluginKind::Mcp]),
    ("args", &[PluginKind::Process, PluginKind::Mcp]),
    ("env", &[PluginKind::Process, PluginKind::Mcp]),
    ("url", &[PluginKind::Mcp]),
    ("headers", &[PluginKind::Mcp]),
    ("bearer_token", &[PluginKind::Mcp]),
    ("oauth", &[PluginKind::Mcp]),
    ("protocol", &[PluginKind::Mcp]),
    ("path", &[PluginKind::Javascript]),
    ("format", &[PluginKind::Javascript]),
    ("settings", &[PluginKind::Javascript]),
    ("net_hosts", &[PluginKind::Javascript]),
    ("memory_mib", &[PluginKind::Javascript]),
    ("cpu_step_ms", &[PluginKind::Javascript]),
];

/// The settings `plugin` has that its kind does not take.
fn misplaced_settings(plugin: &PluginEntry) -> Vec<&'static str> {
    let present = |key: &str| match key {
        "command" => plugin.command.is_some(),
        "args" => !plugin.args.is_empty(),
        "env" => !plugin.env.is_empty(),
        "url" => plugin.url.is_some(),
        "headers" => !plugin.headers.is_empty(),
        "bearer_token" => plugin.bearer_token.is_some(),
        "oauth" => plugin.oauth.is_some(),
        "protocol" => plugin.protocol.is_some(),
        "path" => plugin.path.is_some(),
        "format" => plugin.format.is_some(),
        "settings" => !plugin.settings.is_empty(),
        "net_hosts" => !plugin.net_hosts.is_empty(),
        "memory_mib" => plugin.memory_mib.is_some(),
        "cpu_step_ms" => plugin.cpu_step_ms.is_some(),
        _ => false,
    };
    KIND_SETTINGS
        .iter()
        .filter(|(key, kinds)| present(key) && !kinds.contains(&plugin.kind))
        .map(|(key, _)| *key)
        .collect()
}

/// What is wrong with an MCP server entry at a `url`: its URL, its header names, or
/// credentials given twice (a token and OAuth settings).
fn url_server_problem(server: &UrlServerConfig) -> Option<String> {
    let url = server.url.as_str();
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        _ => return Some(format!("`url` must be an http:// or https:// URL, not {url:?}")),
    }
    if let Some(why) = server.headers.keys().find_map(|name| header_name_problem(name)) {
        return Some(why);
    }
    let authorization_header = server.headers.keys().any(|k| k.eq_ignore_ascii_case("authorization"));
    if authorization_header && server.bearer_token.is_some() {
        return Some("give the token once: `bearer_token`, or an `Authorization` header, not both".into());
    }
    if (authorization_header || server.bearer_token.is_some()) && server.oauth.is_some() {
        return Some("`oauth` is for servers codemode logs in to (`codemode auth login`); this entry already sends its own token, so remove one of them".into());
    }
    server.oauth.as_ref().and_then(OAuthSettings::problem)
}

impl PluginKind {
    /// The kind as the configuration spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PluginKind::Process => "process",
            PluginKind::Mcp => "mcp",
            PluginKind::Javascript => "javascript",
        }
    }
}

impl Config {
    /// Reads and checks a configuration file: limits in range, plugin names unique and
    /// valid, each entry complete for its kind and without settings its kind does not
    /// take, JavaScript manifests readable, and every rules file readable (and, for a
    /// manifest's rules, inside its plugin's folder).
    ///
    /// JavaScript plugins' files are read by the default worker binary
    /// ([`crate::executor::default_worker_path`]); see [`Config::load_with_worker`].
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_with_worker(path, &crate::executor::default_worker_path())
    }

    /// [`Config::load`], with `worker` reading the JavaScript plugins' files
    /// ([`crate::plugins::javascript::read_layout`]): a plugin whose files cannot be
    /// used is kept with the reason, and is unavailable once the plugins start.
    pub fn load_with_worker(path: &Path, worker: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
        let file: ConfigFile =
            toml::from_str(&text).map_err(|e| ConfigError::Parse { path: path.into(), message: e.to_string() })?;
        let mut config = Config {
            limits: file.limits,
            plugins: Vec::with_capacity(file.plugin.len()),
            example_tools: file.example_tools,
            server: file.server,
            scopes: file.scopes,
            base_dir: PathBuf::new(),
            standalone_skills: Vec::new(),
        };
        config
            .limits
            .apply(Limits::default(), LimitSource::ConfigFile)
            .map_err(|source| ConfigError::Limit { path: path.into(), source })?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        config.base_dir =
            std::fs::canonicalize(dir).map_err(|source| ConfigError::Read { path: dir.into(), source })?;
        if config.server.warm_workers.is_some_and(|n| n > 64) {
            return Err(ConfigError::Server {
                path: path.into(),
                problem: "warm_workers must be between 0 and 64".into(),
            });
        }
        for (name, value) in [
            ("max_paused_programs", config.server.max_paused_programs),
            ("max_paused_programs_per_session", config.server.max_paused_programs_per_session),
        ] {
            if value == Some(0) {
                return Err(ConfigError::Server {
                    path: path.into(),
                    problem: format!("{name} must be at least 1 (a program waiting for a person's answer is counted there; with none allowed, no question could be asked)"),
                });
            }
        }
        if config.server.max_sessions == 0 {
            return Err(ConfigError::Server { path: path.into(), problem: "max_sessions must be at least 1".into() });
        }
        if config.server.tls_cert.is_some() != config.server.tls_key.is_some() {
            return Err(ConfigError::Server {
                path: path.into(),
                problem: "tls_cert and tls_key go together: give both, or neither".into(),
            });
        }
        for file in [&mut config.server.tls_cert, &mut config.server.tls_key].into_iter().flatten() {
            *file = config.base_dir.join(&*file);
        }
        for entry in &file.skills {
            let folder = config.base_dir.join(&entry.path);
            let skills = plugin_format::skills::skills_folder(&folder)
                .map_err(|e| ConfigError::Skills { path: path.into(), problem: e.to_string() })?;
            config.standalone_skills.extend(skills);
        }
        let base_dir = config.base_dir.clone();
        let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (index, entry) in file.plugin.into_iter().enumerate() {
            let name = entry.name.clone();
            let problem = |problem: String| ConfigError::Plugin { path: path.into(), plugin: name.clone(), problem };
            if !crate::tool::is_valid_name(&name) {
                return Err(problem("the name must be 1 to 64 letters, digits, '_' or '-'".into()));
            }
            if let Some(first) = seen.insert(name.clone(), index) {
                return Err(problem(format!(
                    "is configured twice ([[plugin]] entries {} and {}); give each plugin its own name",
                    first + 1,
                    index + 1
                )));
            }
            config.plugins.push(entry.into_config().map_err(problem)?);
        }
        for plugin in &mut config.plugins {
            let PluginConfig { name, enabled: true, runtime: RuntimeConfig::Javascript(js), .. } = plugin else {
                continue;
            };
            let problem = |problem: String| ConfigError::Plugin { path: path.into(), plugin: name.clone(), problem };
            let forced = match js.format.as_deref() {
                None => None,
                Some(name) => Some(Format::parse(name).ok_or_else(|| {
                    problem(format!(
                        "format {name:?} is not one codemode loads; use one of {}",
                        Format::ALL.map(|f| f.as_str()).join(", ")
                    ))
                })?),
            };
            let at = base_dir.join(&js.path);
            let layout = match crate::plugins::javascript::read_layout(worker, &at, forced) {
                Ok(layout) => layout,
                Err(why) => {
                    js.layout = Some(Err(why));
                    continue;
                }
            };
            if !js.net_hosts.is_empty() && !layout.format.allowlist_from_configuration() {
                let own = if layout.format == Format::Manifest {
                    "its manifest.json's permissions.net.hosts"
                } else {
                    "its globalThis.manifest.egress"
                };
                return Err(problem(format!(
                    "`net_hosts` is for plugins whose format declares no hosts of its own; this {} plugin lists them in {own}",
                    layout.format
                )));
            }
            for host in layout.declared_hosts.iter().chain(&js.net_hosts) {
                HostEntry::parse(host).map_err(|e| problem(format!("network allowlist entry {host:?}: {e}")))?;
            }
            js.layout = Some(Ok(layout));
        }
        config.rules_text()?;
        Ok(config)
    }

    /// The search model's folder, as `[server] search_model` says or where codemode
    /// finds one; `None` when it is `"off"` or there is none.
    pub fn search_model(&self) -> Option<PathBuf> {
        let env = |name: &str| std::env::var(name).ok();
        match self.server.search_model.as_deref() {
            Some("off") => None,
            Some(path) => crate::tool::semantic::find_model(Some(&self.base_dir.join(path)), &env),
            None => crate::tool::semantic::find_model(None, &env),
        }
    }

    /// The limits, defaults overridden by `[limits]` (checked when the file is loaded).
    pub fn limits(&self) -> Limits {
        self.limits.apply(Limits::default(), LimitSource::ConfigFile).unwrap_or_default()
    }

    /// Resolves a command from the file against the file's folder; bare command names
    /// (no `/`) are left for PATH.
    fn resolve(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() || !p.contains('/') {
            path.to_path_buf()
        } else {
            self.base_dir.join(path)
        }
    }

    /// The rules of every enabled plugin whose rules are on, as one Markdown text: each
    /// plugin's files under a heading with its name.
    pub fn rules_text(&self) -> Result<String, ConfigError> {
        let mut sections = Vec::new();
        for plugin in self.plugins.iter().filter(|p| p.enabled && p.rules_enabled) {
            // A manifest's rules must be the plugin's own files (`true`): a link out of its
            // folder could hand any file the host can read to every agent. The
            // configuration's own `rules` are the user's choice (`false`).
            let from_manifest = plugin
                .layout()
                .into_iter()
                .flatten()
                .flat_map(|l| l.manifest.iter())
                .flat_map(|m| m.contributes.rules.iter())
                .map(|r| (self.plugin_dir(plugin).join(r), true));
            let files: Vec<(PathBuf, bool)> =
                from_manifest.chain(plugin.rules.iter().map(|r| (self.base_dir.join(r), false))).collect();
            if files.is_empty() {
                continue;
            }
            let mut folder = None;
            let mut body = Vec::new();
            for (file, own_file) in files {
                let problem =
                    |problem: String| ConfigError::Rules { plugin: plugin.name.clone(), file: file.clone(), problem };
                if own_file {
                    let real = std::fs::canonicalize(&file).map_err(|e| problem(format!("cannot be read: {e}")))?;
                    let folder = match &folder {
                        Some(f) => f,
                        None => folder.insert(std::fs::canonicalize(self.plugin_dir(plugin)).map_err(|e| {
                            problem(format!("cannot be checked: its plugin folder cannot be read: {e}"))
                        })?),
                    };
                    if !real.starts_with(folder) {
                        return Err(problem(format!(
                            "leads outside the plugin's folder (to {}); rules must be the plugin's own files",
                            real.display()
                        )));
                    }
                }
                let text = std::fs::read_to_string(&file).map_err(|e| problem(format!("cannot be read: {e}")))?;
                body.push(text.trim().to_string());
            }
            sections.push(format!("## {}\n\n{}", plugin.name, body.join("\n\n")));
        }
        sections.extend(self.agent_instructions());
        Ok(sections.join("\n\n"))
    }

    /// Whether the agent `[server] agent` (or `--agent`) selects exists: a plugin's
    /// `agents/<name>/`, written `name` or `plugin/name`. `Err` names the agents there are.
    pub fn check_agent(&self) -> Result<(), String> {
        let Some(selected) = self.server.agent.as_deref() else { return Ok(()) };
        let guidance = self.guidance();
        let known = crate::tool::skills::agent_names(guidance.iter().map(|(p, g)| (p.as_str(), g)));
        let found = known.iter().any(|k| crate::tool::skills::names_agent(k, selected));
        match (found, known.is_empty()) {
            (true, _) => Ok(()),
            (false, true) => Err(format!(
                "agent {selected:?} is selected, but no enabled plugin has agents (seed 001's agents/<name>/ folders)"
            )),
            (false, false) => Err(format!(
                "agent {selected:?} is selected, but no enabled plugin has it; the agents are {}",
                known.join(", ")
            )),
        }
    }

    /// Seed 001's instructions, as rules: each enabled plugin's `AGENTS.md` (its main
    /// agent), and the files of the agent `[server] agent` selects (`name` or
    /// `plugin/name`), each under a heading naming its plugin.
    fn agent_instructions(&self) -> Vec<String> {
        let mut sections = Vec::new();
        let mut guidance: Vec<(String, crate::tool::skills::Guidance)> = self.guidance().into_iter().collect();
        guidance.sort_by(|a, b| a.0.cmp(&b.0));
        let rules_on = |name: &str| self.plugins.iter().any(|p| p.name == name && p.rules_enabled);
        for (plugin, guidance) in guidance.iter().filter(|(p, _)| rules_on(p)) {
            if let Some(main) = guidance.main_agent.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
                sections.push(format!("## {plugin}: AGENTS.md\n\n{main}"));
            }
            let selected = self.server.agent.as_deref();
            for agent in guidance
                .agents
                .iter()
                .filter(|a| selected.is_some_and(|s| s == a.name || s == format!("{plugin}/{}", a.name)))
            {
                sections.push(format!("## {plugin}: agent {}\n\n{}", agent.name, agent.instructions));
            }
        }
        sections
    }

    /// The MCP servers to use.
    pub fn mcp_servers(&self) -> Vec<McpConfig> {
        self.enabled()
            .filter_map(|p| match &p.runtime {
                RuntimeConfig::Mcp(mcp) => Some((p, mcp)),
                _ => None,
            })
            .map(|(p, mcp)| McpConfig {
                name: p.name.clone(),
                transport: match &mcp.endpoint {
                    McpEndpoint::Url(server) => McpTransport::Http(HttpServer {
                        url: server.url.clone(),
                        headers: server.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                        bearer_token: server.bearer_token.clone(),
                        oauth: server.oauth.clone().unwrap_or_default(),
                    }),
                    McpEndpoint::Command(command) => {
                        let launch = self.launch(command);
                        McpTransport::Stdio {
                            command: launch.command,
                            args: launch.args,
                            env: launch.env,
                            cwd: launch.cwd,
                        }
                    }
                },
                call_timeout: p.call_timeout(),
                protocol: mcp.protocol.unwrap_or_default(),
            })
            .collect()
    }

    /// The enabled plugins.
    fn enabled(&self) -> impl Iterator<Item = &PluginConfig> {
        self.plugins.iter().filter(|p| p.enabled)
    }

    /// How to start `command`: resolved against the file's folder, run in it.
    fn launch(&self, command: &CommandConfig) -> Launch {
        Launch {
            command: self.resolve(&command.command),
            args: command.args.clone(),
            env: command.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            cwd: Some(self.base_dir.clone()).filter(|d| !d.as_os_str().is_empty()),
        }
    }

    /// A JavaScript plugin's folder (the file's, for a plugin that is one file); the
    /// file's folder for the other kinds.
    fn plugin_dir(&self, plugin: &PluginConfig) -> PathBuf {
        match &plugin.runtime {
            RuntimeConfig::Javascript(JavascriptConfig { layout: Some(Ok(layout)), .. }) => layout.root.clone(),
            RuntimeConfig::Javascript(js) => self.base_dir.join(&js.path),
            _ => self.base_dir.join(""),
        }
    }

    /// The tools that need a person's approval, by plugin (from `require_approval`).
    pub fn approvals(&self) -> std::collections::HashMap<String, Vec<String>> {
        self.plugins
            .iter()
            .filter(|p| p.enabled && !p.require_approval.is_empty())
            .map(|p| (p.name.clone(), p.require_approval.clone()))
            .collect()
    }

    /// Each enabled plugin's `summary`, by plugin.
    pub fn summaries(&self) -> std::collections::HashMap<String, String> {
        self.plugins.iter().filter(|p| p.enabled).filter_map(|p| Some((p.name.clone(), p.summary.clone()?))).collect()
    }

    /// Each enabled JavaScript plugin's skills, agents and `AGENTS.md` (seed 001).
    pub fn guidance(&self) -> std::collections::HashMap<String, crate::tool::skills::Guidance> {
        self.enabled_javascript()
            .filter_map(|(p, js)| match &js.layout {
                Some(Ok(layout)) if !layout.guidance.is_empty() => Some((p.name.clone(), (*layout.guidance).clone())),
                _ => None,
            })
            .collect()
    }

    /// The enabled JavaScript plugins.
    fn enabled_javascript(&self) -> impl Iterator<Item = (&PluginConfig, &JavascriptConfig)> {
        self.enabled().filter_map(|p| match &p.runtime {
            RuntimeConfig::Javascript(js) => Some((p, js)),
            _ => None,
        })
    }

    /// The JavaScript plugins to start (a manifest plugin with only rules has no
    /// module and needs no runtime).
    pub fn javascript_plugins(&self) -> Vec<JavascriptPlugin> {
        self.enabled_javascript()
            .filter_map(|(p, js)| {
                let plugin = JavascriptPlugin {
                    name: p.name.clone(),
                    path: self.base_dir.join(&js.path),
                    layout: js.layout.clone()?.ok()?,
                    memory_mib: js.memory_mib.unwrap_or(DEFAULT_MEMORY_MIB),
                    cpu_step_ms: js.cpu_step_ms.unwrap_or(DEFAULT_CPU_STEP_MS),
                    call_timeout: p.call_timeout(),
                    settings: js.settings.clone(),
                    net_hosts: js.net_hosts.clone(),
                };
                plugin.has_modules().then_some(plugin)
            })
            .collect()
    }

    /// The JavaScript plugins whose files cannot be used, each with why: unavailable
    /// plugins (the others load).
    pub fn unreadable_javascript_plugins(&self) -> Vec<(String, String)> {
        self.enabled_javascript()
            .filter_map(|(p, js)| match &js.layout {
                Some(Err(why)) => Some((p.name.clone(), why.clone())),
                _ => None,
            })
            .collect()
    }

    /// The process plugins to start.
    pub fn process_plugins(&self) -> Vec<ProcessConfig> {
        self.enabled()
            .filter_map(|p| match &p.runtime {
                RuntimeConfig::Process(command) => Some((p, self.launch(command))),
                _ => None,
            })
            .map(|(p, launch)| ProcessConfig {
                name: p.name.clone(),
                command: launch.command,
                args: launch.args,
                env: launch.env,
                settings: std::collections::BTreeMap::new(),
                cwd: launch.cwd,
                call_timeout: p.call_timeout(),
                net: None,
                permissions: Vec::new(),
            })
            .collect()
    }
}

/// How to start a plugin's process, resolved from its entry.
struct Launch {
    command: PathBuf,
    args: Vec<String>,
    env: Vec<(String, SettingValue)>,
    cwd: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("codemode-config-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("codemode.toml");
        std::fs::write(&path, text).unwrap();
        Config::load(&path)
    }

    #[test]
    fn reads_limits_and_plugins_running_in_the_files_folder() {
        let c = parse("[limits]\nmemory_mib = 64\ncpu_step_ms = 500\n\n[[plugin]]\nname = \"py\"\nkind = \"process\"\ncommand = \"python3\"\nargs = [\"plugins/py/plugin.py\", \"--flag\", \"text/plain\", \"-c\", \"echo a/b\"]\ntimeout_ms = 2000\n\n[[plugin]]\nname = \"local\"\nkind = \"process\"\ncommand = \"./bin/tool\"\n").unwrap();
        assert_eq!(c.limits().memory_bytes, 64 * crate::limits::MIB);
        assert_eq!(c.limits().cpu_step, Duration::from_millis(500));
        let p = &c.process_plugins()[0];
        assert_eq!(p.command, PathBuf::from("python3"));
        // Arguments pass as written; the plugin runs in the configuration's folder, so
        // relative paths among them still work.
        assert_eq!(p.args, ["plugins/py/plugin.py", "--flag", "text/plain", "-c", "echo a/b"]);
        assert_eq!(p.cwd.as_deref(), Some(c.base_dir.as_path()));
        assert_eq!(p.call_timeout, Duration::from_millis(2000));
        // A relative command is found from the configuration's folder.
        assert_eq!(c.process_plugins()[1].command, c.base_dir.join("./bin/tool"));
    }

    #[test]
    fn limits_out_of_range_are_named_as_written() {
        let e = parse("[limits]\nmemory_mib = 0\n").unwrap_err().to_string();
        assert!(e.ends_with("codemode.toml: [limits] memory_mib = 0: must be between 16 and 65536"), "{e}");
        let e = parse("[limits]\ntool_bytes_in_flight = 1\n").unwrap_err().to_string();
        assert!(e.ends_with("[limits] tool_bytes_in_flight = 1: must be between 1048576 and 50331648"), "{e}");
    }

    #[test]
    fn duplicate_names_and_settings_of_another_kind_are_errors() {
        let e = parse("[[plugin]]\nname = \"a\"\nkind = \"process\"\ncommand = \"x\"\n\n[[plugin]]\nname = \"a\"\nkind = \"mcp\"\ncommand = \"y\"\n").unwrap_err().to_string();
        assert!(
            e.ends_with(
                "plugin \"a\": is configured twice ([[plugin]] entries 1 and 2); give each plugin its own name"
            ),
            "{e}"
        );
        let e = parse("[[plugin]]\nname = \"a\"\nkind = \"process\"\ncommand = \"x\"\npath = \"p\"\nmemory_mib = 64\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "plugin \"a\": `path`, `memory_mib` do not apply to a process plugin; remove them or change `kind`"
            ),
            "{e}"
        );
        let e = parse("[[plugin]]\nname = \"m\"\nkind = \"mcp\"\nurl = \"http://127.0.0.1:1/mcp\"\nargs = [\"x\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("`args` applies to an MCP server started with `command`, not to one at a `url`"), "{e}");
        let e = parse("[[plugin]]\nname = \"j\"\nkind = \"javascript\"\ncommand = \"node\"\npath = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("`command` does not apply to a javascript plugin; remove it or change `kind`"), "{e}");
    }

    #[test]
    fn a_missing_rules_file_is_an_error_naming_it() {
        let e =
            parse("[[plugin]]\nname = \"db\"\nkind = \"process\"\ncommand = \"x\"\nrules = [\"missing-rules.md\"]\n")
                .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, ConfigError::Rules { .. }), "{text}");
        assert!(
            text.starts_with("plugin \"db\": the rules file ")
                && text.contains("missing-rules.md cannot be read: No such file"),
            "{text}"
        );
    }

    #[test]
    fn rules_are_grouped_under_each_plugin_and_can_be_turned_off() {
        let dir = std::env::temp_dir().join(format!("codemode-rules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.md"), "Always cite the row id.\n").unwrap();
        std::fs::write(dir.join("b.md"), "Never delete notes.\n").unwrap();
        let path = dir.join("codemode.toml");
        std::fs::write(
            &path,
            "[[plugin]]\nname = \"db\"\nkind = \"process\"\ncommand = \"x\"\nrules = [\"a.md\", \"b.md\"]\n\n[[plugin]]\nname = \"quiet\"\nkind = \"process\"\ncommand = \"x\"\nrules = [\"a.md\"]\nrules_enabled = false\n",
        )
        .unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(c.rules_text().unwrap(), "## db\n\nAlways cite the row id.\n\nNever delete notes.");
    }

    #[test]
    fn server_settings_and_approvals() {
        let c = parse("[server]\nmode = \"tools\"\nmax_concurrent_programs = 2\n\n[[plugin]]\nname = \"db\"\nkind = \"process\"\ncommand = \"x\"\nrequire_approval = [\"delete\"]\n").unwrap();
        assert_eq!(c.server.mode, ServerMode::Tools);
        assert_eq!(c.server.max_concurrent_programs, 2);
        assert_eq!(c.server.output_bytes, 64 * 1024);
        assert_eq!(c.approvals().get("db"), Some(&vec!["delete".to_string()]));
        let e = parse("[server]\nmode = \"both\"\n").unwrap_err().to_string();
        assert!(e.contains("unknown variant `both`"), "{e}");
    }

    #[test]
    fn paused_programs_default_to_twice_the_slots_and_are_at_least_one() {
        let c = parse("[server]\nmax_concurrent_programs = 3\n").unwrap();
        assert_eq!((c.server.paused_programs(), c.server.max_paused_programs_per_session), (6, None));
        let c = parse("[server]\nmax_paused_programs = 5\nmax_paused_programs_per_session = 2\n").unwrap();
        assert_eq!((c.server.paused_programs(), c.server.max_paused_programs_per_session), (5, Some(2)));
        let e = parse("[server]\nmax_paused_programs = 0\n").unwrap_err().to_string();
        assert!(e.ends_with("max_paused_programs must be at least 1 (a program waiting for a person's answer is counted there; with none allowed, no question could be asked)"), "{e}");
    }

    #[test]
    fn a_plugins_rules_must_be_its_own_files() {
        let dir = std::env::temp_dir().join(format!("codemode-rules-link-{}", std::process::id()));
        let plugin = dir.join("p");
        std::fs::create_dir_all(&plugin).unwrap();
        std::fs::write(
            plugin.join("manifest.json"),
            r#"{ "name": "p", "version": "1", "contributes": { "rules": ["rules.md"] } }"#,
        )
        .unwrap();
        std::fs::write(dir.join("secret.txt"), "not for agents").unwrap();
        let _ = std::fs::remove_file(plugin.join("rules.md"));
        std::os::unix::fs::symlink(dir.join("secret.txt"), plugin.join("rules.md")).unwrap();
        let path = dir.join("codemode.toml");
        std::fs::write(&path, "[[plugin]]\nname = \"p\"\nkind = \"javascript\"\npath = \"p\"\n").unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert!(e.contains("leads outside the plugin's folder"), "{e}");
        // The configuration's own rules for the plugin are the user's choice, wherever they are.
        std::fs::remove_file(plugin.join("rules.md")).unwrap();
        std::fs::write(plugin.join("manifest.json"), r#"{ "name": "p", "version": "1" }"#).unwrap();
        std::fs::write(
            &path,
            "[[plugin]]\nname = \"p\"\nkind = \"javascript\"\npath = \"p\"\nrules = [\"secret.txt\"]\n",
        )
        .unwrap();
        assert_eq!(Config::load(&path).unwrap().rules_text().unwrap(), "## p\n\nnot for agents");
    }

    #[test]
    fn mistakes_are_named() {
        let e = parse("[[plugin]]\nname = \"x\"\nkind = \"process\"\n").unwrap_err().to_string();
        assert!(e.ends_with("plugin \"x\": a process plugin needs `command`"), "{e}");
        let e =
            parse("[[plugin]]\nname = \"bad name\"\nkind = \"process\"\ncommand = \"x\"\n").unwrap_err().to_string();
        assert!(e.contains("the name must be 1 to 64"), "{e}");
        let e = parse("[[plugin]]\nname = \"m\"\nkind = \"mcp\"\n").unwrap_err().to_string();
        assert!(e.ends_with("an MCP server needs either `command` (stdio) or `url` (streamable HTTP)"), "{e}");
        let e = parse("[limits]\nmemory = 3\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `memory`"), "{e}");
    }
}
