//! `codemode mcp` (MCP on standard input and output) and `codemode serve` (MCP over
//! streamable HTTP): the `codemode::app` they serve, the MCP server around it, and
//! for HTTP the listener, its TLS, the operations endpoints and the drain at SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use codemode::app::{App, AppOptions};
use codemode::SandboxPolicy;

use super::{announce, load_config, load_search_model, Search, UsageError};

/// What `mcp` and `serve` share.
#[derive(Args)]
pub struct ServeArgs {
    /// The configuration file (plugins, limits, `[server]`). Without it:
    /// $XDG_CONFIG_HOME/codemode/config.toml (~/.config/codemode/config.toml); never the
    /// current folder's, so a cloned repository does not start its plugins.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Offer the bundled example tools (weather.forecast, math.add).
    #[arg(long)]
    example_tools: bool,
    /// Present the tools as one `execute` tool (code) or each as its own (tools);
    /// overrides `[server] mode`.
    #[arg(long, value_parser = ["code", "tools"])]
    mode: Option<String>,
    /// Select this agent of a plugin (seed 001's `agents/<name>/`, written `name` or
    /// `plugin/name`) for every session: its instructions join the server's and its
    /// private tools and skills unlock. Overrides `[server] agent`.
    #[arg(long)]
    agent: Option<String>,
    /// The sandbox-worker binary (default: $CODEMODE_WORKER, or next to codemode).
    #[arg(long)]
    worker: Option<PathBuf>,
    /// Run even if some sandbox layers cannot be applied on this machine. Never use this
    /// where programs are untrusted.
    #[arg(long)]
    insecure_allow_weaker_sandbox: bool,
}

/// `codemode serve`'s arguments: what it shares with `mcp`, and where and how it
/// listens.
#[derive(Args)]
pub struct HttpArgs {
    #[command(flatten)]
    common: ServeArgs,
    /// Where to listen. Loopback by default; anything else needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1:8931")]
    listen: std::net::SocketAddr,
    /// Allow listening on a non-loopback address (a bearer token is then required).
    #[arg(long)]
    allow_remote: bool,
    /// The environment variable holding the bearer token clients must send. When it
    /// is set, every request needs `Authorization: Bearer <token>`.
    #[arg(long, default_value = "CODEMODE_TOKEN")]
    token_env: String,
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key. Overrides
    /// `[server] tls_cert`.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// A browser origin allowed to call the server (repeatable), on top of
    /// `[server] allowed_origins`; a loopback server always allows the loopback origins.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Answer every request on its own, with no MCP session, so that any replica
    /// behind a load balancer can take any request (overrides `[server] stateless`).
    /// Approvals through elicitation and list changes need a session: without one,
    /// tools that need approval are refused and clients see catalog changes on
    /// their next tools/list.
    #[arg(long)]
    stateless: bool,
    /// Serve /healthz, /readyz and Prometheus /metrics on this address (overrides
    /// `[server] ops_listen`).
    #[arg(long, value_name = "ADDR")]
    ops_listen: Option<std::net::SocketAddr>,
    /// This replica's own MCP URL as the other replicas reach it (overrides
    /// `[server] replica_url`): a 2026-07-28 client's retry that reaches another
    /// replica is passed on to the one holding its program.
    #[arg(long, value_name = "URL")]
    replica_url: Option<String>,
}

/// `codemode mcp`: MCP on standard input and output.
pub async fn mcp(args: ServeArgs) -> anyhow::Result<i32> {
    serve(args, None).await
}

/// `codemode serve`: MCP over streamable HTTP.
pub async fn serve_http(args: HttpArgs) -> anyhow::Result<i32> {
    let HttpArgs {
        common,
        listen,
        allow_remote,
        token_env,
        tls_cert,
        tls_key,
        allow_origins,
        stateless,
        ops_listen,
        replica_url,
    } = args;
    let listen = Listen {
        addr: listen,
        allow_remote,
        token_env,
        tls: tls_cert.zip(tls_key),
        allow_origins,
        stateless,
        ops_listen,
        replica_url,
    };
    serve(common, Some(listen)).await
}

