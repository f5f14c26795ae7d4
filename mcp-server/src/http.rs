//! `codemode serve`: the MCP server over streamable HTTP (and HTTPS).
//!
//! Loopback by default. Binding anywhere else needs an explicit opt-in and a bearer
//! token ([`check_exposure`], a pure function); every request must then carry
//! `Authorization: Bearer <token>`. rmcp's `StreamableHttpService` is served with hyper
//! directly, each connection on its own task, behind these checks, in this order:
//!
//! 1. the path is `/mcp` (anything else is 404);
//! 2. an `Origin` header, when present, is an allowed origin ([`origin_allowed`]:
//!    the loopback origins on a loopback server, the configured ones otherwise), else
//!    403, as the MCP specification requires against DNS rebinding;
//! 3. the bearer token, when one is set, else 401;
//! 4. a request that would open a session beyond `max_sessions` gets 503.
//!
//! `DELETE` (ending a session) is answered 204 No Content.
//!
//! Connections are kept in two classes ([`Connections`]): a connection is *unproven*
//! until one of its requests passes the checks, and only a bounded number of unproven
//! connections exist at once (a new one pushes out the oldest), each with a deadline
//! for its first good request. Idle or unauthenticated clients therefore cannot hold the
//! slots authorized clients need.
//!
//! Every connection is also bounded in time while it is used: a request's headers must
//! arrive within [`HEADER_READ_TIMEOUT`], and so must the next request's on a
//! kept-alive connection (hyper starts that timer as soon as it waits for a request,
//! so it is the idle timeout between requests too); a request's body must arrive
//! whole within [`BODY_READ_DEADLINE`] of its headers ([`DeadlineBody`]), else it is
//! answered 408 and the connection closed. A client trickling bytes therefore holds
//! a connection for a bounded time, whatever it has proven.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::CodemodeServer;

/// Where MCP is served.
pub const MCP_PATH: &str = "/mcp";
/// Connections that have passed the checks, at most; more get 503.
const MAX_PROVEN_CONNECTIONS: usize = 512;
/// Connections that have not (yet) sent a good request, at most; a new one pushes out
/// the oldest.
const MAX_UNPROVEN_CONNECTIONS: usize = 64;
/// How long a new connection has to send its first good request.
const FIRST_REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers, and how long a kept-alive
/// connection may stay idle waiting for its next request.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to send a request's whole body, from the end of its
/// headers: enough for the largest body rmcp takes (4 MiB) at about 140 KB/s, while a
/// client trickling bytes holds its connection no longer than its headers may take.
pub const BODY_READ_DEADLINE: Duration = Duration::from_secs(30);
/// How long a TLS handshake may take.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the server may not listen where it was asked to.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExposureError {
    /// A non-loopback address without the explicit flag.
    #[error("{0} is reachable from other machines; pass --allow-remote to serve there (with a bearer token), or listen on 127.0.0.1")]
    RemoteNotAllowed(SocketAddr),
    /// A non-loopback address without a token.
    #[error("serving on {0} needs a bearer token: set it in the environment variable named by --token-env (CODEMODE_TOKEN by default)")]
    TokenMissing(SocketAddr),
}

/// Decides whether listening on `addr` is allowed: loopback always; anything else only
/// with `allow_remote` and a token.
pub fn check_exposure(addr: SocketAddr, allow_remote: bool, token: Option<&str>) -> Result<(), ExposureError> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    if !allow_remote {
        return Err(ExposureError::RemoteNotAllowed(addr));
    }
    if token.is_none_or(|t| t.is_empty()) {
        return Err(ExposureError::TokenMissing(addr));
    }
    Ok(())
}

/// True when `header` (an `Authorization` value) carries `token`.
fn authorized(header: Option<&http::HeaderValue>, token: &str) -> bool {
    let Some(value) = header.and_then(|v| v.to_str().ok()) else { return false };
    let Some(given) = value.strip_prefix("Bearer ") else { return false };
    // Same length and every byte compared, so the time taken does not tell how much matched.
    given.len() == token.len() && given.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// An origin as `(scheme, host, port)`, lowercase, with the scheme's default port.
fn parse_origin(origin: &str) -> Option<(String, String, u16)> {
    let (scheme, rest) = origin.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let rest = rest.trim_end_matches('/');
    if rest.contains('/') || rest.is_empty() {
        return None;
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        (format!("[{host}]"), port)
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), port.parse().ok()?),
            None => (rest.to_string(), default_port),
        }
    };
    Some((scheme, host.to_ascii_lowercase(), port))
}

