//! `api.net.fetch` for JavaScript plugins: the plugin runtime has no network of its
//! own, so it asks the host (`host/fetch`), and the host performs the request only when
//! the URL's host is in the plugin's `permissions.net.hosts` (redirects included).
//!
//! Host entries: `example.com` (that host on the scheme's default port),
//! `example.com:8080` (that port), `*.example.com` (any subdomain, default port).
//! Only `http` and `https` URLs are fetched. [`NetAccess::allows`] is the whole policy,
//! a pure function with its own tests.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt;
use protocol::manifest::HostEntry;
use protocol::plugin::{FetchParams, FetchResult};
use reqwest::Url;

/// The largest response body handed to a plugin.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Redirects followed per request (each one checked against the allowlist).
const MAX_REDIRECTS: usize = 10;
/// Requests of one plugin in flight at once; more wait their turn.
const MAX_IN_FLIGHT: usize = 16;
/// What one plugin's fetches may make the host hold at once: the bodies of its requests
/// (queued or in flight) and of the responses being read, each response counted three
/// times (the bytes, the text, and the answer line that carries it back).
pub const FETCH_BUDGET_BYTES: u64 = 64 * 1024 * 1024;
/// What the host counts for a request beyond its body (URL, headers, bookkeeping).
const REQUEST_OVERHEAD_BYTES: u64 = 16 * 1024;

/// A byte budget shared by a plugin's fetches; reservations give their bytes back when
/// dropped.
#[derive(Debug)]
struct FetchBudget {
    limit: u64,
    used: std::sync::atomic::AtomicU64,
}

/// Bytes of a [`FetchBudget`] held by one request, until the answer is written.
pub struct Reservation {
    budget: Arc<FetchBudget>,
    bytes: u64,
}

impl FetchBudget {
    /// Takes `bytes` more for `held`, or says how much is in use.
    fn take(&self, held: &mut Reservation, bytes: u64) -> Result<(), u64> {
        use std::sync::atomic::Ordering;
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            if used.saturating_add(bytes) > self.limit {
                return Err(used);
            }
            match self.used.compare_exchange_weak(used, used + bytes, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    held.bytes += bytes;
                    return Ok(());
                }
                Err(now) => used = now,
            }
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, std::sync::atomic::Ordering::AcqRel);
    }
}

/// True when `entry` allows `host` (lowercase) on `port`.
fn entry_matches(entry: &HostEntry, host: &str, port: u16, default_port: u16) -> bool {
    // `*.` names subdomains: an IP address (`10.0.0.1` ends in `.0.0.1`) never matches one.
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    let host_ok = if entry.subdomains {
        !is_ip && host.strip_suffix(&entry.host).is_some_and(|rest| rest.ends_with('.'))
    } else {
        host == entry.host
    };
    host_ok && port == entry.port.unwrap_or(default_port)
}

/// Where a plugin's allowlist is written, so that a refusal says where to add a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowlistSource {
    /// `manifest.json`'s `permissions.net.hosts` (seed 000).
    Manifest,
    /// A seed-003 script's `globalThis.manifest.egress`.
    Egress,
    /// The plugin's configuration entry, `net_hosts` (formats with no manifest).
    Configuration,
}

impl AllowlistSource {
    /// The list, as its author knows it.
    fn written(self) -> &'static str {
        match self {
            AllowlistSource::Manifest => "its manifest.json",
            AllowlistSource::Egress => "its globalThis.manifest.egress",
            AllowlistSource::Configuration => "its configuration entry's net_hosts",
        }
    }

    /// Where to add `host`.
    fn add(self, host: &str) -> String {
        match self {
            AllowlistSource::Manifest => format!("add \"{host}\" to permissions.net.hosts to allow it"),
            AllowlistSource::Egress => format!("add \"{host}\" to globalThis.manifest.egress to allow it"),
            AllowlistSource::Configuration => {
                format!("add \"{host}\" to net_hosts in the plugin's configuration entry to allow it")
            }
        }
    }
}

/// What a plugin may reach, and the client that reaches it.
#[derive(Debug)]
pub struct NetAccess {
    plugin: String,
    source: AllowlistSource,
    entries: Vec<String>,
    /// The entries that parse (the manifest refused the others when it was loaded).
    patterns: Vec<HostEntry>,
    timeout: Duration,
    /// Built on first use, then shared by every request of the plugin.
    client: std::sync::OnceLock<reqwest::Client>,
    in_flight: tokio::sync::Semaphore,
    budget: Arc<FetchBudget>,
}

