//! The MCP server's settings: the `[server]` table of the configuration file
//! ([`ServerConfig`]), which `codemode mcp` and `codemode serve` read and their flags
//! override. Defined beside the server that uses them, so that the server needs nothing
//! from the configuration file (`codemode::config` re-exports them).

use std::path::PathBuf;

use codemode_core::tool::OpenedFolder;
use serde::Deserialize;

/// `[server]`: the MCP server (`codemode mcp`, `codemode serve`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// `code` (one `execute` tool, the default) or `tools` (each plugin tool as an MCP
    /// tool of its own, named as `tool_names` says).
    #[serde(default)]
    pub mode: ServerMode,
    /// Programs that may run at once; more wait their turn.
    #[serde(default = "default_concurrent_programs")]
    pub max_concurrent_programs: usize,
    /// Programs one MCP session may run at once (default: all of them under
    /// `codemode mcp`, whose one client is the only session; three quarters of them
    /// under `codemode serve`, so no session can hold every slot).
    pub max_programs_per_session: Option<usize>,
    /// Programs that may wait for a person's answer at once (an approval or a plugin's
    /// question). A paused program holds no slot, only its idle worker; a question
    /// beyond this is not asked and its call rejects (default: twice
    /// `max_concurrent_programs`).
    pub max_paused_programs: Option<usize>,
    /// Paused programs of one MCP session (or one 2026-07-28 client's credential) at
    /// once (default: all of them under `codemode mcp`; three quarters of them under
    /// `codemode serve`, so one client cannot take every place).
    pub max_paused_programs_per_session: Option<usize>,
    /// How long a question (an approval, a plugin's question, a sampling request) waits
    /// for its answer, in ms (default 5 minutes, at least 1 s). Past it the question is
    /// refused, the program's later questions are not asked (its client is taken to be
    /// gone) and the program runs on to its end: a program whose client dropped away is
    /// paused for at most this long.
    #[serde(default = "default_answer_wait_ms")]
    pub answer_wait_ms: u64,
    /// The largest result text handed to the agent; larger values are cut structurally.
    #[serde(default = "default_output_bytes")]
    pub output_bytes: usize,
    /// `codemode serve`: browser origins allowed to call it, besides the loopback ones
    /// on a loopback server (`https://app.example.com`, `http://localhost:*`).
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Workers kept forked and locked down ahead of demand, for programs with the
    /// default limits (default: two per core, between two and eight; 0 turns the pool off).
    pub warm_workers: Option<usize>,
    /// `codemode serve`: MCP sessions open at once, at most.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// `codemode serve`: a session with no request for this long is closed, in ms.
    #[serde(default = "default_session_idle_ms")]
    pub session_idle_ms: u64,
    /// `codemode serve`: serve HTTPS with this certificate chain (PEM; with `tls_key`).
    pub tls_cert: Option<PathBuf>,
    /// `codemode serve`: the certificate's private key (PEM).
    pub tls_key: Option<PathBuf>,
    /// Code mode: the size, in characters, up to which the execute description declares
    /// every tool; past it, plugins are listed by name and programs find declarations
    /// with `tools.$search` (`"unlimited"`: always declare every tool).
    #[serde(default)]
    pub catalog_budget: CatalogBudget,
    /// Separate tools mode: `own` names (the default; `<plugin>_<tool>` only where two
    /// plugins share one) or `prefixed` (`<plugin>__<tool>` for every tool).
    #[serde(default)]
    pub tool_names: ToolNames,
    /// Which MCP sessions receive codemode's log as `notifications/message`: `"all"`,
    /// `"none"`, or `{ token_env = "VAR" }` (sessions signed in with that operator token).
    /// Default: all under `codemode mcp`, none under `codemode serve`.
    pub client_logs: Option<super::logs::ClientLogs>,
    /// `codemode serve`: answer every request on its own, with no MCP session (for
    /// replicas behind a load balancer; see `--stateless`).
    #[serde(default)]
    pub stateless: bool,
    /// `codemode serve`: where to serve /healthz, /readyz and /metrics.
    pub ops_listen: Option<std::net::SocketAddr>,
    /// `codemode serve` with replicas: this replica's own MCP URL, as the others reach
    /// it (`http://10.1.2.3:8931/mcp`). A 2026-07-28 client's program paused for an
    /// answer is named by it, and a retry that reaches another replica is passed on to
    /// it (see `serve::rounds`).
    pub replica_url: Option<String>,
    /// The environment variable holding the key that seals request states (at least
    /// 32 bytes), the same on every replica (default `CODEMODE_STATE_KEY`; without it,
    /// a key of this process).
    #[serde(default = "default_state_key_env")]
    pub state_key_env: String,
    /// `tools.$search`'s sentence encoder: the folder of all-MiniLM-L6-v2 (relative to
    /// this file), or `"off"` for BM25 alone. Without it, codemode looks in
    /// `$XDG_DATA_HOME/codemode/models/all-MiniLM-L6-v2`, then the container image's
    /// copy (`codemode_core::tool::semantic::find_model`).
    pub search_model: Option<String>,
    /// Seed 001's `maxLoadedPerSession`: tools one session may have loaded at once
    /// (`tools.$skills.load`/`loadTool`); loading more unloads the least recently used.
    #[serde(default = "default_max_loaded")]
    pub max_loaded_per_session: usize,
    /// Seed 001's `alwaysLoadedTools`: tools private to a skill that every session may
    /// call without loading them (`plugin.tool`, or a tool name for that tool of any
    /// plugin).
    #[serde(default)]
    pub always_loaded_tools: Vec<String>,
    /// The agent every session selects (seed 001's `agents/<name>/`, written `name` or
    /// `plugin/name`; `--agent` overrides): its files join the instructions and its
    /// private tools and skills unlock. A client may select one more for its session
    /// with the request `_meta` key `codemode/agent`.
    pub agent: Option<String>,
    /// The agents a client may select for its session with the request `_meta` key
    /// `codemode/agent` (each `name` or `plugin/name`). Unset: a client of `codemode
    /// mcp` (on this machine, started by its user) may select any agent, and a client
    /// of `codemode serve` none; a name no enabled plugin has is refused either way,
    /// with the names there are.
    #[serde(default)]
    pub client_agents: Option<Vec<String>>,
    /// `codemode serve`: the folders a client's workspace (its first `file://` root, or
    /// `_meta.workspace`) must lie within for plugins to work in its files
    /// (`host.workspace`): a remote client names paths on this machine. Empty (the
    /// default): plugins get no workspace from an HTTP client. `codemode mcp` (a client
    /// on this machine that started codemode as its own user) needs none.
    #[serde(default)]
    pub workspace_roots: Vec<PathBuf>,
}

