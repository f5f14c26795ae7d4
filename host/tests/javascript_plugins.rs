//! JavaScript plugins end to end: plugin folders run by the sandboxed plugin runtime
//! (`sandbox-worker plugin`), behind `tools.<plugin>.<tool>`, called by programs in the
//! real worker. The main test plugin is `tests/plugins/js-test/main.js`; each test
//! writes its manifest (the network allowlist names the test's own HTTP server).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode::plugins::javascript::JavascriptPlugin;
use codemode::plugins::process::ProcessPlugin;
use codemode::plugins::{LoadProblem, PluginHost};
use codemode::{default_worker_path, Catalog, Executor, LaunchMode, Limits, OutcomeKind, SandboxPolicy};
use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOOLS_PROVIDE: &str = r#""tools.provide": { "reason": "tests" }"#;

/// A plugin folder in a fresh temporary directory: `files` plus the manifest.
fn plugin_folder(label: &str, manifest: &str, files: &[(&str, &str)]) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("codemode-js-{label}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("manifest.json"), manifest).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

/// The test plugin, allowed to reach `hosts`.
fn test_plugin(hosts: &[String]) -> PathBuf {
    let main =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/plugins/js-test/main.js"))
            .unwrap();
    let net = if hosts.is_empty() {
        String::new()
    } else {
        format!(r#", "net": {{ "hosts": {}, "reason": "tests" }}"#, json!(hosts))
    };
    let manifest = format!(
        r#"{{ "name": "js-test", "version": "1.0.0", "main": "main.js", "permissions": {{ {TOOLS_PROVIDE}{net} }} }}"#
    );
    plugin_folder("test", &manifest, &[("main.js", &main)])
}

fn javascript(name: &str, dir: &Path, timeout: Duration, memory_mib: u64, cpu_step_ms: u64) -> Arc<ProcessPlugin> {
    let plugin = JavascriptPlugin {
        memory_mib,
        cpu_step_ms,
        call_timeout: timeout,
        ..JavascriptPlugin::new(name, dir, None).unwrap()
    };
    ProcessPlugin::new(plugin.process_config(&default_worker_path(), SandboxPolicy::Required))
}

struct Setup {
    executor: Arc<Executor>,
    host: Arc<PluginHost>,
    problems: Vec<LoadProblem>,
}

async fn start(plugins: Vec<Arc<ProcessPlugin>>) -> Setup {
    let host = Arc::new(PluginHost::new(Catalog::new(), plugins));
    let (catalog, problems) = host.catalog().await;
    let limits = Limits::default().with_cpu_step(Duration::from_secs(5)).with_wall_clock(Duration::from_secs(30));
    let executor = Arc::new(
        Executor::builder().launch_mode(LaunchMode::Template).limits(limits).catalog(catalog).build().await.unwrap(),
    );
    host.keep_current(Arc::clone(&executor));
    Setup { executor, host, problems }
}

/// The test plugin as `js`, with a 10 s call timeout, 64 MiB and a 500 ms CPU step.
async fn setup() -> Setup {
    let s = start(vec![javascript("js", &test_plugin(&[]), Duration::from_secs(10), 64, 500)]).await;
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    s
}

async fn value(ex: &Executor, code: &str) -> Value {
    ok_value(&ex.run(code).await)
}

/// The message a call rejects with.
async fn rejection(ex: &Executor, call: &str) -> String {
    let v = value(ex, &format!("try {{ await {call}; return null }} catch (e) {{ return e.message }}")).await;
    v.as_str().unwrap_or_else(|| panic!("{call} did not reject: {v}")).to_string()
}

#[tokio::test]
async fn both_registration_forms_and_every_kind_of_result() {
    let s = setup().await;
    let names: Vec<String> = s
        .executor
        .catalog()
        .plugins()
        .flat_map(|(_, tools)| tools.map(|t| t.definition.name.clone()).collect::<Vec<_>>())
        .collect();
    assert!(names.contains(&"echo".to_string()) && names.contains(&"simple_add".to_string()), "{names:?}");
    let ex = &s.executor;
    assert_eq!(value(ex, r#"return await tools.js.text({ text: "plain" })"#).await, json!("plain"));
    assert_eq!(value(ex, "return await tools.js.simple_add({ a: 2, b: 40 })").await, json!("42"));
    assert_eq!(value(ex, "return await tools.js.nothing()").await, json!("null"));
    assert_eq!(
        value(ex, "return await tools.js.image()").await,
        json!([{ "type": "text", "text": "a pixel" }, { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }])
    );
    assert_eq!(rejection(ex, "tools.js.mcp_error()").await, "the plugin says no");
    assert_eq!(rejection(ex, "tools.js.throws()").await, "broken on purpose");
    assert_eq!(rejection(ex, "tools.js.rejects()").await, "RangeError: out of range");
    // With an outputSchema the program gets structuredContent; a result that breaks it fails.
    assert_eq!(value(ex, "return await tools.js.stats({ good: true })").await, json!({ "total": 3, "names": ["a"] }));
    let e = rejection(ex, "tools.js.stats({ good: false })").await;
    assert_eq!(e, "js.stats returned a result that does not match its outputSchema: output.total: \"three\" is not of type \"integer\"");
}

#[tokio::test]
async fn every_mcp_content_kind_reaches_the_program_intact() {
    let s = setup().await;
    let ex = &s.executor;
    // Not only text: the program gets the content list, every field as the tool wrote it.
    assert_eq!(
        value(ex, "return await tools.js.every_content()").await,
        json!([
            { "type": "text", "text": "hello", "annotations": { "audience": ["user"], "priority": 0.5 }, "_meta": { "example.com/id": 7 } },
            { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" },
            { "type": "resource_link", "uri": "file:///notes/a.md", "name": "a.md", "mimeType": "text/markdown", "size": 12 },
            { "type": "resource", "resource": { "uri": "file:///notes/b.md", "mimeType": "text/markdown", "text": "# B" } },
            { "type": "resource", "resource": { "uri": "file:///c.bin", "blob": "AAE=" } },
        ])
    );
    // A result that is not an MCP CallToolResult fails the call and says why.
    let e = rejection(ex, "tools.js.bad_content()").await;
    assert!(
        e.starts_with(
            "tool bad_content returned a result that is not an MCP tool result (a \"image\" content item needs "
        ),
        "{e}"
    );
}

#[tokio::test]
async fn a_tool_can_ask_for_approval_and_hears_the_hosts_answer() {
    let s = setup().await;
    // Run by an embedder with no one to ask: the request reaches the host (host/approve)
    // and is refused with the reason. (Through the MCP server the client's person is
    // asked: tests/mcp/test_mcp_server.py.)
    assert_eq!(
        value(&s.executor, "return JSON.parse(await tools.js.approve())").await,
        json!({ "approved": false, "reason": "nobody can be asked here: a person approves through the MCP server's client (codemode mcp or codemode serve)" })
    );
}

#[tokio::test]
async fn the_runtime_survives_a_plugin_that_replaces_builtins() {
    let manifest =
        format!(r#"{{ "name": "h", "version": "1", "main": "main.js", "permissions": {{ {TOOLS_PROVIDE} }} }}"#);
    let main = r#"
        export function activate(api) {
          const t = (name, run) => api.tools.register({ name, description: name, run });
          t("hijack", ({ what }) => {
            if (what === "push") Array.prototype.push = () => { throw 1 };
            if (what === "object") globalThis.Object = null;
            if (what === "lower") String.prototype.toLowerCase = null;
            console.log("after", what, { list: [1, 2] }, new Error("logged"));
            return `replaced ${what}`;
          });
          t("after", () => { console.error("still logging", [1], { a: 1 }); return { ok: true, list: [1, 2] }; });
          t("fails", () => { throw new TypeError("still described"); });
          t("fetch", () => api.net.fetch("https://example.com/"));
          t("controller", () => { const c = new AbortController(); c.abort("stop"); return [c.signal.aborted, c.signal.reason]; });
        }
    "#;
    for what in ["push", "object", "lower"] {
        let dir = plugin_folder("hijack", &manifest, &[("main.js", main)]);
        let s = start(vec![javascript("h", &dir, Duration::from_secs(10), 64, 500)]).await;
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        let ex = &s.executor;
        assert_eq!(
            value(ex, &format!(r#"return await tools.h.hijack({{ what: "{what}" }})"#)).await,
            json!(format!("replaced {what}")),
            "{what}"
        );
        assert_eq!(
            value(ex, "return JSON.parse(await tools.h.after())").await,
            json!({ "ok": true, "list": [1, 2] }),
            "{what}"
        );
        assert_eq!(rejection(ex, "tools.h.fails()").await, "TypeError: still described", "{what}");
        assert_eq!(
            rejection(ex, "tools.h.fetch()").await,
            "fetch: plugin h may not reach example.com: its manifest.json allows no hosts; add \"example.com\" to permissions.net.hosts to allow it",
            "{what}"
        );
        assert_eq!(value(ex, "return JSON.parse(await tools.h.controller())").await, json!([true, "stop"]), "{what}");
    }
}

#[tokio::test]
async fn invalid_input_is_a_failed_result_and_the_tool_never_runs() {
    let s = setup().await;
    let e = rejection(&s.executor, r#"tools.js.typed({ count: "two" })"#).await;
    assert_eq!(e, "invalid input for js.typed: input.count: \"two\" is not of type \"integer\"");
    let e = rejection(&s.executor, "tools.js.typed({})").await;
    assert_eq!(e, "invalid input for js.typed: input: \"count\" is a required property");
    assert_eq!(value(&s.executor, "return await tools.js.typed({ count: 21 })").await, json!("42"));
}

#[tokio::test]
async fn each_call_carries_its_context() {
    let s = setup().await;
    let caller = codemode::Caller {
        workspace: Some("/srv/w".into()),
        workspace_id: Some("ws-2".into()),
        agent_id: Some("codex".into()),
        chat_id: Some("c-1".into()),
        call_id: None,
        ..codemode::Caller::default()
    };
    let outcome =
        s.executor.run(codemode::Program::new("return JSON.parse(await tools.js.echo({ x: 1 }))").caller(caller)).await;
    assert_eq!(
        ok_value(&outcome),
        json!({ "input": { "x": 1 }, "context": { "workspace": "/srv/w", "workspaceId": "ws-2", "agentId": "codex", "chatId": "c-1", "callId": "1", "aborted": false } })
    );
}

#[tokio::test]
async fn a_given_up_call_fires_its_signal() {
    // The call times out at the host: tool/cancel reaches the runtime and aborts ctx.signal.
    let s = start(vec![javascript("js", &test_plugin(&[]), Duration::from_millis(300), 64, 500)]).await;
    assert_eq!(
        rejection(&s.executor, "tools.js.wait_for_abort()").await,
        "tool js.wait_for_abort timed out after 0.3 s"
    );
    // The program ends (wall clock) with a call in flight: that call is given up too.
    let outcome = s
        .executor
        .run(
            codemode::Program::new("await tools.js.wait_for_abort()")
                .limits(Limits::default().with_wall_clock(Duration::from_millis(200))),
        )
        .await;
    assert_eq!(outcome.kind, OutcomeKind::WallClockLimit { limit_ms: 200 });
    let reason =
        "AbortError: the call was given up: the program ended, hit a limit, was cancelled, or the call timed out";
    let mut aborted = json!([]);
    for _ in 0..50 {
        aborted = serde_json::from_str(value(&s.executor, "return await tools.js.aborted()").await.as_str().unwrap())
            .unwrap();
        if aborted.as_array().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(aborted, json!([reason, reason]));
}

#[tokio::test]
async fn tools_registered_and_removed_at_run_time_reach_later_programs() {
    let s = setup().await;
    assert_eq!(value(&s.executor, r#"return await tools.js.add_tool({ name: "late" })"#).await, json!("added"));
    wait_until(|| s.executor.catalog().get("js", "late").is_some()).await;
    assert_eq!(value(&s.executor, "return await tools.js.late()").await, json!("I am late"));
    assert_eq!(value(&s.executor, r#"return await tools.js.remove_tool({ name: "late" })"#).await, json!("removed"));
    wait_until(|| s.executor.catalog().get("js", "late").is_none()).await;
    assert!(rejection(&s.executor, "tools.js.late()").await.starts_with("Unknown tool tools.js.late."));
}

async fn wait_until(done: impl Fn() -> bool) {
    for _ in 0..100 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the catalog did not change");
}

#[tokio::test]
async fn same_tool_names_in_two_plugins_are_prefixed_where_names_are_shared() {
    let s = start(vec![
        javascript("alpha", &test_plugin(&[]), Duration::from_secs(10), 64, 500),
        javascript("beta", &test_plugin(&[]), Duration::from_secs(10), 64, 500),
    ])
    .await;
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    let catalog = s.executor.catalog();
    assert_eq!(catalog.exposed_name("alpha", "echo"), "alpha_echo");
    assert_eq!(catalog.exposed_name("beta", "echo"), "beta_echo");
    let v =
        value(&s.executor, r#"return [await tools.alpha.text({ text: "a" }), await tools.beta.text({ text: "b" })]"#)
            .await;
    assert_eq!(v, json!(["a", "b"]));
}

#[tokio::test]
async fn the_cpu_limit_stops_the_runtime_and_it_comes_back() {
    let s = setup().await;
    let e = rejection(&s.executor, "tools.js.spin()").await;
    assert_eq!(
        e,
        "tool js.spin failed: the plugin ran JavaScript for more than 500 ms without waiting for the host and was stopped; it restarts on the next call (long work must await the host, or raise cpu_step_ms in its configuration)"
    );
    assert_eq!(value(&s.executor, r#"return await tools.js.text({ text: "back" })"#).await, json!("back"));
}

#[tokio::test]
async fn the_memory_limit_stops_the_runtime_and_it_comes_back() {
    let s = start(vec![javascript("js", &test_plugin(&[]), Duration::from_secs(20), 32, 5000)]).await;
    let e = rejection(&s.executor, "tools.js.hog()").await;
    assert!(
        e.starts_with("tool js.hog failed: the plugin used more than its memory limit of 32 MiB and was stopped"),
        "{e}"
    );
    assert_eq!(value(&s.executor, r#"return await tools.js.text({ text: "back" })"#).await, json!("back"));
}

#[tokio::test]
async fn floods_fail_the_call_not_the_host() {
    // A generous CPU step: building and writing 40 MB of JSON must not trip it on a busy machine.
    let s = start(vec![javascript("js", &test_plugin(&[]), Duration::from_secs(20), 128, 10_000)]).await;
    // An answer longer than a protocol line: the call fails, the runtime restarts.
    assert_eq!(
        rejection(&s.executor, "tools.js.huge({ mib: 20 })").await,
        "plugin js failed: it wrote a line longer than 16777216 bytes"
    );
    // 16 MB of console output: the host keeps draining it, the call completes.
    assert_eq!(value(&s.executor, "return await tools.js.shout({ lines: 10000 })").await, json!("done"));
    assert_eq!(value(&s.executor, r#"return await tools.js.text({ text: "still here" })"#).await, json!("still here"));
}

#[tokio::test]
async fn timers_urls_encoders_and_blobs_work_as_packages_expect() {
    let s = setup().await;
    let v: Value =
        serde_json::from_str(value(&s.executor, "return await tools.js.web()").await.as_str().unwrap()).unwrap();
    assert_eq!(v["order"], json!(["t10", "micro", "i1", "t30", "i2"]));
    assert_eq!(v["waited"], json!(true));
    assert_eq!(v["url"], json!("https://user:pw@example.com:8443/b/c?x=1&y=two+words&z=3%264#top"));
    assert_eq!(
        v["parts"],
        json!([
            "https:",
            "example.com:8443",
            "example.com",
            "8443",
            "/b/c",
            "?x=1&y=two+words&z=3%264",
            "#top",
            "https://example.com:8443"
        ])
    );
    assert_eq!(v["params"], json!("q=a+b&r=%C3%BC"));
    assert_eq!(v["parsed"], json!([["a", "1"], ["a", "2"], ["b", " x y"]]));
    assert_eq!(v["bytes"], json!([104, 195, 169, 108, 108, 111]));
    assert_eq!(v["decoded"], json!("héllo"));
    assert_eq!(v["fatal"], json!("TypeError"));
    assert_eq!(v["blob"], json!(["abc", 3, "text/plain", "c.txt"]));
    assert_eq!(v["uuid"], json!(true));
    assert_eq!(v["invalid"], json!("TypeError"));
}

#[tokio::test]
async fn an_unhandled_rejection_is_logged_not_fatal() {
    let s = setup().await;
    assert_eq!(value(&s.executor, "return await tools.js.count()").await, json!("1"));
    assert_eq!(value(&s.executor, "return await tools.js.fire_and_forget()").await, json!("fired"));
    // The same runtime answers: its state survived.
    assert_eq!(value(&s.executor, "return await tools.js.count()").await, json!("2"));
}

#[tokio::test]
async fn a_hundred_concurrent_calls() {
    let s = setup().await;
    let started = Instant::now();
    let v = value(&s.executor, "const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.js.typed({ count: i }))); return r.map(Number).reduce((a, b) => a + b, 0)").await;
    assert_eq!(v, json!(9900));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn the_runtime_has_the_language_and_the_api_nothing_else() {
    // A folder of its own: the /proc scan below must not pick up another test's runtime
    // while it is still starting (before its sandbox is in place).
    let dir = test_plugin(&[]);
    let s = start(vec![javascript("js", &dir, Duration::from_secs(10), 64, 500)]).await;
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    let v: Value =
        serde_json::from_str(value(&s.executor, "return await tools.js.globals()").await.as_str().unwrap()).unwrap();
    assert_eq!(
        v,
        json!([
            "Deno:undefined",
            "require:undefined",
            "module:undefined",
            "Buffer:undefined",
            "WebAssembly:undefined",
            "host:undefined",
            "fetch:function",
            "setTimeout:function",
            "queueMicrotask:function",
            "TextEncoder:function",
            "crypto:object",
            "process:object",
            "tools:object",
            "AbortController:function",
            "console:object",
            "env:{}"
        ])
    );
    // Every process of the runtime is under seccomp with no_new_privs, like a program's worker.
    // The runtime's command is `sandbox-worker plugin [flags]`; flags come in any order.
    let dir_arg = format!(" --dir {} ", dir.display());
    let mut seen = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !(cmdline.contains("sandbox-worker") && cmdline.contains(" plugin --") && cmdline.contains(&dir_arg)) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else { continue };
        if !status.contains(&format!("PPid:\t{}", std::process::id()))
            && !status.lines().any(|l| l.starts_with("NSpid:") && l.split_whitespace().count() > 2)
        {
            continue;
        }
        assert!(status.contains("NoNewPrivs:\t1"), "{status}");
        assert!(status.contains("Seccomp:\t2"), "{status}");
        seen += 1;
    }
    assert!(seen >= 2, "the launcher and the runtime should both be visible, saw {seen}");
}

#[tokio::test]
async fn a_plugin_without_tools_provide_cannot_register() {
    let dir = plugin_folder(
        "noperm",
        r#"{ "name": "np", "version": "1", "main": "main.js" }"#,
        &[(
            "main.js",
            r#"export function activate(api) { api.tools.register({ name: "x", description: "x", run: () => 1 }); }"#,
        )],
    );
    let s = start(vec![javascript("np", &dir, Duration::from_secs(10), 64, 500)]).await;
    assert_eq!(s.problems.len(), 1);
    assert!(
        s.problems[0].reason.ends_with(
            "plugin np cannot load: plugin np cannot register tools: its manifest.json does not ask for the \"tools.provide\" permission; add \"permissions\": { \"tools.provide\": { \"reason\": \"…\" } }"
        ),
        "{:?}",
        s.problems
    );
}

#[tokio::test]
async fn simple_form_mistakes_are_refused_at_load() {
    let manifest =
        format!(r#"{{ "name": "s", "version": "1", "main": "main.js", "permissions": {{ {TOOLS_PROVIDE} }} }}"#);
    let cases = [
        (
            "globalThis.tools.bare = async () => 1;",
            "globalThis.tools.bare: a bare function is not a tool; assign { description, parameters, handler }",
        ),
        (
            "globalThis.tools.quiet = { handler: () => 1 };",
            "globalThis.tools.quiet: `description` is required: say what the tool does and when to use it",
        ),
        (
            "globalThis.tools.Bad = { description: \"d\", handler: () => 1 };",
            "globalThis.tools.Bad: the name must match ^[a-z][a-z0-9_]{0,63}$",
        ),
    ];
    for (code, expected) in cases {
        let dir = plugin_folder("simple", &manifest, &[("main.js", code)]);
        let s = start(vec![javascript("s", &dir, Duration::from_secs(10), 64, 500)]).await;
        assert_eq!(s.problems.len(), 1, "{code}");
        assert!(s.problems[0].reason.contains(expected), "{code}: {:?}", s.problems[0]);
    }
}

#[tokio::test]
async fn a_mistyped_approval_entry_is_reported() {
    let approvals = std::collections::HashMap::from([("js".to_string(), vec!["text".to_string(), "txet".to_string()])]);
    let host = Arc::new(
        PluginHost::new(Catalog::new(), vec![javascript("js", &test_plugin(&[]), Duration::from_secs(10), 64, 500)])
            .with_approvals(approvals),
    );
    let (catalog, problems) = host.catalog().await;
    assert_eq!(catalog.get("js", "text").unwrap().definition.requires_approval, codemode::tool::Approval::Always);
    assert!(catalog.get("js", "echo").unwrap().definition.requires_approval.is_never());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].reason.starts_with("require_approval names txet, which this plugin does not have (its tools: "),
        "{problems:?}"
    );
}

#[tokio::test]
async fn a_broken_module_is_reported_with_its_error() {
    let manifest =
        format!(r#"{{ "name": "b", "version": "1", "main": "main.js", "permissions": {{ {TOOLS_PROVIDE} }} }}"#);
    let dir = plugin_folder(
        "broken",
        &manifest,
        &[("main.js", "import { x } from \"./missing.js\";\nexport function activate() {}")],
    );
    let s = start(vec![javascript("b", &dir, Duration::from_secs(10), 64, 500)]).await;
    assert_eq!(s.problems.len(), 1);
    assert!(
        s.problems[0].reason.contains(&format!(
            "main.js does not load: main.js imports \"./missing.js\", which is not a file of the plugin's folder ({})",
            std::fs::canonicalize(&dir).unwrap().display()
        )),
        "{:?}",
        s.problems
    );
    let dir = plugin_folder(
        "throws",
        &manifest,
        &[("main.js", "export function activate() { throw new Error(\"no config\"); }")],
    );
    let s = start(vec![javascript("t", &dir, Duration::from_secs(10), 64, 500)]).await;
    assert!(s.problems[0].reason.ends_with("plugin t cannot load: no config"), "{:?}", s.problems);
    drop(s.host);
}

/// A plugin whose `activate` throws is unavailable with its reason, and is retried: once
/// its author fixes the module, a later call (after the backoff) finds the tool.
#[tokio::test]
async fn a_plugin_whose_activate_throws_is_retried_after_its_author_fixes_it() {
    let manifest =
        format!(r#"{{ "name": "r", "version": "1", "main": "main.js", "permissions": {{ {TOOLS_PROVIDE} }} }}"#);
    let dir = plugin_folder(
        "retried",
        &manifest,
        &[("main.js", "export function activate() { throw new Error(\"the database is not ready\"); }")],
    );
    let s = start(vec![javascript("r", &dir, Duration::from_secs(10), 64, 500)]).await;
    assert_eq!(s.problems.len(), 1, "{:?}", s.problems);
    let why =
        value(&s.executor, "try { await tools.r.ping({}); return 'reached' } catch (e) { return e.message }").await;
    assert!(
        why.as_str().unwrap().starts_with("plugin r is unavailable: ")
            && why.as_str().unwrap().contains("plugin r cannot load: the database is not ready"),
        "{why}"
    );

    std::fs::write(
        dir.join("main.js"),
        "export function activate(api) { api.tools.register({ name: \"ping\", description: \"Answers pong.\", inputSchema: { type: \"object\" }, run: () => \"pong\" }); }",
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        let v = value(&s.executor, "try { return await tools.r.ping({}) } catch (e) { return 'unavailable' }").await;
        if v != json!("unavailable") || Instant::now() > deadline {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(answer, json!("pong"));
    drop(s.host);
}

/// A tiny HTTP server: `/hello` answers text, `/echo` echoes the request body and its
/// x-test header, `/away` redirects to `away_to`, `/binary` answers bytes that are not
/// UTF-8.
async fn http_server(away_to: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let away_to = away_to.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                let head_end = loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&request[..head_end]).to_string();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0))
                    })
                    .unwrap_or(0);
                while request.len() < head_end + length {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                let body = String::from_utf8_lossy(&request[head_end..]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let x_test = head.lines().any(|l| l.eq_ignore_ascii_case("x-test: 1"));
                let (status, extra, body): (_, _, Vec<u8>) = match path.as_str() {
                    "/hello" => ("200 OK", String::new(), "hi there".into()),
                    "/echo" => ("200 OK", String::new(), format!("{} x-test={x_test}", body).into()),
                    "/away" => ("302 Found", format!("Location: {away_to}\r\n"), Vec::new()),
                    "/binary" => ("200 OK", String::new(), vec![0, 255, 1, 0xc3]),
                    _ => ("404 Not Found", String::new(), "no".into()),
                };
                let head = format!("HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n", body.len());
                let _ = socket.write_all(&[head.as_bytes(), &body].concat()).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn net_fetch_reaches_only_the_hosts_in_the_manifest() {
    let outside = http_server("http://127.0.0.1:1/".into()).await;
    let allowed = http_server(format!("http://127.0.0.1:{outside}/hello")).await;
    let s = start(vec![
        javascript("js", &test_plugin(&[format!("127.0.0.1:{allowed}")]), Duration::from_secs(10), 64, 5000),
        javascript("offline", &test_plugin(&[]), Duration::from_secs(10), 64, 5000),
    ])
    .await;
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    let ex = &s.executor;
    let got = value(
        ex,
        &format!(r#"return JSON.parse(await tools.js.fetch({{ url: "http://127.0.0.1:{allowed}/hello" }}))"#),
    )
    .await;
    assert_eq!(got, json!({ "status": 200, "ok": true, "type": "text/plain", "body": "hi there" }));
    let got = value(ex, &format!(r#"return JSON.parse(await tools.js.fetch({{ url: "http://127.0.0.1:{allowed}/echo", method: "POST", body: "ping" }}))"#)).await;
    assert_eq!(got["body"], json!("ping x-test=true"));
    // Bodies as bytes: text encoded as UTF-8, and a body that is not text as it was sent
    // (its text() decoded with replacement characters, as browsers do).
    let got = value(
        ex,
        &format!(r#"return JSON.parse(await tools.js.fetch_bytes({{ url: "http://127.0.0.1:{allowed}/hello" }}))"#),
    )
    .await;
    assert_eq!(got, json!({ "bytes": [104, 105, 32, 116, 104, 101, 114, 101], "text": "hi there" }));
    let got = value(
        ex,
        &format!(r#"return JSON.parse(await tools.js.fetch_bytes({{ url: "http://127.0.0.1:{allowed}/binary" }}))"#),
    )
    .await;
    assert_eq!(got, json!({ "bytes": [0, 255, 1, 0xc3], "text": "\u{0}\u{fffd}\u{1}\u{fffd}" }));
    // Another port on the same machine, another host name, a redirect out, a scheme.
    let e = rejection(ex, &format!(r#"tools.js.fetch({{ url: "http://127.0.0.1:{outside}/hello" }})"#)).await;
    assert_eq!(
        e,
        format!("fetch: plugin js may not reach 127.0.0.1:{outside}: its manifest.json allows only 127.0.0.1:{allowed}; add \"127.0.0.1:{outside}\" to permissions.net.hosts to allow it")
    );
    let e = rejection(ex, &format!(r#"tools.js.fetch({{ url: "http://localhost:{allowed}/hello" }})"#)).await;
    assert!(e.starts_with(&format!("fetch: plugin js may not reach localhost:{allowed}")), "{e}");
    let e = rejection(ex, &format!(r#"tools.js.fetch({{ url: "http://127.0.0.1:{allowed}/away" }})"#)).await;
    assert!(
        e.contains(&format!(
            "a redirect to http://127.0.0.1:{outside}/hello, which its manifest.json does not allow; add \"127.0.0.1:{outside}\" to permissions.net.hosts to allow it"
        )),
        "{e}"
    );
    // A plugin without the permission.
    let e = rejection(ex, &format!(r#"tools.offline.fetch({{ url: "http://127.0.0.1:{allowed}/hello" }})"#)).await;
    assert!(e.starts_with("fetch: plugin offline may not reach 127.0.0.1:"), "{e}");
    assert!(e.contains("its manifest.json allows no hosts; add"), "{e}");
}