impl NetAccess {
    /// The allowlist of `plugin`, from its manifest's `net.hosts`; requests give up
    /// after `timeout`.
    pub fn new(plugin: &str, hosts: &[String], source: AllowlistSource, timeout: Duration) -> Self {
        crate::tls::ensure_provider();
        Self {
            plugin: plugin.to_string(),
            source,
            entries: hosts.to_vec(),
            patterns: hosts.iter().filter_map(|h| HostEntry::parse(h).ok()).collect(),
            timeout,
            client: std::sync::OnceLock::new(),
            in_flight: tokio::sync::Semaphore::new(MAX_IN_FLIGHT),
            budget: Arc::new(FetchBudget { limit: FETCH_BUDGET_BYTES, used: std::sync::atomic::AtomicU64::new(0) }),
        }
    }

    /// Whether the plugin may fetch `url`; the error says why not and how to allow it.
    pub fn allows(&self, url: &Url) -> Result<(), String> {
        let default_port = match url.scheme() {
            "http" => 80,
            "https" => 443,
            other => return Err(format!("fetch: {other}: URLs are not fetched; use http or https")),
        };
        if permitted(&self.patterns, url) {
            return Ok(());
        }
        let host = host_of(url);
        let port = url.port().unwrap_or(default_port);
        let shown = if port == default_port { host } else { format!("{host}:{port}") };
        Err(format!(
            "fetch: plugin {} may not reach {shown}: {} allows {}; {}",
            self.plugin,
            self.source.written(),
            if self.entries.is_empty() { "no hosts".to_string() } else { format!("only {}", self.entries.join(", ")) },
            self.source.add(&shown)
        ))
    }

    /// Performs a `host/fetch` request and builds its answer, with the bytes it holds of
    /// the plugin's budget (give them back once it is written).
    pub async fn fetch(&self, request: FetchParams) -> Result<(FetchResult, Reservation), String> {
        let url = Url::parse(&request.url).map_err(|e| format!("fetch: {:?} is not a URL: {e}", request.url))?;
        self.allows(&url)?;
        let method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| format!("fetch: {:?} is not an HTTP method", request.method))?;
        // Held from now until the answer is written: a plugin cannot queue more than the
        // budget, however many requests it sends.
        let mut held = Reservation { budget: Arc::clone(&self.budget), bytes: 0 };
        let body_bytes = request.body.as_ref().map_or(0, |b| b.len() as u64);
        self.budget.take(&mut held, body_bytes + REQUEST_OVERHEAD_BYTES).map_err(|used| self.over_budget(used))?;
        let _slot = self.in_flight.acquire().await.map_err(|_| "fetch: the host is shutting down".to_string())?;
        let client = match self.client.get() {
            Some(c) => c.clone(),
            None => {
                let c = self.new_client()?;
                self.client.get_or_init(|| c).clone()
            }
        };
        let mut builder = client.request(method, url.clone());
        for (name, value) in &request.headers {
            // The host header follows the URL (it is what the allowlist checked).
            if !name.eq_ignore_ascii_case("host") {
                builder = builder.header(name, value);
            }
        }
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        let response = builder.send().await.map_err(|e| describe(&url, &e))?;
        let status = response.status();
        let final_url = response.url().to_string();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| describe(&url, &e))?;
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(format!("fetch: the response from {url} is larger than {} MiB", MAX_BODY_BYTES >> 20));
            }
            self.budget.take(&mut held, 3 * chunk.len() as u64).map_err(|used| self.over_budget(used))?;
            body.extend_from_slice(&chunk);
        }
        let (body, body_base64) = match String::from_utf8(body) {
            Ok(text) => (Some(text), None),
            Err(e) => (None, Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))),
        };
        let answer = FetchResult {
            status: status.as_u16(),
            status_text: status.canonical_reason().unwrap_or("").into(),
            url: final_url,
            headers,
            body,
            body_base64,
        };
        Ok((answer, held))
    }

    /// The refusal of a request that would take the plugin's fetches over their budget.
    fn over_budget(&self, used: u64) -> String {
        format!(
            "fetch: plugin {}'s requests and responses in flight already hold {} of the {} the host keeps for them; await some fetches before starting more",
            self.plugin,
            protocol::cost::mib(used),
            protocol::cost::mib(self.budget.limit)
        )
    }

    /// A client whose redirects are checked against the same allowlist.
    fn new_client(&self) -> Result<reqwest::Client, String> {
        let (patterns, source) = (self.patterns.clone(), self.source);
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            let allowed = permitted(&patterns, attempt.url());
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else if allowed {
                attempt.follow()
            } else {
                let to = attempt.url().clone();
                let shown = match (to.port(), host_of(&to)) {
                    (Some(port), host) => format!("{host}:{port}"),
                    (None, host) => host,
                };
                attempt.error(format!(
                    "a redirect to {to}, which {} does not allow; {}",
                    source.written(),
                    source.add(&shown)
                ))
            }
        });
        reqwest::Client::builder()
            .redirect(policy)
            .timeout(self.timeout)
            .no_proxy()
            .build()
            .map_err(|e| format!("fetch: cannot create the HTTP client: {e}"))
    }
}

