//! Process plugins end to end: a Python plugin (tests/plugins/test_plugin.py) behind
//! `tools.<plugin>.<tool>`, driven by programs in the real worker.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode::plugins::process::{ProcessConfig, ProcessPlugin};
use codemode::plugins::settings::SettingValue;
use codemode::plugins::PluginHost;
use codemode::{Catalog, Executor, LaunchMode, Limits, OutcomeKind};
use common::*;
use serde_json::json;

fn plugin_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/plugins/test_plugin.py")
}

struct Setup {
    executor: Arc<Executor>,
    _host: Arc<PluginHost>,
    cancel_log: PathBuf,
}

async fn setup(timeout: Duration) -> Setup {
    let cancel_log = std::env::temp_dir().join(format!("codemode-cancel-{}-{}.log", std::process::id(), rand_suffix()));
    let config = ProcessConfig {
        name: "test-plugin".into(),
        command: "python3".into(),
        args: vec![plugin_script().display().to_string()],
        env: vec![("CANCEL_LOG".into(), SettingValue::Literal(cancel_log.display().to_string().into()))],
        settings: Default::default(),
        cwd: None,
        call_timeout: timeout,
        net: None,
        permissions: Vec::new(),
    };
    let mut base = Catalog::new();
    base.add(
        "other",
        codemode::Tool::from_fn(def("echo", None), |_, _| async { codemode::ToolResult::text("other echo") }),
    )
    .unwrap();
    let host = Arc::new(PluginHost::new(base, vec![ProcessPlugin::new(config)]));
    let (catalog, problems) = host.catalog().await;
    assert!(problems.is_empty(), "{problems:?}");
    let limits = Limits::default().with_cpu_step(Duration::from_secs(5)).with_wall_clock(Duration::from_secs(20));
    let executor = Arc::new(
        Executor::builder().launch_mode(LaunchMode::Template).limits(limits).catalog(catalog).build().await.unwrap(),
    );
    host.keep_current(Arc::clone(&executor));
    Setup { executor, _host: host, cancel_log }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default()
}

async fn value(ex: &Executor, code: &str) -> serde_json::Value {
    ok_value(&ex.run(code).await)
}

