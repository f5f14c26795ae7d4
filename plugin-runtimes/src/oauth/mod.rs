//! OAuth 2.1 for MCP servers at a `url`, through rmcp's authorization support.
//!
//! Where it sits: `codemode auth login PLUGIN` ([`login`]) runs the authorization-code
//! flow with PKCE once, in the person's browser, and leaves the tokens in the user's
//! data folder ([`store`]); afterwards every connection to that server
//! ([`crate::mcp`]) goes through [`authorized_client`], an rmcp `AuthClient`
//! that adds the access token to each request and refreshes it before it expires (and
//! once more when the server rejects it).
//!
//! Nothing is configured for a server to use OAuth: a `url` plugin without a token of
//! its own (`bearer_token`, or an `Authorization` header) is reached without one until
//! it asks for authorization (HTTP 401); it is then unavailable, with the command that
//! fixes it. The optional `oauth` table of a plugin says how codemode identifies itself
//! ([`OAuthSettings`]): a client registered ahead of time with the authorization server
//! (`client_id`, `client_secret`), a Client ID Metadata Document (`client_metadata_url`),
//! or, by default, dynamic client registration; the scopes to ask for; and the loopback
//! port for the redirect.
//!
//! What stays in rmcp: metadata discovery (protected resource metadata, authorization
//! server metadata, the 2025-03-26 fallbacks), scope selection from the challenge and
//! the metadata, dynamic registration, PKCE, the `resource` indicator, the code
//! exchange, and refreshing. What codemode adds: the token file, the loopback redirect,
//! the choice of client identity ([`choose_client`]), remembering scopes a server asked
//! for when it refused a call, and the messages that tell a person what to run.

pub mod login;
pub mod store;

use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager, OAuthClientConfig};
use serde::Deserialize;

use crate::settings::SettingValue;
use store::{StoreError, TokenFile};

/// A plugin's `oauth` table: how codemode identifies itself to the server's
/// authorization server. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthSettings {
    /// A client id registered with the authorization server ahead of time (otherwise a
    /// Client ID Metadata Document or dynamic registration is used).
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (usually `{ env = "VAR" }`).
    pub client_secret: Option<SettingValue>,
    /// The scopes to ask for (otherwise the server's challenge or metadata decides).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The HTTPS URL of a Client ID Metadata Document describing this client, used as
    /// its client id where the authorization server supports that.
    pub client_metadata_url: Option<String>,
    /// The loopback port the browser is sent back to (otherwise any free port), for
    /// authorization servers that need the exact redirect URI registered.
    pub redirect_port: Option<u16>,
}

impl OAuthSettings {
    /// What is wrong with the table, in a sentence that says what to write instead.
    pub fn problem(&self) -> Option<String> {
        if self.client_secret.is_some() && self.client_id.is_none() {
            return Some("`oauth.client_secret` needs `oauth.client_id`, the client it belongs to".into());
        }
        if let Some(url) = &self.client_metadata_url {
            let usable = url::Url::parse(url).is_ok_and(|u| u.scheme() == "https" && u.path() != "/");
            if !usable {
                return Some(format!(
                    "`oauth.client_metadata_url` must be an https URL with a path (the metadata document), not {url:?}"
                ));
            }
        }
        if self.redirect_port == Some(0) {
            return Some(
                "`oauth.redirect_port` must be a port number from 1 to 65535 (leave it out for any free port)".into(),
            );
        }
        None
    }

