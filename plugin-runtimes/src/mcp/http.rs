//! How codemode reaches an MCP server at a `url` (streamable HTTP): the HTTP client,
//! the plugin's headers and credentials, and what to tell a person when the server
//! refuses them.
//!
//! Credentials, in the configuration's words:
//! - `headers = { "X-Api-Key" = { env = "KEY" } }`: sent with every request, each
//!   written in the file or read from codemode's environment when the plugin connects;
//! - `bearer_token = { env = "TOKEN" }`: `Authorization: Bearer <token>`;
//! - neither of those carrying an `Authorization`: OAuth, with the tokens `codemode
//!   auth login` stored for this URL, once there are some ([`crate::oauth`]); until
//!   then the server is reached without a token, which is all a public server needs.
//!
//! Secret values are never logged: [`SettingValue`]'s `Debug` hides them, and errors
//! name the header, not its value.

use std::collections::HashMap;

use http::{HeaderName, HeaderValue};
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;

use crate::oauth::{login_hint, Challenge, OAuthSettings};
use crate::settings::{host_environment, SettingValue};

/// A server at a URL, with what it is sent.
#[derive(Debug, Clone)]
pub struct HttpServer {
    /// Its URL.
    pub url: String,
    /// Headers for every request (names as configured; values written or from the
    /// environment).
    pub headers: Vec<(String, SettingValue)>,
    /// A bearer token for every request.
    pub bearer_token: Option<SettingValue>,
    /// How codemode identifies itself for OAuth (used when the configuration carries no
    /// credentials of its own).
    pub oauth: OAuthSettings,
}

/// The transport to a server: with stored OAuth tokens, or without.
pub enum Transport {
    /// Headers and configured credentials only.
    Plain(StreamableHttpClientTransport<reqwest::Client>),
    /// Every request authorized with the stored tokens (refreshed as needed).
    Authorized(StreamableHttpClientTransport<AuthClient<reqwest::Client>>),
}

/// Headers codemode sets itself, which a plugin's `headers` must not replace.
pub const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "connection",
    "transfer-encoding",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// What is wrong with a configured header name, if anything.
pub fn header_name_problem(name: &str) -> Option<String> {
    if HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Some(format!("header {name:?} is not a valid HTTP header name"));
    }
    RESERVED_HEADERS
        .iter()
        .any(|r| r.eq_ignore_ascii_case(name))
        .then(|| format!("header {name:?} is set by codemode itself for MCP; remove it from `headers`"))
}

impl HttpServer {
    /// A server at `url`, sent no headers of its own (OAuth once logged in).
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), headers: Vec::new(), bearer_token: None, oauth: OAuthSettings::default() }
    }

    /// True when the configuration carries credentials (then OAuth is not used).
    pub fn has_configured_credentials(&self) -> bool {
        self.bearer_token.is_some() || self.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    }

    /// The configured headers with their values (read from the environment now).
    pub fn resolved_headers(&self) -> Result<HashMap<HeaderName, HeaderValue>, String> {
        let mut headers = HashMap::new();
        for (name, value) in &self.headers {
            let text = text_of(name, value)?;
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("header {name:?} is not a valid HTTP header name"))?;
            let mut value = HeaderValue::from_str(&text)
                .map_err(|_| format!("the value of header {name} holds characters a header cannot carry"))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        Ok(headers)
    }

    /// The transport for one session, and whether it carries stored OAuth tokens.
    pub async fn transport(&self, plugin: &str) -> Result<(Transport, bool), String> {
        let client =
            http_client().map_err(|e| format!("cannot make an HTTP client for {}: {}", self.url, with_causes(&e)))?;
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str()).custom_headers(self.resolved_headers()?);
        if let Some(token) = &self.bearer_token {
            config = config.auth_header(text_of("bearer_token", token)?);
        }
        if self.has_configured_credentials() {
            return Ok((Transport::Plain(StreamableHttpClientTransport::with_client(client, config)), false));
        }
        match crate::oauth::authorized_client(&self.url, &self.oauth, client.clone()).await {
            Ok(Some(authorized)) => {
                Ok((Transport::Authorized(StreamableHttpClientTransport::with_client(authorized, config)), true))
            }
            Ok(None) => Ok((Transport::Plain(StreamableHttpClientTransport::with_client(client, config)), false)),
            Err(e) => Err(format!("its stored authorization cannot be used ({e}); {}", login_hint(plugin))),
        }
    }

    /// What to tell a person when the server refused a request with `challenge`
    /// (`authorized`: stored OAuth tokens were sent).
    pub fn refusal(&self, plugin: &str, authorized: bool, challenge: &Challenge) -> String {
        match challenge {
            Challenge::InsufficientScope { scope, .. } => {
                let needs = scope.as_deref().map(|s| format!(" ({s})")).unwrap_or_default();
                if self.has_configured_credentials() {
                    format!("the server needs a permission{needs} the configured credentials do not grant")
                } else {
                    format!("the server needs a permission{needs} the login does not grant; {}", login_hint(plugin))
                }
            }
            Challenge::Unauthorized(_) if self.has_configured_credentials() => {
                "the server refused the configured credentials (HTTP 401); check the plugin's `bearer_token` or `headers`"
                    .into()
            }
            Challenge::Unauthorized(_) if authorized => {
                format!("its authorization expired or was revoked, and refreshing it failed; {}", login_hint(plugin))
            }
            Challenge::Unauthorized(_) => format!("the server needs authorization; {}", login_hint(plugin)),
        }
    }

    /// Remembers scopes the server asked for, for the next login.
    pub fn want_scopes(&self, scope: &str) {
        let wanted: Vec<String> = scope.split_whitespace().map(str::to_owned).collect();
        let saved = crate::oauth::store::TokenFile::for_server(&self.url)
            .and_then(|file| file.update(|saved| saved.wanted_scopes = wanted));
        if let Err(e) = saved {
            tracing::warn!("cannot remember the scopes {} asked for: {e}", self.url);
        }
    }
}

