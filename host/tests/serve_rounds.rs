//! Programs of MCP 2026-07-28 clients paused for a person's answer, against a real
//! `codemode serve`, request by request as bytes on the wire (as
//! `tests/mcp/test_mcp_2026.py` drives it):
//!
//! 1. retries of one `requestState` sent together (both answering; one answering and
//!    one not) are each answered: one gets the program's result, the other is told the
//!    round was already answered, and so is a retry that comes later;
//! 2. paused programs give their slots back: as many paused programs as there are
//!    slots leave another client's `return 1` answering at once; questions beyond the
//!    caps of paused programs (per client, in all) are not asked and their calls
//!    reject saying why; the paused programs resume and finish when answered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use common::{start_serve, Served};

/// What a retry is told when another retry of its state took the result.
const ALREADY_ANSWERED: &str = "this round was already answered: another request with the same requestState received the program's result (a result is given once). Use the answer that request received; to run the program again, call execute without a requestState";

/// `codemode serve` with plugin `t` (its `danger` needs approval; `wait` waits `ms`)
/// and `server` as its `[server]` section, on a free loopback port.
fn serve(label: &str, server: &str) -> Served {
    let dir = std::env::temp_dir().join(format!("codemode-serve-rounds-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let plugin = dir.join("t");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(
        plugin.join("manifest.json"),
        r#"{ "name": "t", "version": "1", "main": "main.js", "permissions": { "tools.provide": {} } }"#,
    )
    .unwrap();
    std::fs::write(
        plugin.join("main.js"),
        r#"export function activate(api) {
  let runs = 0;
  api.tools.register({ name: "danger", description: "Counts its runs.", run: ({ n }) => ({ n, runs: ++runs }) });
  api.tools.register({ name: "wait", description: "Waits ms milliseconds.", run: ({ ms }) => new Promise((r) => setTimeout(() => r("waited"), ms)) });
}"#,
    )
    .unwrap();
    let config = dir.join("codemode.toml");
    std::fs::write(
        &config,
        format!(
            "[limits]\nwall_clock_ms = 60000\n\n[server]\n{server}\n\n[[plugin]]\nname = \"t\"\nkind = \"javascript\"\npath = \"t\"\nrequire_approval = [\"danger\"]\n"
        ),
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_codemode"));
    command.args(["serve", "--config", config.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    start_serve(command)
}

/// One 2026-07-28 `tools/call execute` of the client whose credential is `token`: the
/// JSON-RPC answer, or `None` when none came within `within`.
async fn call(url: &str, token: &str, params: Value, within: Duration) -> Option<Value> {
    let mut params = params;
    params["name"] = json!("execute");
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
        "io.modelcontextprotocol/clientInfo": { "name": "rounds-test", "version": "1" },
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let http = reqwest::Client::builder().timeout(within).build().unwrap();
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "execute")
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    let text = response.text().await.ok()?;
    std::iter::once(text.as_str())
        .chain(text.lines().filter_map(|l| l.strip_prefix("data:")))
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
}

/// Starts `code`; its first round must ask one question: (the question's key, the state).
async fn started(url: &str, token: &str, code: &str) -> (String, String) {
    let answer = call(url, token, json!({ "arguments": { "code": code } }), Duration::from_secs(30)).await;
    let result = answer.as_ref().and_then(|a| a.get("result")).unwrap_or_else(|| panic!("{answer:?}"));
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{result}");
    (requests.keys().next().unwrap().clone(), result["requestState"].as_str().unwrap().to_string())
}

/// A retry with `state`, answering `key` (accepted) when given one.
async fn retry(url: &str, token: &str, state: &str, key: Option<&str>) -> Option<Value> {
    let mut params = json!({ "arguments": {}, "requestState": state });
    if let Some(key) = key {
        params["inputResponses"] = json!({ key: { "action": "accept", "content": {} } });
    }
    call(url, token, params, Duration::from_secs(30)).await
}

/// The text of a complete result (`Err`: the JSON-RPC error's message).
fn outcome(answer: &Option<Value>) -> Result<String, String> {
    let answer = answer.as_ref().expect("an answer within 30 s");
    if let Some(error) = answer.get("error") {
        return Err(error["message"].as_str().unwrap().to_string());
    }
    let result = &answer["result"];
    assert_ne!(result["resultType"], "input_required", "{result}");
    assert_ne!(result["isError"], true, "{result}");
    Ok(result["content"][0]["text"].as_str().unwrap().to_string())
}

/// Sorted so that the result comes first, the refusal second.
fn result_then_refusal(
    a: Result<String, String>,
    b: Result<String, String>,
) -> (Result<String, String>, Result<String, String>) {
    if a.is_ok() {
        (a, b)
    } else {
        (b, a)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_of_one_state_sent_together_are_each_answered() {
    codemode::tls::ensure_provider();
    let served = serve("retries", "");
    let url = served.url.as_str();
    // The program goes on for a while after the approval, so that the retries meet.
    let program = "const said = await tools.t.danger({ n: 1 }); await tools.t.wait({ ms: 1500 }); return said";

    // Both answering, at once: the tool runs once; one gets the result, the other is told.
    let (key, state) = started(url, "client-a", program).await;
    let (a, b) = tokio::join!(retry(url, "client-a", &state, Some(&key)), retry(url, "client-a", &state, Some(&key)));
    let (result, refusal) = result_then_refusal(outcome(&a), outcome(&b));
    assert_eq!(result, Ok(r#"{"n":1,"runs":1}"#.to_string()));
    assert_eq!(refusal, Err(ALREADY_ANSWERED.to_string()));

    // One answering, then one not while the first waits for the program's end.
    let (key, state) = started(url, "client-a", program).await;
    let answering = retry(url, "client-a", &state, Some(&key));
    let not_answering = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        retry(url, "client-a", &state, None).await
    };
    let (a, b) = tokio::join!(answering, not_answering);
    assert_eq!(outcome(&a), Ok(r#"{"n":1,"runs":2}"#.to_string()));
    assert_eq!(outcome(&b), Err(ALREADY_ANSWERED.to_string()));

    // A retry that comes after the result was taken is told the same, at once.
    assert_eq!(outcome(&retry(url, "client-a", &state, None).await), Err(ALREADY_ANSWERED.to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_programs_hold_no_slot_and_resume_when_answered() {
    codemode::tls::ensure_provider();
    // Two slots; three paused programs in all, two per client (three quarters of three).
    let served = serve("paused", "max_concurrent_programs = 2\nmax_paused_programs = 3");
    let url = served.url.as_str();
    // (A JavaScript plugin's object reaches the program as its JSON text.)
    let asking = |n: u32| format!("return JSON.parse(await tools.t.danger({{ n: {n} }})).n");
    let refused =
        |n: u32| format!("try {{ return await tools.t.danger({{ n: {n} }}) }} catch (e) {{ return e.message }}");

    // Client a pauses as many programs as there are slots.
    let mut paused = vec![started(url, "client-a", &asking(1)).await, started(url, "client-a", &asking(2)).await];

    // Another client's trivial program still runs at once.
    let quick = call(url, "client-b", json!({ "arguments": { "code": "return 1" } }), Duration::from_secs(2)).await;
    assert!(quick.is_some(), "return 1 got no answer within 2 s while two programs were paused on two slots");
    assert_eq!(outcome(&quick), Ok("1".to_string()));

    // Client a's third question is beyond its share of paused programs: not asked.
    let answer = call(url, "client-a", json!({ "arguments": { "code": refused(3) } }), Duration::from_secs(30)).await;
    assert_eq!(
        outcome(&answer),
        Ok("asking for approval of tools.t.danger failed: this client already has 2 programs waiting for a person's answer, the most `[server] max_paused_programs_per_session` allows, so this question was not asked; answer or end one of them, then run this again".to_string())
    );
    // Client b pauses one (three in all); its next question is beyond the server's cap.
    paused.push(started(url, "client-b", &asking(4)).await);
    let answer = call(url, "client-b", json!({ "arguments": { "code": refused(5) } }), Duration::from_secs(30)).await;
    assert_eq!(
        outcome(&answer),
        Ok("asking for approval of tools.t.danger failed: 3 programs are already waiting for a person's answer on this server, the most `[server] max_paused_programs` allows, so this question was not asked; answer or end one of them, then run this again".to_string())
    );

    // Answered, every paused program resumes (taking a slot again) and finishes.
    let tokens = ["client-a", "client-a", "client-b"];
    let answers = futures::future::join_all(
        paused.iter().zip(tokens).map(|((key, state), token)| retry(url, token, state, Some(key))),
    )
    .await;
    let finished: Vec<_> = answers.iter().map(outcome).collect();
    assert_eq!(finished, [Ok("1".to_string()), Ok("2".to_string()), Ok("4".to_string())]);
}
