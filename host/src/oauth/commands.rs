//! `codemode auth login|status|logout`: the person's side of OAuth, on the plugins of a
//! configuration. Each function returns the text to print; the command line prints it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::login::{login, LoginTarget};
use super::store::TokenFile;
use crate::config::{Config, PluginKind};
use crate::plugins::mcp::{HttpServer, McpTransport};

/// Why an auth command could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum AuthCommandError {
    /// The plugin is not an MCP server at a URL.
    #[error("{0}")]
    NotApplicable(String),
    /// The login failed.
    #[error(transparent)]
    Login(#[from] Box<super::login::LoginError>),
    /// The token file.
    #[error(transparent)]
    Store(#[from] super::store::StoreError),
}

/// The MCP servers at a URL in `config`, by plugin name.
fn url_servers(config: &Config) -> Vec<(String, HttpServer)> {
    config
        .mcp_servers()
        .into_iter()
        .filter_map(|m| match m.transport {
            McpTransport::Http(server) => Some((m.name, server)),
            McpTransport::Stdio { .. } => None,
        })
        .collect()
}

/// The server of `plugin`, or why it has none to log in to.
fn server_of(config: &Config, plugin: &str) -> Result<HttpServer, AuthCommandError> {
    if let Some((_, server)) = url_servers(config).into_iter().find(|(name, _)| name == plugin) {
        return Ok(server);
    }
    let known = url_servers(config).into_iter().map(|(name, _)| name).collect::<Vec<_>>();
    let configured = config.plugins.iter().find(|p| p.name == plugin);
    let why = match configured {
        Some(p) if !p.enabled => format!("plugin {plugin} is disabled (`enabled = false`)"),
        Some(p) if p.kind() == PluginKind::Mcp => {
            format!("plugin {plugin} is started as a command; only MCP servers at a `url` log in")
        }
        Some(p) => format!("plugin {plugin} is a {} plugin; only MCP servers at a `url` log in", p.kind().as_str()),
        None if known.is_empty() => {
            format!("there is no plugin {plugin}, and no MCP server at a `url` in this configuration")
        }
        None => format!("there is no plugin {plugin}; MCP servers at a `url` here: {}", known.join(", ")),
    };
    Err(AuthCommandError::NotApplicable(why))
}

/// `codemode auth login PLUGIN`: prints the link through `announce`, waits up to `wait`.
pub async fn login_command(
    config: &Config,
    plugin: &str,
    wait: Duration,
    announce: &dyn Fn(&str),
) -> Result<String, AuthCommandError> {
    let server = server_of(config, plugin)?;
    if server.has_configured_credentials() {
        return Err(AuthCommandError::NotApplicable(format!(
            "plugin {plugin} sends its own token (`bearer_token` or an `Authorization` header), so it does not log in; remove that to use OAuth"
        )));
    }
    let headers = server.resolved_headers().map_err(AuthCommandError::NotApplicable)?;
    let client_secret =
        server.oauth.secret(&crate::plugins::settings::host_environment).map_err(AuthCommandError::NotApplicable)?;
    let target = LoginTarget {
        plugin: plugin.to_string(),
        server: server.url.clone(),
        headers,
        settings: server.oauth.clone(),
        client_secret,
        wait,
    };
    let report = login(&target, announce).await.map_err(Box::new)?;
    let scopes = if report.scopes.is_empty() { "none named".to_string() } else { report.scopes.join(" ") };
    Ok(format!(
        "codemode: plugin {plugin} is authorized ({}; scopes: {scopes}); tokens are in {}",
        report.identity,
        report.file.display()
    ))
}

/// `codemode auth status`: one line per MCP server at a URL.
pub fn status_command(config: &Config) -> Result<String, AuthCommandError> {
    let servers = url_servers(config);
    if servers.is_empty() {
        return Ok("codemode: this configuration has no MCP server at a `url`".into());
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let mut lines = Vec::new();
    for (name, server) in servers {
        let state = if server.has_configured_credentials() {
            "sends its configured token (no login)".to_string()
        } else {
            let file = TokenFile::for_server(&server.url)?;
            match file.read()? {
                Some(saved) if saved.has_token() => {
                    let expiry = match saved.expires_at() {
                        Some(at) if at > now => format!("the token expires in {}", human_span(at - now)),
                        Some(_) => "the token has expired".to_string(),
                        None => "the token has no stated expiry".to_string(),
                    };
                    let refresh = if saved.can_refresh() {
                        "renewed automatically"
                    } else {
                        "no refresh token: log in again when it expires"
                    };
                    let wanted = if saved.wanted_scopes.is_empty() {
                        String::new()
                    } else {
                        format!("; the server asked for more ({}): log in again", saved.wanted_scopes.join(" "))
                    };
                    format!("logged in: {expiry}, {refresh}{wanted} ({})", file.path().display())
                }
                _ => format!("not logged in (needed only when the server asks: `codemode auth login {name}`)"),
            }
        };
        lines.push(format!("{name}  {}  {state}", server.url));
    }
    Ok(lines.join("\n"))
}

/// `codemode auth logout PLUGIN`: forgets the server's tokens.
pub fn logout_command(config: &Config, plugin: &str) -> Result<String, AuthCommandError> {
    let server = server_of(config, plugin)?;
    let file = TokenFile::for_server(&server.url)?;
    Ok(if file.remove()? {
        format!("codemode: forgot the tokens of plugin {plugin} ({})", server.url)
    } else {
        format!("codemode: plugin {plugin} was not logged in")
    })
}

/// A duration as a person reads it: "52 min", "3 h", "2 days".
fn human_span(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7_200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3_600),
        s => format!("{} days", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_naturally() {
        assert_eq!(human_span(59), "59 s");
        assert_eq!(human_span(3_120), "52 min");
        assert_eq!(human_span(10_800), "3 h");
        assert_eq!(human_span(259_200), "3 days");
    }
}
