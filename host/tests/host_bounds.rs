//! The attacks that bloated or locked up the host, run against a real `codemode serve`:
//! its memory stays bounded by the default budgets, and authorized clients keep getting
//! served.
//!
//! 1. a program holds 30 calls with 48 MiB inputs to a slow tool (the report's attack:
//!    none fits the program's default 32 MiB budget of tool data in flight, so the
//!    worker refuses each before it sends anything), then 30 calls with 30 MiB inputs
//!    (one fits; the rest reject at once);
//! 2. a JavaScript plugin queues 100 `api.net.fetch` requests with 1 MiB bodies, each
//!    answered with 8 MiB (the plugin's fetch budget refuses what does not fit);
//! 3. 600 idle connections are opened, then an authorized client (the server requires
//!    a bearer token) must still be served (unproven connections are bounded and the
//!    oldest make room);
//! 4. 1,000 sessions are opened (at most `max_sessions` exist; the rest get 503).
//!
//! The server runs with the default budgets and limits but two: the CPU step is raised,
//! so that building 48 MiB strings on a loaded machine is not what stops a program, and
//! the memory limit is 512 MiB, since handing a 48 MiB string to a tool call takes the
//! worker about 300 MiB at its peak (the string, its JSON text, and the copies the call
//! makes of it), more than the default 256 MiB now that the limit counts everything.
//! Then the host's peak RSS (`VmHWM`) must stay under [`HOST_PEAK_LIMIT_MIB`]; the
//! figures are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{start_serve, Served};

/// The host's peak RSS across every attack, at most (docs/limits.md states it).
const HOST_PEAK_LIMIT_MIB: u64 = 400;
/// The bearer token the server requires.
const TOKEN: &str = "bounds-test-token";

fn status_kib(pid: u32, field: &str) -> u64 {
    let value = common::status_field(pid as i32, field);
    value.trim_end_matches("kB").trim().parse().unwrap_or_else(|_| panic!("{field} of {pid}: {value:?}"))
}

/// A slow HTTP server on loopback answering every request with `body_mib` MiB, slowly.
fn slow_http_server(body_mib: usize) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                std::thread::sleep(Duration::from_millis(500));
                let total = body_mib << 20;
                let _ = write!(stream, "HTTP/1.1 200 OK\r\ncontent-length: {total}\r\nconnection: close\r\n\r\n");
                let chunk = vec![b'z'; 1 << 20];
                for _ in 0..body_mib {
                    if stream.write_all(&chunk).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        }
    });
    port
}

fn setup(dir: &std::path::Path, http_port: u16) -> PathBuf {
    let plugin = dir.join("flooder");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(
        plugin.join("manifest.json"),
        format!(r#"{{ "name": "flooder", "version": "1", "main": "main.js", "permissions": {{ "tools.provide": {{}}, "net": {{ "hosts": ["127.0.0.1:{http_port}"] }} }} }}"#),
    )
    .unwrap();
    std::fs::write(
        plugin.join("main.js"),
        format!(
            r#"export function activate(api) {{
  api.tools.register({{
    name: "flood",
    description: "Queues 100 fetches with 1 MiB bodies.",
    async run() {{
      const body = "y".repeat(1024 * 1024);
      const results = await Promise.all(Array.from({{ length: 100 }}, () =>
        api.net.fetch("http://127.0.0.1:{http_port}/", {{ method: "POST", body }}).then((r) => r.text()).then((t) => "ok " + t.length, (e) => "refused: " + e.message)));
      return {{ ok: results.filter((r) => r.startsWith("ok")).length, refused: results.filter((r) => r.startsWith("refused")).length, sample: results.find((r) => r.startsWith("refused")) }};
    }},
  }});
}}"#
        ),
    )
    .unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/plugins/test_plugin.py");
    let config = dir.join("codemode.toml");
    std::fs::write(
        &config,
        format!(
            "example_tools = true\n\n[limits]\ncpu_step_ms = 60000\nmemory_mib = 512\n\n[[plugin]]\nname = \"slow\"\nkind = \"process\"\ncommand = \"python3\"\nargs = [\"{}\"]\n\n[[plugin]]\nname = \"flooder\"\nkind = \"javascript\"\npath = \"flooder\"\nmemory_mib = 512\ntimeout_ms = 120000\n",
            script.display()
        ),
    )
    .unwrap();
    config
}

