//! `codemode serve`: the MCP server over streamable HTTP.
//!
//! Loopback by default. Binding anywhere else needs an explicit opt-in and a bearer
//! token ([`check_exposure`], a pure function); every request must then carry
//! `Authorization: Bearer <token>`. rmcp's `StreamableHttpService` is served with hyper
//! directly, each connection on its own task, wrapped in the token check.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::CodemodeServer;

/// Open connections at most; more are closed at once.
const MAX_CONNECTIONS: usize = 512;
/// How long a client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

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

/// Serves `server` on `listener` until the task is dropped. With `token`, every request
/// must carry it. At most [`MAX_CONNECTIONS`] connections are served at once; a client
/// gets [`HEADER_READ_TIMEOUT`] to send each request's headers.
pub async fn serve(listener: tokio::net::TcpListener, server: CodemodeServer, token: Option<String>) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let mut config = StreamableHttpServerConfig::default().with_sse_keep_alive(Some(Duration::from_secs(15)));
    if !local.ip().is_loopback() {
        // The Host check guards loopback servers against DNS rebinding; a remote server
        // is reached under names of its own and is guarded by the token.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config);
    let token = token.map(Arc::new);
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        // Out of descriptors or a connection reset before accept: wait and go on, the
        // server must outlive any one client.
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("accepting an HTTP connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&connections).try_acquire_owned() else {
            tracing::warn!("refused an HTTP connection: {MAX_CONNECTIONS} are open");
            continue;
        };
        let (service, token) = (service.clone(), token.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let handler = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let (mut service, token) = (service.clone(), token.clone());
                async move {
                    if let Some(token) = &token {
                        if !authorized(request.headers().get(http::header::AUTHORIZATION), token) {
                            return Ok::<_, Infallible>(unauthorized());
                        }
                    }
                    tower_service::Service::call(&mut service, request).await
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler);
            if let Err(e) = connection.await {
                tracing::debug!("HTTP connection ended: {e}");
            }
        });
    }
}

fn unauthorized() -> http::Response<BoxBody<Bytes, Infallible>> {
    let mut response = http::Response::new(Full::new(Bytes::from_static(b"a bearer token is required: send Authorization: Bearer <token>\n")).boxed());
    *response.status_mut() = http::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
    response
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
}
