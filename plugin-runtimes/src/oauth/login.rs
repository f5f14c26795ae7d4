//! `codemode auth login PLUGIN`: the authorization-code flow with PKCE, once, with the
//! person's browser, ending in tokens saved to the plugin's token file.
//!
//! The steps, in order ([`login`]):
//! 1. reach the server without a token to hear its challenge (`WWW-Authenticate` on a
//!    401, from `initialize` or `tools/list`), which names its protected resource
//!    metadata and the scopes it wants;
//! 2. discover the authorization server from the challenge (rmcp);
//! 3. open a loopback listener for the redirect (`http://127.0.0.1:PORT/callback`);
//! 4. pick the client identity ([`super::choose_client`]) and, for dynamic registration,
//!    register (keeping the secret the server may hand out);
//! 5. print the authorization URL and wait for the browser to come back with a code
//!    (or an error) on the listener;
//! 6. exchange the code (rmcp checks the state and, where offered, the issuer) and save
//!    the tokens, the secret and the redirect URI.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;

use super::store::{StoreError, TokenFile};
use super::{challenge_in, choose_client, ClientIdentity, NoClientIdentity, OAuthSettings};

/// Everything a login needs to know about its plugin.
#[derive(Debug, Clone)]
pub struct LoginTarget {
    /// The plugin.
    pub plugin: String,
    /// The server's URL.
    pub server: String,
    /// The plugin's configured headers (sent while hearing the challenge).
    pub headers: HashMap<http::HeaderName, http::HeaderValue>,
    /// Its `oauth` table.
    pub settings: OAuthSettings,
    /// The client secret of the table, read from the environment.
    pub client_secret: Option<String>,
    /// How long to wait for the browser.
    pub wait: Duration,
}

/// What a successful login got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginReport {
    /// Where the tokens are.
    pub file: std::path::PathBuf,
    /// The scopes asked for (empty: none named).
    pub scopes: Vec<String>,
    /// How the client identified itself.
    pub identity: String,
}

/// Why a login failed.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The token file.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Discovery, registration or the code exchange.
    #[error("authorizing with {server} failed: {source}")]
    Auth {
        /// The server.
        server: String,
        /// rmcp's error.
        source: AuthError,
    },
    /// No identity fits the authorization server.
    #[error(transparent)]
    NoIdentity(#[from] NoClientIdentity),
    /// The redirect listener.
    #[error("cannot listen for the browser's redirect on {address}: {source}")]
    Listen {
        /// Where.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// The browser came back with an error.
    #[error("the authorization server refused: {0}")]
    Refused(String),
    /// Nobody came back in time.
    #[error("no answer from the browser within {} s; run the command again and open the link it prints", .0.as_secs())]
    TimedOut(Duration),
}

/// Runs the flow; `announce` is told the URL to open.
pub async fn login(target: &LoginTarget, announce: &dyn Fn(&str)) -> Result<LoginReport, LoginError> {
    let auth = |source| LoginError::Auth { server: target.server.clone(), source };
    let file = TokenFile::for_server(&target.server)?;
    let wanted = file.read()?.map(|s| s.wanted_scopes).unwrap_or_default();

    // 1-2. The challenge, then the authorization server it points to.
    let challenge = hear_challenge(&target.server, &target.headers).await;
    let mut manager = AuthorizationManager::new(target.server.as_str()).await.map_err(auth)?;
    manager.set_credential_store(file.clone());
    let resolution = manager.resolve_metadata_from_challenge(challenge.as_deref()).await.map_err(auth)?;
    let accepts_documents = resolution
        .metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let registers = resolution.metadata.registration_endpoint.is_some();
    manager.set_metadata(resolution.metadata);

    // 3. The redirect listener.
    let address = format!("127.0.0.1:{}", target.settings.redirect_port.unwrap_or(0));
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|source| LoginError::Listen { address: address.clone(), source })?;
    let port = listener.local_addr().map_err(|source| LoginError::Listen { address, source })?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");

    // 4. Scopes and identity.
    let scopes: Vec<String> = if target.settings.scopes.is_empty() {
        let challenged = (!wanted.is_empty()).then(|| wanted.join(" "));
        manager.select_scopes(challenged.as_deref(), &[])
    } else {
        let mut scopes = target.settings.scopes.clone();
        scopes.extend(wanted.iter().filter(|w| !target.settings.scopes.contains(w)).cloned());
        scopes
    };
    let identity = choose_client(
        target.settings.client_id.as_deref(),
        target.client_secret.clone(),
        target.settings.client_metadata_url.as_deref(),
        accepts_documents,
        registers,
    )
    .ok_or_else(|| NoClientIdentity {
        plugin: target.plugin.clone(),
        server: target.server.clone(),
        cimd: if target.settings.client_metadata_url.is_some() { " (configured)" } else { "" },
    })?;
    let mut request =
        AuthorizationRequest::new(redirect_uri.clone()).with_client_name("codemode").with_scopes(scopes.clone());
    let mut registered_secret = None;
    let described = match &identity {
        ClientIdentity::PreRegistered { client_id, client_secret } => {
            request = request.with_preregistered_client(client_id.clone());
            if let Some(secret) = client_secret {
                request = request.with_client_secret(secret.clone());
            }
            format!("pre-registered client {client_id}")
        }
        ClientIdentity::MetadataDocument(url) => {
            request = request.with_client_metadata_url(url.clone());
            format!("client metadata document {url}")
        }
        ClientIdentity::Register => {
            let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let config = manager.register_client("codemode", &redirect_uri, &scope_refs).await.map_err(auth)?;
            request = request.with_preregistered_client(config.client_id.clone());
            if let Some(secret) = &config.client_secret {
                request = request.with_client_secret(secret.clone());
            }
            registered_secret = config.client_secret.clone();
            format!("client {} (registered now)", config.client_id)
        }
    };
    let session = AuthorizationSession::new(manager, request).await.map_err(|(_, e)| auth(e))?;

    // 5. The browser.
    announce(session.get_authorization_url());
    let callback = tokio::time::timeout(target.wait, wait_for_redirect(listener))
        .await
        .map_err(|_| LoginError::TimedOut(target.wait))??;

    // 6. The tokens.
    session
        .handle_callback_with_issuer(&callback.code, &callback.state, callback.issuer.as_deref())
        .await
        .map_err(auth)?;
    file.update(|saved| {
        saved.client_secret = registered_secret;
        saved.redirect_uri = Some(redirect_uri);
        saved.wanted_scopes.clear();
    })?;
    Ok(LoginReport { file: file.path().to_path_buf(), scopes, identity: described })
}