/// Where and how `codemode serve` listens.
struct Listen {
    addr: std::net::SocketAddr,
    allow_remote: bool,
    token_env: String,
    tls: Option<(PathBuf, PathBuf)>,
    allow_origins: Vec<String>,
    stateless: bool,
    ops_listen: Option<std::net::SocketAddr>,
    replica_url: Option<String>,
}

/// `codemode mcp` (stdio) and `codemode serve` (HTTP, when `http` says where).
async fn serve(args: ServeArgs, http: Option<Listen>) -> anyhow::Result<i32> {
    let (mut config, found) = load_config(args.config.as_deref(), Search::UserFolderOnly, args.worker.as_deref())?;
    if let Some(found) = found.filter(|f| f.source == codemode::config_discovery::Source::UserFolder) {
        tracing::info!("reading {}", found.path.display());
    }
    match args.mode.as_deref() {
        Some("tools") => config.server.mode = codemode::config::ServerMode::Tools,
        Some("code") => config.server.mode = codemode::config::ServerMode::Code,
        _ => {}
    }
    if let Some(agent) = args.agent {
        config.server.agent = Some(agent);
    }
    config.check_agent().map_err(|why| anyhow::anyhow!("{why}"))?;
    let rules = config.rules_text()?;
    let sandbox =
        if args.insecure_allow_weaker_sandbox { SandboxPolicy::InsecureAllowWeaker } else { SandboxPolicy::Required };
    let options = AppOptions {
        example_tools: args.example_tools,
        worker: args.worker.clone().unwrap_or_else(codemode::default_worker_path),
        sandbox,
        ..AppOptions::of(&config)
    };
    let limits = options.limits;
    let App { plugins, executor, problems } = App::from_config(&config, options).await?;
    for p in problems.iter().filter(|p| p.unavailable()) {
        tracing::warn!("plugin {} is unavailable: {}", p.plugin, p.reason);
    }
    // The search model and its cache load off the listener's path: whatever lies in
    // their place, the server listens and answers /healthz meanwhile (/readyz waits).
    let model_loading = {
        let (model, executor) = (config.search_model(), Arc::clone(&executor));
        tokio::spawn(async move {
            if let Some(semantic) = match model {
                Some(model) => load_search_model(model).await,
                None => None,
            } {
                executor.set_semantic(semantic);
            }
        })
    };
    use codemode::serve::logs::ClientLogs;
    let client_logs =
        config.server.client_logs.clone().unwrap_or(if http.is_some() { ClientLogs::None } else { ClientLogs::All });
    let log_token = match &client_logs {
        ClientLogs::TokenEnv(variable) => {
            Some(std::env::var(variable).ok().filter(|t| !t.is_empty()).ok_or_else(|| {
                UsageError(format!("[server] client_logs names the token in {variable}, which is not set"))
            })?)
        }
        _ => None,
    };
    if http.is_none() {
        // Standard input and output carry one client: it may use every slot.
        config.server.max_programs_per_session.get_or_insert(config.server.max_concurrent_programs);
        let paused = config.server.paused_programs();
        config.server.max_paused_programs_per_session.get_or_insert(paused);
    }
    // 2026-07-28 clients' paused programs: their states sealed with the replicas' shared
    // key (or one of this process), naming this replica when others may get its retries.
    let key_env = config.server.state_key_env.clone();
    let key = std::env::var(&key_env).ok().filter(|k| !k.is_empty()).map(|k| (key_env, k.into_bytes()));
    let replica_url = http.as_ref().and_then(|h| h.replica_url.clone()).or_else(|| config.server.replica_url.clone());
    if let Some(url) = &replica_url {
        url::Url::parse(url).map_err(|e| UsageError(format!("the replica URL {url:?} is not a URL: {e}")))?;
    }
    let rounds = codemode::serve::rounds::Rounds::new(
        key,
        replica_url,
        limits.wall_clock + codemode::serve::approvals::ANSWER_WAIT,
    )
    .map_err(|e| UsageError(e.to_string()))?;
    let server = codemode::serve::CodemodeServer::new(
        Arc::clone(&executor),
        limits,
        config.server.clone(),
        &rules,
        client_logs,
        log_token.clone(),
        rounds,
    );
    match http {
        None => {
            use rmcp::ServiceExt;
            // One client, which lists the tools first: their description names the
            // ranker once the model has loaded.
            let _ = model_loading.await;
            let running = server
                .serve(rmcp::transport::stdio())
                .await
                .context("starting the MCP server on standard input and output")?;
            running.waiting().await.context("serving MCP")?;
        }
        Some(listen) => {
            let token = std::env::var(&listen.token_env).ok().filter(|t| !t.is_empty());
            codemode::serve::http::check_exposure(listen.addr, listen.allow_remote, token.as_deref())
                .map_err(|e| UsageError(e.to_string()))?;
            let tls_files = listen.tls.or_else(|| config.server.tls_cert.clone().zip(config.server.tls_key.clone()));
            let tls = match &tls_files {
                Some((cert, key)) => {
                    Some(codemode::serve::http::tls_config(cert, key).map_err(|e| UsageError(e.to_string()))?)
                }
                None => None,
            };
            let options = codemode::serve::http::HttpOptions {
                token: token.clone(),
                operator_token: log_token,
                allowed_origins: config.server.allowed_origins.iter().cloned().chain(listen.allow_origins).collect(),
                max_sessions: config.server.max_sessions,
                session_idle: std::time::Duration::from_millis(config.server.session_idle_ms),
                tls,
                stateless: listen.stateless || config.server.stateless,
            };
            let listener = tokio::net::TcpListener::bind(listen.addr)
                .await
                .with_context(|| format!("listening on {}", listen.addr))?;
            let ops = match listen.ops_listen.or(config.server.ops_listen) {
                Some(addr) => {
                    let ops = codemode::serve::operations::Operations::install(Arc::clone(&executor))?;
                    let ops_listener = std::net::TcpListener::bind(addr)
                        .with_context(|| format!("listening for operations on {addr}"))?;
                    announce(&format!(
                        "serving /healthz, /readyz and /metrics on http://{}",
                        ops_listener.local_addr()?
                    ));
                    codemode::serve::operations::serve_on_own_thread(ops_listener, Arc::clone(&ops))
                        .context("starting the operations listener")?;
                    Some(ops)
                }
                None => None,
            };
            let scheme = if options.tls.is_some() { "https" } else { "http" };
            announce(&format!(
                "serving MCP on {scheme}://{}/mcp{}{}",
                listener.local_addr()?,
                if options.stateless { " (stateless)" } else { "" },
                if token.is_some() { " (bearer token required)" } else { "" }
            ));
            // Ready once the model has loaded (or failed, and search ranks by words).
            let readiness = tokio::spawn({
                let ops = ops.clone();
                async move {
                    let _ = model_loading.await;
                    if let Some(ops) = ops {
                        ops.set_ready(true);
                    }
                }
            });
            tokio::select! {
                served = codemode::serve::http::serve(listener, server, options) => {
                    served.context("serving MCP over HTTP")?;
                }
                signal = shutdown_signal() => {
                    // An orchestrator stopping the replica: not ready first (the balancer
                    // stops sending), no new connections, then the programs running now
                    // end within the grace period.
                    readiness.abort();
                    if let Some(ops) = &ops {
                        ops.set_ready(false);
                    }
                    announce(&format!("{signal}: draining {} running program(s), then exiting", executor.running_programs()));
                    let deadline = tokio::time::Instant::now() + SHUTDOWN_DRAIN;
                    while executor.running_programs() > 0 && tokio::time::Instant::now() < deadline {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        }
    }
    drop(plugins);
    drop(executor);
    Ok(0)
}

/// How long `codemode serve` lets running programs finish after SIGTERM or SIGINT
/// (Kubernetes' default grace period is 30 s).
const SHUTDOWN_DRAIN: std::time::Duration = std::time::Duration::from_secs(25);

/// Resolves with the signal's name at SIGTERM or SIGINT. As a container's pid 1,
/// codemode gets no default action for them: without this, a stopping pod waits for its
/// grace period and is killed.
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}