/// Whether a browser origin may call the server. An allowed entry is an origin
/// (`https://app.example.com`, `http://localhost:3000`) or one with any port
/// (`http://localhost:*`); a loopback server also allows the loopback origins
/// (`localhost`, `127.0.0.1`, `[::1]`, any port). Nothing else, so a web page elsewhere
/// cannot drive a local server through DNS rebinding.
pub fn origin_allowed(origin: &str, loopback_server: bool, allowed: &[String]) -> bool {
    let Some((scheme, host, port)) = parse_origin(origin) else { return false };
    if loopback_server
        && matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
        && matches!(scheme.as_str(), "http" | "https")
    {
        return true;
    }
    allowed.iter().any(|entry| {
        let (pattern, any_port) = match entry.strip_suffix(":*") {
            Some(p) => (p, true),
            None => (entry.as_str(), false),
        };
        match parse_origin(pattern) {
            Some((s, h, p)) => s == scheme && h == host && (any_port || p == port),
            None => false,
        }
    })
}

/// How `codemode serve` takes requests.
#[derive(Clone, Default)]
pub struct HttpOptions {
    /// The bearer token every request must carry, when set.
    pub token: Option<String>,
    /// The operator's token (`[server] client_logs = { token_env }`): accepted as well,
    /// and its sessions receive codemode's log.
    pub operator_token: Option<String>,
    /// Browser origins allowed besides the loopback ones (on a loopback server).
    pub allowed_origins: Vec<String>,
    /// MCP sessions open at once, at most.
    pub max_sessions: usize,
    /// A session with no request for this long is closed.
    pub session_idle: Duration,
    /// HTTPS: the server's certificate and key.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Answer every request on its own, with no MCP session (rmcp's stateless mode):
    /// any replica can take any request. No session means no server-to-client requests
    /// (approvals are refused), no list changes and no log level per session; progress
    /// still streams within the request's own response.
    pub stateless: bool,
}