/// Opens the workspace folder a client named, once, for every file request of its
/// program. For a remote client (`roots` given) the folder **as opened** must lie within
/// one of `roots` (its real path read back from the descriptor): a folder swapped for a
/// link after this check changes nothing, since later requests resolve beneath this
/// descriptor, not the name. `Err` says why plugins may not work in it.
pub fn open_workspace(workspace: &str, roots: Option<&[PathBuf]>) -> Result<OpenedFolder, String> {
    use nix::fcntl::OFlag;
    if roots.is_some_and(|r| r.is_empty()) {
        return Err(format!("the client's workspace {workspace} is a path on the server, and codemode serve lets plugins work in a client's files only within its [server] workspace_roots, which are not set"));
    }
    let dir = nix::fcntl::open(
        workspace,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|errno| format!("the client's workspace {workspace} is not a folder on the server ({})", errno.desc()))?;
    let Some(roots) = roots else { return Ok(OpenedFolder::new(dir)) };
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&dir)))
        .map_err(|e| format!("the client's workspace {workspace} cannot be checked against the server's roots: {e}"))?;
    if roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()).any(|root| opened.starts_with(root)) {
        return Ok(OpenedFolder::new(dir));
    }
    Err(format!(
        "the client's workspace {workspace} is not within the server's [server] workspace_roots ({})",
        roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}

impl ServerConfig {
    /// How sessions load skills and tools (`codemode_core::tool::skills`).
    pub fn load_settings(&self) -> codemode_core::tool::skills::LoadSettings {
        codemode_core::tool::skills::LoadSettings {
            max_loaded: self.max_loaded_per_session,
            always_loaded: self.always_loaded_tools.clone(),
            agents: self.agent.iter().cloned().collect(),
        }
    }
}

fn default_max_loaded() -> usize {
    codemode_core::tool::skills::DEFAULT_MAX_LOADED
}

fn default_state_key_env() -> String {
    "CODEMODE_STATE_KEY".into()
}

/// How large the tool declarations in the execute description may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogBudget {
    /// Declare every tool while the declarations take at most this many characters.
    Chars(usize),
    /// Always declare every tool (seed 000's rule at any size).
    Unlimited,
}

