//! `codemode serve` against what a client sends that it must not trust, on the real
//! binary: the `requestState` of a paused program (the client reads nothing in it, and
//! a changed one does not open), the `x-codemode-forwarded` header set by a client (the
//! answer names no replica's address), a request body that trickles in (408 and the
//! connection closed at its deadline) and a kept-alive connection left idle (closed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};

use common::{start_serve, Served};

const TOKEN: &str = "token-of-client-a";
const STATE_KEY: &str = "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk";
/// Where replica A says it is: a loopback port nothing listens on, so that a retry
/// passed on to it finds it gone at once.
const REPLICA_A: &str = "http://127.0.0.1:9/mcp";
const REPLICA_B: &str = "http://127.0.0.1:10/mcp";
/// What every state that cannot be used is answered with.
const REFUSED: &str = "the requestState is not one this server gave you for a program that is still running (it is forged, another client's, expired, or its program ended long ago); run the program again";

/// A configuration whose `hello.greet` needs a person's approval.
fn config(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codemode-serve-input-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
    let path = dir.join("codemode.toml");
    std::fs::write(
        &path,
        format!(
            "[[plugin]]\nname = \"hello\"\nkind = \"javascript\"\npath = \"{}/plugins/hello-tools\"\nrequire_approval = [\"greet\"]\n",
            root.display()
        ),
    )
    .unwrap();
    path
}

/// Starts `codemode serve --config CONFIG` on a free loopback port with the token and
/// the shared state key, with `extra` arguments, and waits for the address it prints.
fn serve(config: &std::path::Path, extra: &[&str]) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_codemode"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--config", config.to_str().unwrap()])
        .args(extra)
        .env("CODEMODE_TOKEN", TOKEN)
        .env("CODEMODE_STATE_KEY", STATE_KEY);
    start_serve(command)
}

/// One 2026-07-28 `tools/call execute`, as a client sends it: its JSON-RPC answer.
async fn call(url: &str, params: Value, forwarded: bool) -> Value {
    codemode::tls::ensure_provider();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let mut params = params;
    params["name"] = json!("execute");
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
        "io.modelcontextprotocol/clientInfo": { "name": "raw-agent", "version": "1" },
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let mut request = http
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "execute")
        .body(body.to_string());
    if forwarded {
        request = request.header("x-codemode-forwarded", "1");
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    std::iter::once(text.as_str())
        .chain(text.lines().filter_map(|l| l.strip_prefix("data:")))
        .filter_map(|candidate| serde_json::from_str::<Value>(candidate.trim()).ok())
        .rfind(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {text}"))
}

/// The longest run of printable ASCII bytes in `bytes`.
fn longest_printable_run(bytes: &[u8]) -> usize {
    bytes.split(|b| !(0x20..0x7f).contains(b)).map(<[u8]>::len).max().unwrap_or(0)
}

#[tokio::test]
async fn a_request_state_tells_the_client_nothing_and_no_answer_names_a_replica() {
    let config = config("states");
    let a = serve(&config, &["--replica-url", REPLICA_A]);
    let b = serve(&config, &["--replica-url", REPLICA_B]);
    let program = json!({ "code": "return await tools.hello.greet({ name: 'Ann' })" });
    let first = call(&a.url, json!({ "arguments": program }), false).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let state = result["requestState"].as_str().unwrap().to_string();
    let key = result["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();

    // Decoded as a client would decode it (every dot-separated part that is base64):
    // no JSON, no address, no run id, nothing readable at all.
    for needle in ["127.0.0.1", "replica", "run", "mcp"] {
        assert!(!state.contains(needle), "{needle:?} in the state as sent: {state}");
    }
    let parts: Vec<Vec<u8>> = state.split('.').filter_map(|part| URL_SAFE_NO_PAD.decode(part).ok()).collect();
    assert!(!parts.is_empty(), "{state}");
    for part in &parts {
        let text = String::from_utf8_lossy(part);
        assert!(serde_json::from_slice::<Value>(part).is_err(), "a part of the state is JSON: {text}");
        for needle in ["127.0.0.1", "replica", "\"run\"", "http"] {
            assert!(!text.contains(needle), "{needle:?} readable in the state: {text}");
        }
        // A run id (32 hex digits) or any text would be a long printable run; random
        // bytes have one of 16 with a chance of about 1 in 100,000.
        assert!(longest_printable_run(part) < 16, "readable text in the state: {text}");
    }

    // A changed state does not open: the same answer as every other unusable state.
    let mut changed = state.clone().into_bytes();
    let middle = changed.len() / 2;
    changed[middle] = if changed[middle] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    let refused = call(&a.url, json!({ "arguments": program, "requestState": changed }), false).await;
    assert_eq!(refused["error"]["message"], REFUSED, "{refused}");

    // A client that sets the replicas' header itself learns no address.
    let forged = call(&b.url, json!({ "arguments": program, "requestState": state }), true).await;
    assert_eq!(
        forged["error"]["message"],
        "this replica does not hold the program of this requestState, and a retry another replica passed on (x-codemode-forwarded) is not passed on again; send the retry without that header, which only replicas set",
        "{forged}"
    );
    // Passed on by B to A's address, where nothing answers: the program is lost, and
    // the answer does not say where it was.
    let gone = call(&b.url, json!({ "arguments": program, "requestState": state }), false).await;
    assert_eq!(gone["result"]["isError"], true, "{gone}");
    assert_eq!(
        gone["result"]["content"][0]["text"],
        "the codemode replica that ran this program cannot be reached; the program was lost with it: run it again",
        "{gone}"
    );

    // The state itself still works where the program is.
    let mut accepted = serde_json::Map::new();
    accepted.insert(key, json!({ "action": "accept", "content": {} }));
    let done =
        call(&a.url, json!({ "arguments": program, "requestState": state, "inputResponses": accepted }), false).await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ann!", "{done}");
}

/// `host:port` of a served URL.
fn address(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches("/mcp").to_string()
}

/// Reads from `stream` until the peer closes it or `limit` passes: what came, and
/// whether it was closed.
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (String::from_utf8_lossy(&got).into_owned(), false);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(n) => got.extend_from_slice(&buffer[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            // Reset by the server: closed as well.
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), true),
        }
    }
}