/// Builds the TLS configuration from PEM files of a certificate chain and its key.
pub fn tls_config(cert: &std::path::Path, key: &std::path::Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    codemode_plugin_runtimes::tls::ensure_provider();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| anyhow::anyhow!("cannot read the TLS certificate {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("the TLS certificate {} is not PEM: {e}", cert.display()))?;
    if certs.is_empty() {
        anyhow::bail!("the TLS certificate {} holds no certificate", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| anyhow::anyhow!("cannot read the TLS key {}: {e}", key.display()))?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| anyhow::anyhow!("the TLS certificate and key do not go together: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The live connections, in their two classes.
#[derive(Default)]
struct Connections {
    /// Unproven connections, oldest first, each with the token that closes it.
    unproven: Mutex<VecDeque<(u64, CancellationToken)>>,
    proven: AtomicUsize,
    next_id: AtomicU64,
}

impl Connections {
    /// Registers a new connection as unproven, pushing out the oldest unproven one when
    /// there are too many.
    fn admit(&self) -> (u64, CancellationToken) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        let mut unproven = self.unproven.lock().unwrap_or_else(|p| p.into_inner());
        while unproven.len() >= MAX_UNPROVEN_CONNECTIONS {
            if let Some((_, oldest)) = unproven.pop_front() {
                oldest.cancel();
            }
        }
        unproven.push_back((id, token.clone()));
        (id, token)
    }

    /// Moves connection `id` to the proven class; false when that class is full.
    fn prove(&self, id: u64) -> bool {
        if self.proven.fetch_add(1, Ordering::AcqRel) >= MAX_PROVEN_CONNECTIONS {
            self.proven.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        self.unproven.lock().unwrap_or_else(|p| p.into_inner()).retain(|(other, _)| *other != id);
        true
    }

    /// Forgets connection `id`, in whichever class it is.
    fn close(&self, id: u64, proven: bool) {
        if proven {
            self.proven.fetch_sub(1, Ordering::AcqRel);
        } else {
            self.unproven.lock().unwrap_or_else(|p| p.into_inner()).retain(|(other, _)| *other != id);
        }
    }
}

/// What one request's checks decided.
enum Verdict {
    /// Serve it.
    Pass,
    /// Answer with this instead.
    Refuse(http::Response<BoxBody<Bytes, Infallible>>),
}

/// The checks every request passes before rmcp sees it (see the module docs).
fn check_request<B>(request: &http::Request<B>, options: &HttpOptions, loopback: bool) -> Verdict {
    if request.uri().path() != MCP_PATH {
        return Verdict::Refuse(text_response(
            http::StatusCode::NOT_FOUND,
            &format!("codemode serves MCP at {MCP_PATH} only\n"),
        ));
    }
    if let Some(origin) = request.headers().get(http::header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin_allowed(origin, loopback, &options.allowed_origins) {
            return Verdict::Refuse(text_response(
                http::StatusCode::FORBIDDEN,
                &format!("the origin {origin:?} may not use this server; add it to [server] allowed_origins (or --allow-origin) if it should\n"),
            ));
        }
    }
    if let Some(token) = &options.token {
        let header = request.headers().get(http::header::AUTHORIZATION);
        let operator = options.operator_token.as_deref().is_some_and(|t| authorized(header, t));
        if !operator && !authorized(header, token) {
            let mut response = text_response(
                http::StatusCode::UNAUTHORIZED,
                "a bearer token is required: send Authorization: Bearer <token>\n",
            );
            response.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
            return Verdict::Refuse(response);
        }
    }
    Verdict::Pass
}

/// A request's body that fails once [`BODY_READ_DEADLINE`] has passed before its end
/// came, and records that it did in `expired` (so the answer can be 408, whatever the
/// reader of the body made of the failure).
struct DeadlineBody {
    inner: hyper::body::Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    expired: Arc<std::sync::atomic::AtomicBool>,
}

impl DeadlineBody {
    /// `inner`, whose time starts now; `expired` turns true if it runs out.
    fn new(inner: hyper::body::Incoming, expired: Arc<std::sync::atomic::AtomicBool>) -> Self {
        Self { inner, deadline: Box::pin(tokio::time::sleep(BODY_READ_DEADLINE)), expired }
    }
}

/// Why a request's body could not be read.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    /// The connection failed.
    #[error("{0}")]
    Read(hyper::Error),
    /// It did not arrive in time.
    #[error("the request's body did not arrive within {} s", BODY_READ_DEADLINE.as_secs())]
    Deadline,
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(BodyError::Read)));
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.expired.store(true, Ordering::Release);
            return Poll::Ready(Some(Err(BodyError::Deadline)));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// The answer to a request whose body did not arrive in time: 408, and the connection
/// closed after it (what is left of the body is never read).
fn body_too_slow() -> http::Response<BoxBody<Bytes, Infallible>> {
    let mut response = text_response(
        http::StatusCode::REQUEST_TIMEOUT,
        &format!(
            "the request's body did not arrive within {} s of its headers; send the whole request at once\n",
            BODY_READ_DEADLINE.as_secs()
        ),
    );
    response.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}

fn text_response(status: http::StatusCode, text: &str) -> http::Response<BoxBody<Bytes, Infallible>> {
    let mut response = http::Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// Serves `server` on `listener` until the task is dropped, as [`HttpOptions`] say.
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: CodemodeServer,
    options: HttpOptions,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let loopback = local.ip().is_loopback();
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_legacy_session_mode(!options.stateless)
        // Stateless: a plain JSON answer when the call streams nothing before it (rmcp
        // falls back to SSE when it does, for progress).
        .with_json_response(options.stateless);
    if !loopback {
        // The Host check guards loopback servers against DNS rebinding; a remote server
        // is reached under names of its own and is guarded by the token.
        config = config.disable_allowed_hosts();
    }
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(options.session_idle);
    let sessions = Arc::new(sessions);
    let service = StreamableHttpService::new(move || Ok(server.for_new_session()), Arc::clone(&sessions), config);
    let options = Arc::new(options);
    let connections = Arc::new(Connections::default());
    let tls = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    loop {
        let stream = super::accept(&listener, "HTTP").await;
        let (id, evicted) = connections.admit();
        let (service, options, connections, sessions, tls) =
            (service.clone(), Arc::clone(&options), Arc::clone(&connections), Arc::clone(&sessions), tls.clone());
        tokio::spawn(async move {
            let proven = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let handler = {
                let (proven, connections) = (Arc::clone(&proven), Arc::clone(&connections));
                hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let (mut service, options, proven, connections, sessions) = (
                        service.clone(),
                        Arc::clone(&options),
                        Arc::clone(&proven),
                        Arc::clone(&connections),
                        Arc::clone(&sessions),
                    );
                    async move {
                        if let Verdict::Refuse(response) = check_request(&request, &options, loopback) {
                            return Ok::<_, Infallible>(response);
                        }
                        if !proven.load(Ordering::Acquire) {
                            if !connections.prove(id) {
                                return Ok(text_response(
                                    http::StatusCode::SERVICE_UNAVAILABLE,
                                    "too many connections; try again later\n",
                                ));
                            }
                            proven.store(true, Ordering::Release);
                        }
                        let opens_session = !options.stateless
                            && request.method() == http::Method::POST
                            && !request.headers().contains_key("mcp-session-id");
                        if opens_session && sessions.sessions.read().await.len() >= options.max_sessions {
                            return Ok(text_response(
                                http::StatusCode::SERVICE_UNAVAILABLE,
                                &format!("{} MCP sessions are open, the most this server keeps; end unused ones (DELETE) or wait for idle ones to close\n", options.max_sessions),
                            ));
                        }
                        let deleting = request.method() == http::Method::DELETE;
                        let expired = Arc::new(std::sync::atomic::AtomicBool::new(false));
                        let request = request.map(|body| DeadlineBody::new(body, Arc::clone(&expired)));
                        let mut response = tower_service::Service::call(&mut service, request).await?;
                        if expired.load(Ordering::Acquire) {
                            tracing::debug!("a request's body did not arrive in time: answered 408");
                            return Ok(body_too_slow());
                        }
                        if deleting && response.status() == http::StatusCode::ACCEPTED {
                            *response.status_mut() = http::StatusCode::NO_CONTENT;
                        }
                        Ok(response)
                    }
                })
            };
            serve_connection(stream, tls, handler, &proven, evicted).await;
            connections.close(id, proven.load(Ordering::Acquire));
        });
    }
}