fn serve(config: &std::path::Path) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_codemode"));
    command
        .args(["serve", "--config", config.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .env("CODEMODE_TOKEN", TOKEN);
    start_serve(command)
}

/// Runs one program through a fresh MCP session (rmcp's own client); the result's text.
async fn execute(url: &str, code: &str) -> String {
    use rmcp::ServiceExt;
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN);
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
    let client = ().serve(transport).await.expect("the MCP session opens");
    let mut params = rmcp::model::CallToolRequestParams::new("execute");
    params.arguments = Some(serde_json::json!({ "code": code }).as_object().unwrap().clone());
    let result = client.call_tool(params).await.expect("execute answers");
    let _ = client.cancel().await;
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_memory_stays_bounded_and_authorized_clients_are_served_under_attack() {
    codemode::tls::ensure_provider();
    let dir = std::env::temp_dir().join(format!("codemode-host-bounds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = setup(&dir, slow_http_server(8));
    let served = serve(&config);
    let pid = served.child.id();
    assert_eq!(execute(&served.url, "return 1 + 1").await, "2");
    let baseline = status_kib(pid, "VmRSS");

    // 1. Thirty 48 MiB inputs (the report's), then thirty 30 MiB inputs, held by a slow tool.
    let out = execute(
        &served.url,
        "const big = 'x'.repeat(48 * 1024 * 1024); const r = await Promise.all(Array.from({ length: 30 }, () => tools.slow.slow({ ms: 2000, pad: big }).then(() => 'ok', (e) => e.message))); return { ok: r.filter((x) => x === 'ok').length, refused: r.filter((x) => x.includes('of tool data')).length }",
    )
    .await;
    let counts: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}"));
    assert_eq!((counts["ok"].as_u64(), counts["refused"].as_u64()), (Some(0), Some(30)), "{out}");
    let out = execute(
        &served.url,
        "const big = 'x'.repeat(30 * 1024 * 1024); const r = await Promise.all(Array.from({ length: 30 }, () => tools.slow.slow({ ms: 2000, pad: big }).then(() => 'ok', (e) => e.message))); return { ok: r.filter((x) => x === 'ok').length, refused: r.filter((x) => x.includes('of tool data')).length }",
    )
    .await;
    let counts: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}"));
    assert_eq!(counts["ok"].as_u64().unwrap() + counts["refused"].as_u64().unwrap(), 30, "{out}");
    assert!(counts["refused"].as_u64().unwrap() >= 28, "inputs beyond the budget are refused: {out}");
    let after_inputs = status_kib(pid, "VmHWM");

    // 2. A plugin queueing 100 fetches with 1 MiB bodies and 8 MiB answers.
    let out = execute(&served.url, "return await tools.flooder.flood({})").await;
    let counts: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}"));
    assert_eq!(counts["ok"].as_u64().unwrap() + counts["refused"].as_u64().unwrap(), 100, "{out}");
    assert!(counts["refused"].as_u64().unwrap() > 0, "{out}");
    assert!(counts["sample"].as_str().unwrap().contains("await some fetches before starting more"), "{out}");
    let after_fetches = status_kib(pid, "VmHWM");

    // 3. Idle connections, then an authorized client.
    let addr = served.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let idle: Vec<std::net::TcpStream> = (0..600).filter_map(|_| std::net::TcpStream::connect(&addr).ok()).collect();
    assert!(idle.len() >= 550, "opened only {} idle connections", idle.len());
    let started = Instant::now();
    let served_anyway =
        tokio::time::timeout(Duration::from_secs(20), execute(&served.url, "return 'still served'")).await;
    assert_eq!(served_anyway.expect("an authorized client is served while idle connections are open"), "still served");
    let waited = started.elapsed();
    drop(idle);

    // 4. A thousand sessions.
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let unauthorized = http.post(&served.url).json(&serde_json::json!({})).send().await.unwrap();
    assert_eq!(unauthorized.status().as_u16(), 401, "the token is required");
    let init = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "flood", "version": "1" } } });
    let mut opened = 0;
    let mut refused = 0;
    for _ in 0..1000 {
        let r = http
            .post(&served.url)
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .unwrap();
        match r.status().as_u16() {
            200 => opened += 1,
            503 => refused += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    // The default cap: 256 sessions (the one the authorized client used is closed).
    assert!(opened <= 256 && refused >= 744, "opened {opened}, refused {refused}");
    let peak = status_kib(pid, "VmHWM");

    println!(
        "host RSS: baseline {} MiB; peak after the tool-input attack {} MiB, after the fetch flood {} MiB, after idle connections and 1,000 sessions {} MiB (limit {HOST_PEAK_LIMIT_MIB} MiB); an authorized client was served in {:.0} ms with 600 idle connections open",
        baseline / 1024,
        after_inputs / 1024,
        after_fetches / 1024,
        peak / 1024,
        waited.as_secs_f64() * 1000.0
    );
    assert!(peak / 1024 < HOST_PEAK_LIMIT_MIB, "the host's peak RSS was {} MiB", peak / 1024);
}