/// The server's challenge to a request without a token: from `initialize`, else from
/// `tools/list`; `None` when it answers both.
async fn hear_challenge(server: &str, headers: &HashMap<http::HeaderName, http::HeaderValue>) -> Option<String> {
    let client = crate::mcp::http_client().ok()?;
    let config = StreamableHttpClientTransportConfig::with_uri(server).custom_headers(headers.clone());
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let reached = tokio::time::timeout(Duration::from_secs(30), ().serve(transport)).await.ok()?;
    match reached {
        Err(e) => e.auth_challenge().map(str::to_owned),
        Ok(session) => {
            let listed = session.list_all_tools().await;
            let challenge = listed.err().and_then(|e| challenge_in(&e)).map(|c| c.header().to_string());
            let _ = session.cancel().await;
            challenge
        }
    }
}

/// What the browser brought back.
struct Callback {
    code: String,
    state: String,
    issuer: Option<String>,
}

/// Serves the loopback listener until a request to `/callback` carries a code or an
/// error; each such request gets a short page saying what happened.
async fn wait_for_redirect(listener: tokio::net::TcpListener) -> Result<Callback, LoginError> {
    let (found, mut arrived) = tokio::sync::mpsc::channel::<Result<Callback, LoginError>>(1);
    loop {
        tokio::select! {
            result = arrived.recv() => {
                if let Some(result) = result {
                    return result;
                }
            }
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let found = found.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let found = found.clone();
                        async move { Ok::<_, Infallible>(answer_redirect(request.uri(), &found)) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        }
    }
}

/// The page for one request to the listener, passing a code or an error on to `found`.
fn answer_redirect(
    uri: &http::Uri,
    found: &tokio::sync::mpsc::Sender<Result<Callback, LoginError>>,
) -> hyper::Response<Full<Bytes>> {
    let page = |status: u16, text: &str| {
        hyper::Response::builder()
            .status(status)
            .header("content-type", "text/html; charset=utf-8")
            .body(Full::new(Bytes::from(format!("<!doctype html><title>codemode</title><p>{text}</p>"))))
            .unwrap_or_default()
    };
    if uri.path() != "/callback" {
        return page(404, "Not found.");
    }
    let query: HashMap<String, String> = url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if let Some(error) = query.get("error") {
        let description = query.get("error_description").map(|d| format!(": {d}")).unwrap_or_default();
        let _ = found.try_send(Err(LoginError::Refused(format!("{error}{description}"))));
        return page(400, "Authorization was refused. You can close this tab; codemode says what happened.");
    }
    match (query.get("code"), query.get("state")) {
        (Some(code), Some(state)) => {
            let _ = found.try_send(Ok(Callback {
                code: code.clone(),
                state: state.clone(),
                issuer: query.get("iss").cloned(),
            }));
            page(200, "codemode is authorized. You can close this tab.")
        }
        _ => page(400, "This address expects the authorization server's redirect (with code and state)."),
    }
}