    /// The client secret, read from the environment when it names a variable.
    pub fn secret(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, String> {
        let Some(value) = &self.client_secret else { return Ok(None) };
        match value.resolve("oauth.client_secret", lookup) {
            Ok(serde_json::Value::String(s)) => Ok(Some(s)),
            Ok(_) => Err("`oauth.client_secret` must be text".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Which identity codemode presents to an authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientIdentity {
    /// The client id (and secret) the configuration gives.
    PreRegistered {
        /// The id.
        client_id: String,
        /// Its secret, for a confidential client.
        client_secret: Option<String>,
    },
    /// The Client ID Metadata Document's URL as the client id.
    MetadataDocument(String),
    /// A client registered now, with the authorization server's registration endpoint.
    Register,
}

/// Why no identity can be presented.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the authorization server of {server} offers no way for codemode to identify itself: it accepts neither dynamic client registration nor{cimd} Client ID Metadata Documents; register a client with it and set `oauth = {{ client_id = \"...\" }}` (and `client_secret` for a confidential client) in plugin {plugin}'s entry")]
pub struct NoClientIdentity {
    /// The plugin.
    pub plugin: String,
    /// The server.
    pub server: String,
    /// " (configured)" when a document was configured but is not accepted.
    pub cimd: &'static str,
}

/// Decides the client identity, in the MCP specification's order: a pre-registered
/// client, then a Client ID Metadata Document where the authorization server accepts
/// one (`accepts_metadata_documents`), then dynamic registration where it has an
/// endpoint for it (`registers`).
pub fn choose_client(
    client_id: Option<&str>,
    client_secret: Option<String>,
    metadata_document: Option<&str>,
    accepts_metadata_documents: bool,
    registers: bool,
) -> Option<ClientIdentity> {
    if let Some(id) = client_id {
        return Some(ClientIdentity::PreRegistered { client_id: id.to_string(), client_secret });
    }
    match metadata_document {
        Some(url) if accepts_metadata_documents => Some(ClientIdentity::MetadataDocument(url.to_string())),
        _ if registers => Some(ClientIdentity::Register),
        _ => None,
    }
}

/// Why a connection could not be authorized.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The token file.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// rmcp's authorization (discovery, registration, exchange, refresh).
    #[error("{0}")]
    Auth(#[from] AuthError),
    /// The configuration's secret could not be read.
    #[error("{0}")]
    Settings(String),
}

/// An HTTP client that authorizes every request to `server` with its stored tokens
/// (refreshing them as needed), or `None` when none are stored.
pub async fn authorized_client(
    server: &str,
    settings: &OAuthSettings,
    http: reqwest::Client,
) -> Result<Option<AuthClient<reqwest::Client>>, OAuthError> {
    let file = TokenFile::for_server(server)?;
    let Some(saved) = file.read()? else { return Ok(None) };
    if !saved.has_token() {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(server).await?;
    manager.set_credential_store(file);
    if !manager.initialize_from_store().await? {
        return Ok(None);
    }
    // rmcp restores only the client id: a confidential client also needs its secret to
    // refresh, from the configuration (pre-registered) or the registration (saved).
    let configured = settings.secret(&crate::settings::host_environment).map_err(OAuthError::Settings)?;
    let secret = configured.or(saved.client_secret.clone());
    if let (Some(secret), Some(credentials)) = (secret, &saved.credentials) {
        let redirect = saved.redirect_uri.clone().unwrap_or_else(|| server.to_string());
        manager.configure_client(
            OAuthClientConfig::new(credentials.client_id.clone(), redirect).with_client_secret(secret),
        )?;
    }
    Ok(Some(AuthClient::new(http, manager)))
}

/// The `WWW-Authenticate` challenge behind an error from rmcp (a 401, or a 403 for
/// lack of scope), found by walking the error's causes.
pub fn challenge_in(error: &(dyn std::error::Error + 'static)) -> Option<Challenge> {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
    let mut cause = Some(error);
    while let Some(current) = cause {
        if let Some(e) = current.downcast_ref::<AuthRequiredError>() {
            return Some(Challenge::Unauthorized(e.www_authenticate_header.clone()));
        }
        if let Some(e) = current.downcast_ref::<InsufficientScopeError>() {
            let scope = e.get_required_scope().map(str::to_owned).or_else(|| scope_of(&e.www_authenticate_header));
            return Some(Challenge::InsufficientScope { header: e.www_authenticate_header.clone(), scope });
        }
        cause = current.source();
    }
    None
}

/// What a server said when it refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// 401: no token, or one it does not accept.
    Unauthorized(String),
    /// 403 `insufficient_scope`: the token lacks `scope`.
    InsufficientScope {
        /// The whole header.
        header: String,
        /// The scopes the request needs, when the server said.
        scope: Option<String>,
    },
}

impl Challenge {
    /// A challenge from its header alone: a 403's carries `error="insufficient_scope"`.
    pub fn from_header(header: &str) -> Self {
        if header.to_ascii_lowercase().contains("insufficient_scope") {
            Challenge::InsufficientScope { header: header.to_string(), scope: scope_of(header) }
        } else {
            Challenge::Unauthorized(header.to_string())
        }
    }

    /// The `WWW-Authenticate` header.
    pub fn header(&self) -> &str {
        match self {
            Challenge::Unauthorized(h) | Challenge::InsufficientScope { header: h, .. } => h,
        }
    }
}

/// The `scope` parameter of a `WWW-Authenticate` header (quoted or not).
pub fn scope_of(header: &str) -> Option<String> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("scope=") {
        let at = from + found;
        // `scope=`, not the end of another parameter's name.
        let starts_word = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',' | b'\t');
        let value = &header[at + "scope=".len()..];
        if starts_word {
            let value = match value.strip_prefix('"') {
                Some(quoted) => quoted.split('"').next().unwrap_or_default(),
                None => value.split([',', ' ']).next().unwrap_or_default(),
            };
            return Some(value.to_string()).filter(|v| !v.is_empty());
        }
        from = at + 1;
    }
    None
}

/// What to tell a person whose plugin needs a login: the command, and why.
pub fn login_hint(plugin: &str) -> String {
    format!("run `codemode auth login {plugin}` (it prints a link to open in a browser), then try again")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_identity_follows_the_specifications_order() {
        let pre = choose_client(Some("id"), Some("s".into()), Some("https://c/m.json"), true, true);
        assert_eq!(
            pre,
            Some(ClientIdentity::PreRegistered { client_id: "id".into(), client_secret: Some("s".into()) })
        );
        let doc = choose_client(None, None, Some("https://c/m.json"), true, true);
        assert_eq!(doc, Some(ClientIdentity::MetadataDocument("https://c/m.json".into())));
        assert_eq!(choose_client(None, None, Some("https://c/m.json"), false, true), Some(ClientIdentity::Register));
        assert_eq!(choose_client(None, None, None, true, true), Some(ClientIdentity::Register));
        assert_eq!(choose_client(None, None, None, true, false), None);
    }

    #[test]
    fn settings_problems_say_what_to_write() {
        let secret_alone =
            OAuthSettings { client_secret: Some(SettingValue::Literal("s".into())), ..Default::default() };
        assert!(secret_alone.problem().unwrap().contains("needs `oauth.client_id`"));
        let plain = OAuthSettings { client_metadata_url: Some("http://c/m.json".into()), ..Default::default() };
        assert!(plain.problem().unwrap().contains("https URL with a path"));
        let root = OAuthSettings { client_metadata_url: Some("https://c/".into()), ..Default::default() };
        assert!(root.problem().is_some());
        let good = OAuthSettings { client_metadata_url: Some("https://c/m.json".into()), ..Default::default() };
        assert_eq!(good.problem(), None);
    }

    #[test]
    fn scopes_are_read_from_challenges() {
        assert_eq!(scope_of(r#"Bearer scope="a b", error="insufficient_scope""#).as_deref(), Some("a b"));
        assert_eq!(scope_of("Bearer realm=x, scope=read:data").as_deref(), Some("read:data"));
        assert_eq!(scope_of(r#"Bearer resource_metadata="https://x/.well-known/y""#), None);
        assert_eq!(scope_of(r#"Bearer xscope="no", scope="yes""#).as_deref(), Some("yes"));
    }
}