/// The URL's host, lowercase, IPv6 literals without brackets.
fn host_of(url: &Url) -> String {
    url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()
}

/// True when an `http`/`https` URL's host and port match one of `patterns`.
fn permitted(patterns: &[HostEntry], url: &Url) -> bool {
    let default_port = match url.scheme() {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let host = host_of(url);
    patterns.iter().any(|p| entry_matches(p, &host, url.port().unwrap_or(default_port), default_port))
}

/// An error with its causes, as one line.
fn describe(url: &Url, error: &reqwest::Error) -> String {
    format!("fetch {url}: {}", crate::mcp::http::with_causes(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(hosts: &[&str]) -> NetAccess {
        NetAccess::new(
            "weather",
            &hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
            AllowlistSource::Manifest,
            Duration::from_secs(1),
        )
    }

    fn check(a: &NetAccess, url: &str) -> Result<(), String> {
        a.allows(&Url::parse(url).unwrap())
    }

    #[test]
    fn exact_hosts_on_default_ports() {
        let a = access(&["wttr.in"]);
        assert!(check(&a, "https://wttr.in/Oslo?format=3").is_ok());
        assert!(check(&a, "http://WTTR.in/").is_ok());
        assert!(check(&a, "https://wttr.in:8443/").is_err());
        assert!(check(&a, "https://evil.wttr.in/").is_err());
        assert!(check(&a, "https://wttr.in.evil.com/").is_err());
    }

    #[test]
    fn ports_and_subdomains() {
        let a = access(&["127.0.0.1:8080", "*.example.org"]);
        assert!(check(&a, "http://127.0.0.1:8080/x").is_ok());
        assert!(check(&a, "http://127.0.0.1/x").is_err());
        assert!(check(&a, "https://api.example.org/").is_ok());
        assert!(check(&a, "https://a.b.example.org/").is_ok());
        assert!(check(&a, "https://example.org/").is_err());
        assert!(check(&a, "https://badexample.org/").is_err());
        // The manifest refuses `*.0.0.1`; the match refuses IP addresses on its own too.
        let numeric = HostEntry { host: "0.0.1".into(), subdomains: true, port: None };
        assert!(!entry_matches(&numeric, "10.0.0.1", 80, 80));
    }

    #[test]
    fn the_budget_refuses_what_does_not_fit_and_gets_bytes_back() {
        let budget = Arc::new(FetchBudget { limit: 100, used: std::sync::atomic::AtomicU64::new(0) });
        let mut first = Reservation { budget: Arc::clone(&budget), bytes: 0 };
        assert_eq!(budget.take(&mut first, 60), Ok(()));
        let mut second = Reservation { budget: Arc::clone(&budget), bytes: 0 };
        assert_eq!(budget.take(&mut second, 50), Err(60));
        assert_eq!(budget.take(&mut second, 40), Ok(()));
        drop(first);
        assert_eq!(budget.take(&mut second, 50), Ok(()));
        drop(second);
        assert_eq!(budget.used.load(std::sync::atomic::Ordering::Acquire), 0);
    }

    #[test]
    fn refusals_say_what_to_add() {
        let a = access(&["wttr.in"]);
        assert_eq!(
            check(&a, "http://169.254.169.254/latest/meta-data").unwrap_err(),
            "fetch: plugin weather may not reach 169.254.169.254: its manifest.json allows only wttr.in; add \"169.254.169.254\" to permissions.net.hosts to allow it"
        );
        assert_eq!(
            check(&a, "file:///etc/passwd").unwrap_err(),
            "fetch: file: URLs are not fetched; use http or https"
        );
        assert!(check(&access(&[]), "https://wttr.in/")
            .unwrap_err()
            .contains("its manifest.json allows no hosts; add \"wttr.in\""));
    }
}
