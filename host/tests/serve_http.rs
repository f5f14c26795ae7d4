//! `codemode serve` over HTTP and HTTPS, against real clients: codemode itself (an MCP
//! plugin at a `url`, over plain HTTP and over TLS with a certificate made for the
//! test) and plain HTTP requests for the server's own checks (path, `Origin`, token,
//! ending a session).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{start_serve, Served};

fn codemode() -> &'static str {
    env!("CARGO_BIN_EXE_codemode")
}

/// Starts `codemode serve` with the example tools on a free loopback port, with `extra`
/// arguments and environment, and waits for the address it prints.
fn serve(extra: &[&str], env: &[(&str, &str)]) -> Served {
    let mut command = Command::new(codemode());
    command.args(["serve", "--example-tools", "--listen", "127.0.0.1:0"]).args(extra).envs(env.iter().copied());
    start_serve(command)
}

fn folder(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codemode-serve-http-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `program` with `codemode run` under a configuration whose plugin `remote` is the
/// MCP server at `url`; returns exit code and output.
fn run_against(url: &str, program: &str, env: &[(&str, &str)], dir: &Path) -> (i32, String, String) {
    let config = dir.join("client.toml");
    std::fs::write(
        &config,
        format!("[[plugin]]\nname = \"remote\"\nkind = \"mcp\"\nurl = \"{url}\"\ntimeout_ms = 20000\n"),
    )
    .unwrap();
    let mut child = Command::new(codemode())
        .args(["run", "--config", config.to_str().unwrap(), "-"])
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(program.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const REMOTE_PROGRAM: &str =
    "return await tools.remote.execute({ code: 'return (await tools.math.add({ a: 40, b: 2 }))' })";

#[test]
fn a_url_plugin_reaches_codemode_serve_over_plain_http() {
    let served = serve(&[], &[]);
    assert!(served.url.starts_with("http://127.0.0.1:") && served.url.ends_with("/mcp"), "{}", served.url);
    let (code, out, err) = run_against(&served.url, REMOTE_PROGRAM, &[], &folder("plain"));
    assert_eq!((code, out.as_str()), (0, "42\n"), "{err}");
}

#[test]
fn a_url_plugin_reaches_codemode_serve_over_https_and_refuses_an_untrusted_certificate() {
    let dir = folder("tls");
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let served = serve(&["--tls-cert", cert_path.to_str().unwrap(), "--tls-key", key_path.to_str().unwrap()], &[]);
    assert!(served.url.starts_with("https://127.0.0.1:"), "{}", served.url);

    // Trusting the test's certificate (the client's trust store is SSL_CERT_FILE here).
    let (code, out, err) =
        run_against(&served.url, REMOTE_PROGRAM, &[("SSL_CERT_FILE", cert_path.to_str().unwrap())], &dir);
    assert_eq!((code, out.as_str()), (0, "42\n"), "{err}");

    // Trusting only the usual authorities, the plugin is unavailable and a call says why.
    let program =
        "try { await tools.remote.execute({ code: 'return 1' }); return 'reached' } catch (e) { return e.message }";
    let authorities = dir.join("authorities.pem");
    std::fs::write(
        &authorities,
        rcgen::generate_simple_self_signed(vec!["ca.example".to_string()]).unwrap().cert.pem(),
    )
    .unwrap();
    let (code, out, err) = run_against(&served.url, program, &[("SSL_CERT_FILE", authorities.to_str().unwrap())], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("plugin remote is unavailable: plugin remote could not be started: the MCP handshake failed"),
        "{out}"
    );
    assert!(out.contains("error sending request for url (https://127.0.0.1"), "{out}");

    // With no authority at all the client cannot even be made: still a reason, never a crash.
    let empty = folder("tls-no-roots");
    let no_roots = empty.join("no-roots.pem");
    std::fs::write(&no_roots, "").unwrap();
    let (code, out, err) = run_against(
        &served.url,
        program,
        &[("SSL_CERT_FILE", no_roots.to_str().unwrap()), ("SSL_CERT_DIR", empty.to_str().unwrap())],
        &dir,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("plugin remote is unavailable: plugin remote could not be started: cannot make an HTTP client"),
        "{out}"
    );
}

/// A plain HTTP client (no MCP) for the server's own checks.
fn client() -> reqwest::Client {
    codemode::tls::ensure_provider();
    reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap()
}

fn initialize() -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw-test", "version": "1" } }
    })
}

#[tokio::test]
async fn serve_checks_the_path_the_origin_and_the_token_and_ends_sessions_with_204() {
    let served = serve(&[], &[("CODEMODE_TOKEN", "s3cret")]);
    let http = client();
    let base = served.url.trim_end_matches("/mcp").to_string();
    let post = |path: &str| {
        http.post(format!("{base}{path}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .json(&initialize())
    };

    let r = post("/").bearer_auth("s3cret").send().await.unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(r.text().await.unwrap(), "codemode serves MCP at /mcp only\n");
    assert_eq!(post("/sse").bearer_auth("s3cret").send().await.unwrap().status(), 404);

    let r = post("/mcp").bearer_auth("s3cret").header("origin", "http://evil.example").send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("the origin \"http://evil.example\" may not use this server"));

    assert_eq!(post("/mcp").send().await.unwrap().status(), 401);
    assert_eq!(post("/mcp").bearer_auth("wrong").send().await.unwrap().status(), 401);

    // A page served from the loopback origin may call a loopback server.
    let r = post("/mcp").bearer_auth("s3cret").header("origin", "http://localhost:5173").send().await.unwrap();
    assert_eq!(r.status(), 200);
    let session = r.headers().get("mcp-session-id").expect("a session id").to_str().unwrap().to_string();
    let r = http
        .delete(&served.url)
        .bearer_auth("s3cret")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "DELETE ends the session with 204 No Content");
}

#[tokio::test]
async fn sessions_beyond_the_cap_are_refused_with_a_reason() {
    let dir = folder("sessions");
    let config = dir.join("codemode.toml");
    std::fs::write(&config, "example_tools = true\n\n[server]\nmax_sessions = 3\n").unwrap();
    let served = serve(&["--config", config.to_str().unwrap()], &[]);
    let http = client();
    let open =
        || http.post(&served.url).header("accept", "application/json, text/event-stream").json(&initialize()).send();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let r = open().await.unwrap();
        assert_eq!(r.status(), 200);
        sessions.push(r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string());
    }
    let r = open().await.unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.text().await.unwrap().starts_with("3 MCP sessions are open, the most this server keeps"));
    let r = http
        .delete(&served.url)
        .header("mcp-session-id", &sessions[0])
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(open().await.unwrap().status(), 200, "an ended session makes room");
}