/// Serves one connection (after its TLS handshake, for HTTPS) until it ends, it is
/// pushed out while unproven, or its first good request does not come in time.
async fn serve_connection<S>(
    stream: tokio::net::TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    handler: S,
    proven: &std::sync::atomic::AtomicBool,
    evicted: CancellationToken,
) where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = BoxBody<Bytes, Infallible>> + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::Future: 'static,
{
    let deadline = async {
        tokio::time::sleep(FIRST_REQUEST_DEADLINE).await;
        // Proven in time: no deadline any more.
        if proven.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    };
    let ended_early = async {
        tokio::select! {
            () = evicted.cancelled(), if !proven.load(Ordering::Acquire) => {}
            () = deadline => {}
        }
        // Pushed out while unproven; once proven, eviction no longer applies.
        if proven.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    };
    let serve = async {
        let builder = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .clone();
        let result = match tls {
            Some(acceptor) => match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => builder.serve_connection(hyper_util::rt::TokioIo::new(stream), handler).await,
                Ok(Err(e)) => {
                    tracing::debug!("TLS handshake failed: {e}");
                    return;
                }
                Err(_) => return,
            },
            None => builder.serve_connection(hyper_util::rt::TokioIo::new(stream), handler).await,
        };
        if let Err(e) = result {
            tracing::debug!("HTTP connection ended: {e}");
        }
    };
    tokio::select! {
        () = serve => {}
        () = ended_early => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_always_allowed_elsewhere_needs_the_flag_and_a_token() {
        let local: SocketAddr = "127.0.0.1:8931".parse().unwrap();
        let v6: SocketAddr = "[::1]:8931".parse().unwrap();
        let remote: SocketAddr = "0.0.0.0:8931".parse().unwrap();
        assert_eq!(check_exposure(local, false, None), Ok(()));
        assert_eq!(check_exposure(v6, false, None), Ok(()));
        assert_eq!(check_exposure(remote, false, Some("t")), Err(ExposureError::RemoteNotAllowed(remote)));
        assert_eq!(check_exposure(remote, true, None), Err(ExposureError::TokenMissing(remote)));
        assert_eq!(check_exposure(remote, true, Some("")), Err(ExposureError::TokenMissing(remote)));
        assert_eq!(check_exposure(remote, true, Some("secret")), Ok(()));
    }

    #[test]
    fn only_the_exact_bearer_token_passes() {
        let header = |v: &str| http::HeaderValue::from_str(v).unwrap();
        assert!(authorized(Some(&header("Bearer secret")), "secret"));
        assert!(!authorized(Some(&header("Bearer secreT")), "secret"));
        assert!(!authorized(Some(&header("Bearer secret2")), "secret"));
        assert!(!authorized(Some(&header("secret")), "secret"));
        assert!(!authorized(None, "secret"));
    }

    #[test]
    fn origins_are_loopback_ones_on_loopback_and_configured_ones_elsewhere() {
        let none: Vec<String> = Vec::new();
        assert!(origin_allowed("http://localhost:3000", true, &none));
        assert!(origin_allowed("http://127.0.0.1", true, &none));
        assert!(origin_allowed("https://[::1]:8443", true, &none));
        assert!(!origin_allowed("http://localhost:3000", false, &none), "off loopback, none by default");
        assert!(!origin_allowed("http://evil.example", true, &none));
        assert!(!origin_allowed("http://localhost.evil.example", true, &none));
        assert!(!origin_allowed("null", true, &none));
        assert!(!origin_allowed("file://x", true, &none));
        let allowed = vec!["https://app.example.com".to_string(), "http://dev.example.com:*".to_string()];
        assert!(origin_allowed("https://app.example.com", false, &allowed));
        assert!(origin_allowed("https://APP.example.com:443/", false, &allowed));
        assert!(!origin_allowed("https://app.example.com:8443", false, &allowed));
        assert!(!origin_allowed("http://app.example.com", false, &allowed));
        assert!(origin_allowed("http://dev.example.com:5173", false, &allowed));
    }

    #[test]
    fn only_mcp_is_served_and_bad_origins_and_tokens_are_refused_in_that_order() {
        let options = HttpOptions {
            token: Some("t".into()),
            operator_token: Some("operator".into()),
            max_sessions: 4,
            ..HttpOptions::default()
        };
        let request = |path: &str, origin: Option<&str>, token: Option<&str>| {
            let mut r = http::Request::builder().uri(path);
            if let Some(o) = origin {
                r = r.header("origin", o);
            }
            if let Some(t) = token {
                r = r.header("authorization", format!("Bearer {t}"));
            }
            r.body(()).unwrap()
        };
        let status = |r: &http::Request<()>| match check_request(r, &options, true) {
            Verdict::Pass => 200,
            Verdict::Refuse(response) => response.status().as_u16(),
        };
        assert_eq!(status(&request("/", None, Some("t"))), 404);
        assert_eq!(status(&request("/mcp/extra", None, Some("t"))), 404);
        assert_eq!(status(&request("/mcp", Some("http://evil.example"), Some("t"))), 403);
        assert_eq!(status(&request("/mcp", Some("http://localhost:1"), None)), 401);
        assert_eq!(status(&request("/mcp?x=1", Some("http://localhost:1"), Some("t"))), 200);
        assert_eq!(status(&request("/mcp", None, Some("t"))), 200);
        assert_eq!(status(&request("/mcp", None, Some("operator"))), 200, "the operator's token is a token too");
        assert_eq!(status(&request("/mcp", None, Some("operato"))), 401);
    }

    #[test]
    fn unproven_connections_are_bounded_by_pushing_out_the_oldest() {
        let c = Connections::default();
        let (first, first_token) = c.admit();
        let mut tokens = Vec::new();
        for _ in 1..MAX_UNPROVEN_CONNECTIONS {
            tokens.push(c.admit());
        }
        assert!(!first_token.is_cancelled());
        let (_, newest) = c.admit();
        assert!(first_token.is_cancelled(), "the oldest unproven connection makes room");
        assert!(!newest.is_cancelled());
        assert!(c.prove(tokens[0].0));
        assert_eq!(c.proven.load(Ordering::Acquire), 1);
        c.close(tokens[0].0, true);
        c.close(first, false);
        assert_eq!(c.proven.load(Ordering::Acquire), 0);
    }
}
