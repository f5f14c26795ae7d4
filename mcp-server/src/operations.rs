//! The operations listener of `codemode serve --ops-listen ADDR`: what an orchestrator
//! and a metrics scraper ask, on an address of its own (so the MCP port's token and
//! origin checks stay as they are, and the probes need neither).
//!
//! - `GET /healthz`: 200 while programs can run: the template process is alive (template
//!   mode) and every sandbox layer applies (or, with `--insecure-allow-weaker-sandbox`,
//!   the missing ones are listed). 503 otherwise. The body is JSON ([`Health`]).
//! - `GET /readyz`: 200 once the server takes MCP requests and has loaded its search
//!   model (or fallen back to ranking by words), and while it is healthy; 503 before and
//!   after (a draining replica stops being ready first).
//! - `GET /metrics`: Prometheus text exposition of [`codemode_core::telemetry`]'s metrics,
//!   rendered by `metrics-exporter-prometheus`.
//!
//! Anything else is 404; a method other than GET or HEAD is 405.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use protocol::worker::{Layer, MissingLayer};

use codemode_core::launcher::LaunchMode;
use codemode_core::telemetry;
use codemode_core::Executor;

/// Why the operations listener cannot start.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// The metrics recorder cannot be installed (one is already).
    #[error("cannot install the metrics recorder: {0}")]
    Recorder(String),
}

/// The state behind the endpoints.
pub struct Operations {
    executor: Arc<Executor>,
    metrics: PrometheusHandle,
    /// Set when the MCP listener takes requests; cleared when the server drains.
    ready: AtomicBool,
}

/// `/healthz`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Health {
    /// `ok` or `unhealthy`.
    pub status: &'static str,
    /// How workers start.
    pub launch: LaunchMode,
    /// The template's pid (template mode, while it is alive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_pid: Option<i32>,
    /// The sandbox layers every worker gets.
    pub layers_active: Vec<&'static str>,
    /// The layers this machine refused (only with a weaker sandbox allowed).
    pub layers_missing: Vec<MissingLayer>,
    /// Why it is unhealthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Operations {
    /// Installs the Prometheus recorder (process-wide: once) and makes the state for
    /// `executor`. Not ready until [`Operations::set_ready`].
    pub fn install(executor: Arc<Executor>) -> Result<Arc<Self>, OpsError> {
        let metrics = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(telemetry::PROGRAM_DURATION.to_string()), telemetry::DURATION_BUCKETS)
            .map_err(|e| OpsError::Recorder(e.to_string()))?
            .install_recorder()
            .map_err(|e| OpsError::Recorder(e.to_string()))?;
        telemetry::describe();
        Ok(Arc::new(Self { executor, metrics, ready: AtomicBool::new(false) }))
    }

    /// Marks the server as taking requests (`true`) or draining (`false`).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// What `/healthz` answers.
    pub async fn health(&self) -> Health {
        let launch = self.executor.launch_mode();
        let template_pid = match launch {
            LaunchMode::Template => self.executor.template_pid().await.filter(|&pid| process_alive(pid)),
            _ => None,
        };
        let layers_missing = self.executor.sandbox_missing();
        let layers_active = Layer::ALL
            .into_iter()
            .filter(|l| !layers_missing.iter().any(|m| m.layer == *l))
            .map(|l| l.name())
            .collect();
        let problem = (launch == LaunchMode::Template && template_pid.is_none())
            .then(|| "the template process is not running; the next program starts a new one".to_string());
        Health {
            status: if problem.is_none() { "ok" } else { "unhealthy" },
            launch,
            template_pid,
            layers_active,
            layers_missing,
            problem,
        }
    }

    /// The metrics in Prometheus text format, with the gauges read now.
    pub async fn render_metrics(&self) -> String {
        metrics::gauge!(telemetry::PROGRAMS_RUNNING).set(self.executor.running_programs() as f64);
        metrics::gauge!(telemetry::WARM_WORKERS).set(self.executor.warm_workers().len() as f64);
        if let Some(rss) = self.executor.template_pid().await.and_then(resident_bytes) {
            metrics::gauge!(telemetry::TEMPLATE_RSS).set(rss as f64);
        }
        self.metrics.run_upkeep();
        self.metrics.render()
    }

    /// Answers one request.
    pub async fn answer(&self, method: &http::Method, path: &str) -> http::Response<Full<Bytes>> {
        if method != http::Method::GET && method != http::Method::HEAD {
            return response(http::StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET only\n".into());
        }
        match path {
            "/healthz" | "/readyz" => {
                let health = self.health().await;
                let ok = health.problem.is_none() && (path == "/healthz" || self.ready.load(Ordering::Acquire));
                let mut body = serde_json::to_string(&health).unwrap_or_default();
                if path == "/readyz" && !self.ready.load(Ordering::Acquire) {
                    body = r#"{"status":"not_ready","problem":"not taking MCP requests yet (the listener or the search model is still starting) or any more (draining)"}"#.into();
                }
                body.push('\n');
                let status = if ok { http::StatusCode::OK } else { http::StatusCode::SERVICE_UNAVAILABLE };
                response(status, "application/json", body)
            }
            "/metrics" => {
                response(http::StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", self.render_metrics().await)
            }
            _ => {
                response(http::StatusCode::NOT_FOUND, "text/plain", "not found: /healthz, /readyz or /metrics\n".into())
            }
        }
    }
}

fn response(status: http::StatusCode, content_type: &'static str, body: String) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    response
}

/// True while `pid` runs (not gone, not a zombie).
fn process_alive(pid: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    status.lines().find_map(|l| l.strip_prefix("State:")).is_some_and(|s| !s.trim_start().starts_with(['Z', 'X']))
}

/// `pid`'s resident memory, from `/proc/<pid>/status`.
fn resident_bytes(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim();
    kib.parse::<u64>().ok().map(|k| k * 1024)
}

/// Serves `ops` on `listener` from a thread of its own, with a runtime of its own, for
/// as long as the process runs: whatever keeps the server's runtime busy (programs'
/// host-side work, a large tool list being written) never delays a probe.
pub fn serve_on_own_thread(listener: std::net::TcpListener, ops: Arc<Operations>) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name("codemode-ops".into()).spawn(move || {
        runtime.block_on(async move {
            match tokio::net::TcpListener::from_std(listener) {
                Ok(listener) => serve(listener, ops).await,
                Err(e) => tracing::error!("the operations listener cannot serve: {e}"),
            }
        })
    })?;
    Ok(())
}

/// Serves `ops` on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, ops: Arc<Operations>) {
    // Histograms need their upkeep now and then even when nobody scrapes.
    let upkeep = {
        let handle = ops.metrics.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                handle.run_upkeep();
            }
        })
    };
    let _upkeep = AbortOnDrop(upkeep);
    loop {
        let stream = super::accept(&listener, "operations").await;
        let ops = Arc::clone(&ops);
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let ops = Arc::clone(&ops);
                async move { Ok::<_, Infallible>(ops.answer(request.method(), request.uri().path()).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler);
            if let Err(e) = connection.await {
                tracing::debug!("operations connection ended: {e}");
            }
        });
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