/// A configured value as header text.
fn text_of(name: &str, value: &SettingValue) -> Result<String, String> {
    match value.resolve(name, &host_environment).map_err(|e| e.to_string())? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        _ => Err(format!("{name} must be text")),
    }
}

/// Redirects followed per request.
const MAX_REDIRECTS: usize = 10;

/// The HTTP client of a server at a `url`. Built here rather than by rmcp, whose default
/// client panics when it cannot be built (for example when no CA certificate can be
/// loaded): that is a plugin that cannot start, never a host that stops. Connections
/// are not pooled idle, and only same-origin 307/308 redirects are followed (they keep
/// the method and body, and do not replay the session or headers to another host).
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    crate::tls::ensure_provider();
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if same_origin && keeps_body {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder().pool_max_idle_per_host(0).redirect(policy).build()
}

/// An error with its causes, as one line.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn server(headers: &[(&str, &str)], bearer: bool) -> HttpServer {
        HttpServer {
            url: "https://mcp.example.com/mcp".into(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), SettingValue::Literal((*v).into()))).collect(),
            bearer_token: bearer.then(|| SettingValue::FromEnv { env: "T".into() }),
            oauth: OAuthSettings::default(),
        }
    }

    #[test]
    fn reserved_and_malformed_header_names_are_refused() {
        assert!(header_name_problem("Mcp-Session-Id").unwrap().contains("set by codemode itself"));
        assert!(header_name_problem("bad header").unwrap().contains("not a valid"));
        assert_eq!(header_name_problem("X-Api-Key"), None);
        assert_eq!(header_name_problem("Authorization"), None);
    }

    #[test]
    fn configured_credentials_turn_oauth_off() {
        assert!(!server(&[("X-Api-Key", "k")], false).has_configured_credentials());
        assert!(server(&[("authorization", "Basic x")], false).has_configured_credentials());
        assert!(server(&[], true).has_configured_credentials());
    }

    #[test]
    fn refusals_name_the_fix() {
        let oauth = server(&[], false);
        let unauthorized = Challenge::Unauthorized("Bearer".into());
        assert!(oauth.refusal("linear", false, &unauthorized).contains("run `codemode auth login linear`"));
        assert!(oauth.refusal("linear", true, &unauthorized).contains("expired or was revoked"));
        let scope = Challenge::InsufficientScope { header: String::new(), scope: Some("a b".into()) };
        assert!(oauth.refusal("linear", true, &scope).contains("(a b) the login does not grant"));
        let token = server(&[], true);
        assert!(token.refusal("linear", false, &unauthorized).contains("configured credentials"));
    }

    #[test]
    fn header_values_come_from_the_file_or_the_environment() {
        std::env::set_var("CODEMODE_TEST_HEADER_VALUE", "from-env");
        let mut s = server(&[("X-Literal", "written")], false);
        s.headers.push(("X-From-Env".into(), SettingValue::FromEnv { env: "CODEMODE_TEST_HEADER_VALUE".into() }));
        let headers = s.resolved_headers().unwrap();
        assert_eq!(headers[&HeaderName::from_static("x-literal")], "written");
        assert_eq!(headers[&HeaderName::from_static("x-from-env")], "from-env");
        s.headers.push(("X-Missing".into(), SettingValue::FromEnv { env: "CODEMODE_TEST_UNSET_VARIABLE".into() }));
        assert!(s.resolved_headers().unwrap_err().contains("CODEMODE_TEST_UNSET_VARIABLE"));
    }
}