/// The server's deadline for a request's body, and for a connection idle between
/// requests (`serve::http::BODY_READ_DEADLINE`, `HEADER_READ_TIMEOUT`).
const DEADLINE: Duration = Duration::from_secs(30);
/// How much later than its deadline a connection may be closed.
const MARGIN: Duration = Duration::from_secs(10);

#[test]
fn a_body_trickling_in_is_answered_408_and_closed_at_its_deadline() {
    let served = serve(&config("trickle"), &[]);
    let host = address(&served.url);
    let mut stream = TcpStream::connect(&host).unwrap();
    let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": {} })).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    // One byte a second: the whole body would take longer than the deadline.
    let mut writer = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        for byte in body {
            if writer.write_all(&[byte]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let (answer, closed) = read_until_closed(&mut stream, DEADLINE + MARGIN);
    assert!(closed, "the connection is still open after {:?}: {answer:?}", started.elapsed());
    assert!(answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{answer:?}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer:?}");
    assert!(
        answer.ends_with(
            "\r\n\r\nthe request's body did not arrive within 30 s of its headers; send the whole request at once\n"
        ),
        "{answer:?}"
    );
    assert!(started.elapsed() >= DEADLINE - Duration::from_secs(1), "answered before the deadline: {answer:?}");
}

#[test]
fn a_kept_alive_connection_left_idle_is_closed() {
    let served = serve(&config("idle"), &[]);
    let host = address(&served.url);
    let mut stream = TcpStream::connect(&host).unwrap();
    // A good request (it proves the connection), answered at once; then nothing.
    let head = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {TOKEN}\r\nmcp-session-id: none\r\nmcp-protocol-version: 2025-06-18\r\ncontent-length: 0\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let idle_since = Instant::now();
    let (answer, closed) = read_until_closed(&mut stream, DEADLINE + MARGIN);
    assert!(answer.starts_with("HTTP/1.1 "), "the request was answered: {answer:?}");
    assert!(!answer.starts_with("HTTP/1.1 401") && !answer.starts_with("HTTP/1.1 404"), "{answer:?}");
    assert!(closed, "an idle connection is still open after {:?}: {answer:?}", idle_since.elapsed());
    assert!(!answer.to_ascii_lowercase().contains("\r\nconnection: close\r\n"), "kept alive: {answer:?}");
    assert!(
        idle_since.elapsed() >= DEADLINE - Duration::from_secs(1),
        "closed before it was idle that long: {answer:?}"
    );
}