impl CatalogBudget {
    /// About 8,000 characters: some thirty tools with their schemas.
    pub const DEFAULT: Self = Self::Chars(8_000);
}

impl Default for CatalogBudget {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl<'de> Deserialize<'de> for CatalogBudget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Chars(usize),
            Word(String),
        }
        match Written::deserialize(deserializer) {
            Ok(Written::Chars(n)) if n > 0 => Ok(Self::Chars(n)),
            Ok(Written::Word(w)) if w == "unlimited" => Ok(Self::Unlimited),
            _ => Err(serde::de::Error::custom(
                "catalog_budget must be a number of characters above 0 (default 8000) or \"unlimited\"",
            )),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            mode: ServerMode::default(),
            max_concurrent_programs: default_concurrent_programs(),
            max_programs_per_session: None,
            max_paused_programs: None,
            max_paused_programs_per_session: None,
            answer_wait_ms: default_answer_wait_ms(),
            output_bytes: default_output_bytes(),
            allowed_origins: Vec::new(),
            warm_workers: None,
            stateless: false,
            ops_listen: None,
            replica_url: None,
            state_key_env: default_state_key_env(),
            search_model: None,
            max_sessions: default_max_sessions(),
            session_idle_ms: default_session_idle_ms(),
            tls_cert: None,
            tls_key: None,
            catalog_budget: CatalogBudget::DEFAULT,
            tool_names: ToolNames::Own,
            client_logs: None,
            max_loaded_per_session: default_max_loaded(),
            always_loaded_tools: Vec::new(),
            agent: None,
            workspace_roots: Vec::new(),
            client_agents: None,
        }
    }
}

fn default_max_sessions() -> usize {
    256
}

fn default_session_idle_ms() -> u64 {
    10 * 60 * 1000
}

fn default_concurrent_programs() -> usize {
    8
}

impl ServerConfig {
    /// `max_paused_programs`, or its default: twice `max_concurrent_programs`. A paused
    /// program's worker is idle but keeps its memory, so the default keeps the workers
    /// alive within three times the running ones, while every slot's program can pause
    /// and the slots, refilled, can pause once more before a question is refused.
    pub fn paused_programs(&self) -> usize {
        self.max_paused_programs.unwrap_or(2 * self.max_concurrent_programs.max(1))
    }
}

fn default_answer_wait_ms() -> u64 {
    super::approvals::ANSWER_WAIT.as_millis() as u64
}

fn default_output_bytes() -> usize {
    64 * 1024
}

/// How the MCP server presents the tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerMode {
    /// One `execute` tool running JavaScript programs.
    #[default]
    Code,
    /// Each plugin tool as an MCP tool of its own.
    Tools,
}

/// How separate tools mode names each plugin tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolNames {
    /// Seed 000's rule: a tool keeps its own name, and `<plugin>_<tool>` is used only
    /// for a name two plugins share.
    #[default]
    Own,
    /// Seed 003's rule: every tool is `<plugin>__<tool>`.
    Prefixed,
}

#[cfg(test)]
mod tests {
    use super::open_workspace;

    #[test]
    fn a_remote_workspace_must_lie_within_the_roots() -> std::io::Result<()> {
        let base = std::env::temp_dir().join(format!("codemode-workspace-roots-{}", std::process::id()));
        let (roots, outside) = (base.join("roots"), base.join("outside"));
        let inside = roots.join("project");
        std::fs::create_dir_all(&inside)?;
        std::fs::create_dir_all(&outside)?;
        // A link inside the roots that leads out is judged by where it leads.
        let link = roots.join("out");
        std::os::unix::fs::symlink(&outside, &link)?;
        let allowed = [roots.clone()];
        let open = |w: &std::path::Path| open_workspace(&w.display().to_string(), Some(&allowed));
        assert!(open(&inside).is_ok());
        let why = open(&outside).err();
        assert!(why.is_some_and(|w| w.contains("is not within the server's [server] workspace_roots")), "outside");
        assert!(open(&link).is_err());
        assert!(open(std::path::Path::new("/")).is_err());
        let none = open_workspace(&inside.display().to_string(), Some(&[]));
        assert!(none.err().is_some_and(|w| w.contains("which are not set")));
        assert!(open(std::path::Path::new("/no/such/folder")).err().is_some_and(|w| w.contains("not a folder")));
        // A local client's workspace is opened without roots to check.
        assert!(open_workspace(&outside.display().to_string(), None).is_ok());
        std::fs::remove_dir_all(&base)
    }
}
