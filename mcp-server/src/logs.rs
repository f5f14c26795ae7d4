//! codemode's log for MCP clients: the `logging` capability of codemode's MCP server.
//!
//! Where it sits: a `tracing` layer ([`ClientLogLayer`], installed by the command line
//! beside the one that writes stderr) copies codemode's own events at `info` and above
//! (plugins' standard error and console lines, which carry the plugin's name, and
//! codemode's warnings and errors) into one broadcast channel. Each MCP session that
//! may receive logs ([`ClientLogs`]) sends what it hears as `notifications/message`,
//! from its `logging/setLevel` level up (`info` until the client sets one).
//!
//! Who may receive them is the operator's choice, because plugins serve every session:
//! under `codemode mcp` the one client on standard input is the operator's own agent
//! and gets them; under `codemode serve` no session does unless `[server] client_logs`
//! says so (`"all"`, or `{ token_env = "VAR" }` for sessions that sign in with that
//! operator token), so one tenant never reads what another's calls made a plugin print.
//!
//! Only events from codemode's own crates are forwarded: rmcp's and the HTTP stack's
//! events stay in the log (forwarding a failed send's warning could loop).

use std::sync::OnceLock;

use serde::Deserialize;
use tokio::sync::broadcast;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// How many log lines a slow session may fall behind before it skips some.
const BACKLOG: usize = 1024;

/// One event of codemode's log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// Its level.
    pub level: Level,
    /// The plugin it is about, or `codemode`.
    pub logger: String,
    /// Its text.
    pub text: String,
}

/// MCP's log levels, least severe first (what codemode's events map to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error` (and the levels above it, which codemode does not use).
    Error,
}

/// `[server] client_logs`: which MCP sessions receive codemode's log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ClientLogs {
    /// None (the default of `codemode serve`).
    #[default]
    None,
    /// Every session (the default of `codemode mcp`, whose one client is the operator's).
    All,
    /// Sessions whose requests carry `Authorization: Bearer <the token in this variable>`.
    TokenEnv(String),
}

impl<'de> Deserialize<'de> for ClientLogs {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Word(String),
            Token { token_env: String },
        }
        match Written::deserialize(deserializer) {
            Ok(Written::Word(w)) if w == "none" => Ok(Self::None),
            Ok(Written::Word(w)) if w == "all" => Ok(Self::All),
            Ok(Written::Token { token_env }) if !token_env.is_empty() => Ok(Self::TokenEnv(token_env)),
            _ => Err(serde::de::Error::custom(
                "client_logs must be \"none\", \"all\", or { token_env = \"VAR\" } (sessions signed in with that token)",
            )),
        }
    }
}

/// Whether a session whose requests carry `authorization` (the `Authorization` header)
/// receives the log, given the operator's `log_token` (the value of `token_env`).
pub fn session_gets_logs(setting: &ClientLogs, authorization: Option<&str>, log_token: Option<&str>) -> bool {
    match setting {
        ClientLogs::None => false,
        ClientLogs::All => true,
        ClientLogs::TokenEnv(_) => match (authorization.and_then(|a| a.strip_prefix("Bearer ")), log_token) {
            (Some(given), Some(token)) if !token.is_empty() => {
                given.len() == token.len()
                    && given.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
            }
            _ => false,
        },
    }
}

fn channel() -> &'static broadcast::Sender<LogLine> {
    static CHANNEL: OnceLock<broadcast::Sender<LogLine>> = OnceLock::new();
    CHANNEL.get_or_init(|| broadcast::channel(BACKLOG).0)
}

/// Hears every log line from now on.
pub fn subscribe() -> broadcast::Receiver<LogLine> {
    channel().subscribe()
}

/// The `tracing` layer that feeds [`subscribe`]'s channel.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClientLogLayer;

/// Reads an event's message and its `plugin` field.
#[derive(Default)]
struct Fields {
    message: String,
    plugin: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            "plugin" => self.plugin = Some(value.to_string()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "plugin" => self.plugin = Some(format!("{value:?}")),
            _ => {}
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ClientLogLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let sender = channel();
        if sender.receiver_count() == 0 {
            return;
        }
        let metadata = event.metadata();
        // The per-program event is the operator's record of every caller's programs:
        // never a client's.
        if !metadata.target().starts_with("codemode")
            || metadata.target() == codemode_core::telemetry::PROGRAM_LOG_TARGET
        {
            return;
        }
        let level = match *metadata.level() {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warning,
            tracing::Level::INFO => Level::Info,
            _ => return,
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let logger = fields.plugin.unwrap_or_else(|| "codemode".into());
        let _ = sender.send(LogLine { level, logger, text: fields.message });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn only_the_sessions_the_operator_named_get_logs() {
        assert!(!session_gets_logs(&ClientLogs::None, Some("Bearer t"), Some("t")));
        assert!(session_gets_logs(&ClientLogs::All, None, None));
        let token = ClientLogs::TokenEnv("LOG_TOKEN".into());
        assert!(session_gets_logs(&token, Some("Bearer operator"), Some("operator")));
        assert!(!session_gets_logs(&token, Some("Bearer tenant"), Some("operator")));
        assert!(!session_gets_logs(&token, None, Some("operator")));
        assert!(!session_gets_logs(&token, Some("Bearer "), Some("")), "an empty token names nobody");
    }

    #[test]
    fn the_setting_reads_as_written() {
        #[derive(Deserialize)]
        struct S {
            client_logs: ClientLogs,
        }
        let read = |t: &str| toml::from_str::<S>(t).map(|s| s.client_logs);
        assert_eq!(read("client_logs = \"all\"").unwrap(), ClientLogs::All);
        assert_eq!(read("client_logs = { token_env = \"V\" }").unwrap(), ClientLogs::TokenEnv("V".into()));
        assert!(read("client_logs = \"some\"").unwrap_err().to_string().contains("must be \"none\", \"all\""));
    }

    #[test]
    fn codemodes_events_reach_subscribers_with_their_plugin() {
        let mut heard = subscribe();
        let subscriber = tracing_subscriber::registry().with(ClientLogLayer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(plugin = "notes", "opened the database");
            tracing::debug!("not forwarded: below info");
            tracing::warn!(target: "rmcp::service", "not forwarded: another crate");
            tracing::warn!("a warning of codemode's own");
        });
        let first = heard.try_recv().unwrap();
        assert_eq!(first, LogLine { level: Level::Info, logger: "notes".into(), text: "opened the database".into() });
        let second = heard.try_recv().unwrap();
        assert_eq!((second.level, second.logger.as_str()), (Level::Warning, "codemode"));
        assert!(heard.try_recv().is_err());
    }
}
