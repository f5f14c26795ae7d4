//! TLS for everything the host reaches or serves over HTTPS (`api.net.fetch`, MCP
//! servers at a `url`, `codemode serve --tls-cert`): rustls with the ring provider,
//! installed once for the process. Every place that builds a TLS client or server calls
//! [`ensure_provider`] first, so no path can start without it.

use std::sync::Once;

/// Installs rustls's ring provider as the process default (once; a provider installed
/// earlier by the embedding program wins).
pub fn ensure_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