#[tokio::test]
async fn tools_are_registered_with_aliases_and_collisions_prefixed() {
    let s = setup(Duration::from_secs(10)).await;
    assert_eq!(
        value(&s.executor, r#"return await tools.test_plugin.echo({ value: [1, "a"] })"#).await,
        json!("{\"value\":[1,\"a\"]}")
    );
    assert_eq!(
        value(&s.executor, r#"return await tools["test-plugin"]["bad-output"] !== undefined"#).await,
        json!(true)
    );
    let catalog = s.executor.catalog();
    assert_eq!(catalog.exposed_name("test-plugin", "echo"), "test-plugin_echo");
    assert_eq!(catalog.exposed_name("other", "echo"), "other_echo");
    assert_eq!(catalog.exposed_name("test-plugin", "slow"), "slow");
}

#[tokio::test]
async fn invalid_input_is_a_failed_result_naming_the_field() {
    let s = setup(Duration::from_secs(10)).await;
    let v =
        value(&s.executor, r#"try { await tools.test_plugin.slow({ ms: "soon" }) } catch (e) { return e.message }"#)
            .await;
    assert_eq!(v, json!("invalid input for test-plugin.slow: input.ms: \"soon\" is not of type \"integer\""));
    let v =
        value(&s.executor, r#"try { await tools.test_plugin.structured({}) } catch (e) { return e.message }"#).await;
    assert_eq!(v, json!("invalid input for test-plugin.structured: input: \"n\" is a required property"));
}

#[tokio::test]
async fn structured_content_images_errors_and_output_validation() {
    let s = setup(Duration::from_secs(10)).await;
    assert_eq!(value(&s.executor, "return await tools.test_plugin.structured({ n: 7 })").await, json!({ "n": 7 }));
    assert_eq!(
        value(&s.executor, "return await tools.test_plugin.picture()").await,
        json!([{ "type": "text", "text": "a dot" }, { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }])
    );
    let msg = |code: &'static str| {
        let ex = Arc::clone(&s.executor);
        async move { value(&ex, code).await }
    };
    assert_eq!(
        msg(r#"try { await tools.test_plugin.fail({ why: "no such row" }) } catch (e) { return e.message }"#).await,
        json!("no such row")
    );
    assert_eq!(
        msg("try { await tools.test_plugin.rpc_error() } catch (e) { return e.message }").await,
        json!("plugin test-plugin answered tool/call with an error: the database is locked")
    );
    assert_eq!(
        msg("try { await tools.test_plugin.bad_output() } catch (e) { return e.message }").await,
        json!("test-plugin.bad-output returned a result that does not match its outputSchema: output.n: \"one\" is not of type \"integer\"")
    );
}

#[tokio::test]
async fn a_crashing_plugin_fails_its_calls_and_is_restarted() {
    let s = setup(Duration::from_secs(10)).await;
    let v = value(&s.executor, "try { await tools.test_plugin.crash() } catch (e) { return e.message }").await;
    assert_eq!(v, json!("plugin test-plugin failed: it exited"));
    // The next call starts it again (after a short backoff).
    assert_eq!(value(&s.executor, "return await tools.test_plugin.echo({ value: 1 })").await, json!("{\"value\":1}"));
}

#[tokio::test]
async fn garbage_and_floods_fail_the_calls_in_flight_and_the_plugin_comes_back() {
    let s = setup(Duration::from_secs(10)).await;
    let v = value(&s.executor, "const r = await Promise.allSettled([tools.test_plugin.slow({ ms: 2000 }), tools.test_plugin.garbage()]); return r.map((x) => x.reason && x.reason.message)").await;
    assert_eq!(
        v,
        json!([
            "plugin test-plugin failed: it wrote something that is not JSON-RPC: \"this is not json\"",
            "plugin test-plugin failed: it wrote something that is not JSON-RPC: \"this is not json\""
        ])
    );
    let v = value(&s.executor, "try { await tools.test_plugin.flood() } catch (e) { return e.message }").await;
    assert_eq!(v, json!("plugin test-plugin failed: it wrote a line longer than 16777216 bytes"));
    assert_eq!(value(&s.executor, "return await tools.test_plugin.echo({ value: 2 })").await, json!("{\"value\":2}"));
}

#[tokio::test]
async fn a_hanging_plugin_times_out_and_gets_a_cancel() {
    let s = setup(Duration::from_millis(500)).await;
    let started = Instant::now();
    let v = value(&s.executor, "try { await tools.test_plugin.hang() } catch (e) { return e.message }").await;
    assert_eq!(v, json!("tool test-plugin.hang timed out after 0.5 s"));
    assert!(started.elapsed() < Duration::from_secs(5));
    let cancels = || std::fs::read_to_string(&s.cancel_log).unwrap_or_default().lines().count();
    assert!(eventually(Duration::from_secs(5), || cancels() >= 1).await, "tool/cancel never reached the plugin");
    // The plugin reads its input in order: once it answered a later call, a second
    // cancel sent before that call would have been logged.
    assert_eq!(
        value(&s.executor, "return await tools.test_plugin.echo({ value: 3 })").await,
        json!("{\"value\":3}"),
        "the plugin itself is fine"
    );
    let log = std::fs::read_to_string(&s.cancel_log).unwrap_or_default();
    assert_eq!(log.lines().count(), 1, "tool/cancel must reach the plugin once: {log:?}");
}

#[tokio::test]
async fn a_program_that_ends_cancels_its_calls_at_the_plugin() {
    let s = setup(Duration::from_secs(30)).await;
    let limits = Limits::default().with_wall_clock(Duration::from_millis(400));
    let outcome = s
        .executor
        .run(
            codemode::Program::new(
                "await Promise.all([tools.test_plugin.slow({ ms: 5000 }), tools.test_plugin.slow({ ms: 5000 })])",
            )
            .limits(limits),
        )
        .await;
    assert_eq!(outcome.kind, OutcomeKind::WallClockLimit { limit_ms: 400 });
    let cancels = || std::fs::read_to_string(&s.cancel_log).unwrap_or_default().lines().count();
    eventually(Duration::from_secs(5), || cancels() >= 2).await;
    assert_eq!(value(&s.executor, "return await tools.test_plugin.echo({ value: 4 })").await, json!("{\"value\":4}"));
    let log = std::fs::read_to_string(&s.cancel_log).unwrap_or_default();
    assert_eq!(log.lines().count(), 2, "both calls must be cancelled at the plugin: {log:?}");
}

#[tokio::test]
async fn tools_added_and_removed_at_run_time_reach_later_programs() {
    let s = setup(Duration::from_secs(10)).await;
    assert_eq!(
        value(&s.executor, r#"return await tools.test_plugin.add_tool({ name: "greet" })"#).await,
        json!("added")
    );
    let seen = eventually(Duration::from_secs(5), || s.executor.catalog().get("test-plugin", "greet").is_some()).await;
    assert!(seen, "the catalog did not pick up the new tool");
    assert_eq!(value(&s.executor, "return await tools.test_plugin.greet()").await, json!("hello from greet"));
    assert_eq!(
        value(&s.executor, r#"return await tools.test_plugin.remove_tool({ name: "greet" })"#).await,
        json!("removed")
    );
    eventually(Duration::from_secs(5), || s.executor.catalog().get("test-plugin", "greet").is_none()).await;
    let v = value(&s.executor, "try { await tools.test_plugin.greet() } catch (e) { return e.message }").await;
    assert!(v.as_str().unwrap().starts_with("Unknown tool tools.test_plugin.greet."), "{v}");
}

#[tokio::test]
async fn a_hundred_concurrent_calls() {
    let s = setup(Duration::from_secs(10)).await;
    let started = Instant::now();
    let v = value(&s.executor, "const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.test_plugin.slow({ ms: 300 }))); return r.length").await;
    assert_eq!(v, json!(100));
    assert!(started.elapsed() < Duration::from_secs(5), "100 concurrent 300 ms calls took {:?}", started.elapsed());
}

#[tokio::test]
async fn a_plugin_that_cannot_start_is_reported_not_fatal() {
    let config = ProcessConfig {
        name: "missing".into(),
        command: "/nonexistent/plugin".into(),
        args: vec![],
        env: vec![],
        settings: Default::default(),
        cwd: None,
        call_timeout: Duration::from_secs(1),
        net: None,
        permissions: Vec::new(),
    };
    let host = Arc::new(PluginHost::new(Catalog::new(), vec![ProcessPlugin::new(config)]));
    let (catalog, problems) = host.catalog().await;
    assert_eq!(catalog.plugins().count(), 0);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].reason.starts_with("plugin missing could not be started: /nonexistent/plugin:"),
        "{:?}",
        problems[0]
    );
    assert!(catalog.unavailable("missing").is_some());
}

/// A plugin whose first start fails (its database is not ready) tells the agent why,
/// with the last lines of its stderr, and comes back on a later call and in the
/// background once it can start.
#[tokio::test]
async fn a_plugin_that_fails_its_first_start_is_retried_on_calls_and_in_the_background() {
    let dir = std::env::temp_dir().join(format!("codemode-flaky-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let ready = dir.join("database-ready");
    let script = dir.join("flaky.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nif [ ! -f '{}' ]; then echo 'connecting to the database...' >&2; echo 'error: the database is not ready' >&2; exit 3; fi\nexec python3 '{}'\n", ready.display(), plugin_script().display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = ProcessConfig {
        name: "flaky".into(),
        command: script.clone(),
        args: vec![],
        env: vec![],
        settings: Default::default(),
        cwd: None,
        call_timeout: Duration::from_secs(10),
        net: None,
        permissions: Vec::new(),
    };
    let host = Arc::new(PluginHost::new(Catalog::new(), vec![ProcessPlugin::new(config)]));
    let (catalog, problems) = host.catalog().await;
    assert_eq!(problems.len(), 1);
    let executor =
        Arc::new(Executor::builder().launch_mode(LaunchMode::Template).catalog(catalog).build().await.unwrap());
    host.keep_current(Arc::clone(&executor));

    // The agent reads why, with what the plugin said on stderr.
    let why = value(
        &executor,
        "try { await tools.flaky.echo({ value: 1 }); return 'reached' } catch (e) { return e.message }",
    )
    .await;
    let why = why.as_str().unwrap().to_string();
    // (It exited during initialize, or before the host could even write it: either way.)
    assert!(why.starts_with("plugin flaky is unavailable: plugin flaky failed: "), "{why}");
    assert!(
        why.ends_with(
            "its last lines on stderr:\n  | connecting to the database...\n  | error: the database is not ready"
        ),
        "{why}"
    );

    // Once it can start, the next call (after its backoff) finds it again.
    std::fs::write(&ready, "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let answer = loop {
        let v =
            value(&executor, "try { return await tools.flaky.echo({ value: 7 }) } catch (e) { return 'unavailable' }")
                .await;
        if v != json!("unavailable") || Instant::now() > deadline {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(answer, json!("{\"value\":7}"));
    assert!(executor.catalog().get("flaky", "echo").is_some(), "the executor's catalog holds the recovered plugin");
}

#[tokio::test]
async fn an_unavailable_plugin_comes_back_in_the_background_without_any_call() {
    let dir = std::env::temp_dir().join(format!("codemode-flaky-bg-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let ready = dir.join("ready");
    let script = dir.join("flaky.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\n[ -f '{}' ] || exit 1\nexec python3 '{}'\n", ready.display(), plugin_script().display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = ProcessConfig {
        name: "later".into(),
        command: script,
        args: vec![],
        env: vec![],
        settings: Default::default(),
        cwd: None,
        call_timeout: Duration::from_secs(10),
        net: None,
        permissions: Vec::new(),
    };
    let host = Arc::new(PluginHost::new(Catalog::new(), vec![ProcessPlugin::new(config)]));
    let (catalog, _) = host.catalog().await;
    let executor =
        Arc::new(Executor::builder().launch_mode(LaunchMode::Template).catalog(catalog).build().await.unwrap());
    let mut changes = executor.watch_catalog();
    host.keep_current(Arc::clone(&executor));
    std::fs::write(&ready, "").unwrap();
    // Waits for the catalog to change (the background retry), not for a fixed time.
    tokio::time::timeout(Duration::from_secs(30), async {
        while executor.catalog().get("later", "echo").is_none() {
            changes.changed().await.unwrap();
        }
    })
    .await
    .expect("the background retry brought the plugin back");
}

#[tokio::test]
async fn each_call_carries_its_context() {
    let s = setup(Duration::from_secs(10)).await;
    let caller = codemode::Caller {
        workspace: Some("/home/me/project".into()),
        workspace_id: Some("ws-1".into()),
        agent_id: Some("claude:work".into()),
        chat_id: Some("chat-9".into()),
        call_id: None,
        ..codemode::Caller::default()
    };
    let outcome =
        s.executor.run(codemode::Program::new("return await tools.test_plugin.context()").caller(caller)).await;
    assert_eq!(
        ok_value(&outcome),
        json!({ "workspace": "/home/me/project", "workspaceId": "ws-1", "agentId": "claude:work", "chatId": "chat-9", "callId": "1" })
    );
}
