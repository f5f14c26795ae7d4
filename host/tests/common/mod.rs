//! Shared fixtures for the host's integration tests: a catalog of test tools and
//! helpers to build executors against the real worker binary.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use codemode::{
    Catalog, Content, Executor, LaunchMode, Limits, Outcome, OutcomeKind, Tool, ToolDefinition, ToolResult,
};
use serde_json::{json, Value};

pub fn def(name: &str, output_schema: Option<Value>) -> ToolDefinition {
    ToolDefinition {
        output_schema,
        ..ToolDefinition::new(name, format!("test tool {name}"), json!({"type": "object"}))
    }
}

/// Tools that exercise every result shape and timing the tests need.
pub fn test_catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(
        "math",
        Tool::from_fn(def("add", None), |i, _| async move {
            ToolResult::text((i["a"].as_i64().unwrap_or(0) + i["b"].as_i64().unwrap_or(0)).to_string())
        }),
    )
    .unwrap();
    c.add("echo", Tool::from_fn(def("echo", None), |i, _| async move { ToolResult::json(i) })).unwrap();
    c.add(
        "echo",
        Tool::from_fn(def("structured", Some(json!({"type": "object"}))), |i, _| async move {
            ToolResult::json(json!({ "got": i }))
        }),
    )
    .unwrap();
    c.add(
        "echo",
        Tool::from_fn(def("picture", None), |_, _| async move {
            ToolResult {
                content: vec![Content::text("a red dot"), Content::image("iVBORw0KGgo=", "image/png")],
                ..Default::default()
            }
        }),
    )
    .unwrap();
    c.add(
        "echo",
        Tool::from_fn(def("fail", None), |i, _| async move {
            ToolResult::error(format!("no such city: {}", i["city"].as_str().unwrap_or("?")))
        }),
    )
    .unwrap();
    c.add(
        "echo",
        Tool::from_fn(def("panic", None), |_, _| async move {
            if true {
                panic!("tool bug");
            }
            ToolResult::text("unreachable")
        }),
    )
    .unwrap();
    c.add(
        "slow",
        Tool::from_fn(def("wait", None), |i, ctx| async move {
            let ms = i["ms"].as_u64().unwrap_or(200);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => ToolResult::text(format!("waited {ms}")),
                () = ctx.cancel.cancelled() => ToolResult::error("cancelled"),
            }
        }),
    )
    .unwrap();
    c.add(
        "my-db",
        Tool::from_fn(def("search-rows", None), |i, _| async move {
            ToolResult::text(format!("rows for {}", i["q"].as_str().unwrap_or("")))
        }),
    )
    .unwrap();
    c
}

pub async fn executor_with(mode: LaunchMode, limits: Limits, catalog: Catalog) -> Executor {
    Executor::builder()
        .launch_mode(mode)
        .limits(limits)
        .catalog(catalog)
        .build()
        .await
        .expect("executor starts (is sandbox-worker built? scripts/test builds it)")
}

pub async fn executor() -> Executor {
    executor_with(LaunchMode::Template, Limits::default(), test_catalog()).await
}

pub fn ok_value(outcome: &Outcome) -> Value {
    match &outcome.kind {
        OutcomeKind::Ok { value } => value.as_deref().map(|v| serde_json::from_str(v).unwrap()).unwrap_or(Value::Null),
        other => panic!("expected ok, got {other:?}\nconsole: {}", outcome.console),
    }
}

pub fn error_of(outcome: &Outcome) -> (String, String) {
    match &outcome.kind {
        OutcomeKind::Error { name, message, .. } => (name.clone(), message.clone()),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Adds `watch.wait` to `catalog`: a tool that reports on the returned receiver when a
/// call starts, then waits until the call is given up. Tests wait for it instead of
/// sleeping until a program has probably reached its tool call.
pub fn add_watched_tool(catalog: &mut Catalog) -> tokio::sync::mpsc::UnboundedReceiver<()> {
    let (started_tx, started) = tokio::sync::mpsc::unbounded_channel();
    catalog
        .add(
            "watch",
            Tool::from_fn(def("wait", None), move |_, ctx| {
                let started = started_tx.clone();
                async move {
                    let _ = started.send(());
                    ctx.cancel.cancelled().await;
                    ToolResult::error("given up")
                }
            }),
        )
        .unwrap();
    started
}

/// Waits until `done` holds, checking every 10 ms, for at most `limit`; says whether it
/// came true. For events the test can only observe from outside (a process gone, a file
/// written by a plugin, a catalog refreshed in the background).
pub async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One field of `/proc/PID/status` (`"Threads"`, `"PPid"`, ...), trimmed; empty when
/// the process or the field is not there.
pub fn status_field(pid: i32, field: &str) -> String {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return String::new() };
    status.lines().find_map(|l| l.strip_prefix(&format!("{field}:"))).map(|v| v.trim().to_string()).unwrap_or_default()
}

/// True once `pid` has exited (gone, or a zombie waiting to be reaped).
pub fn exited(pid: i32) -> bool {
    let state = status_field(pid, "State");
    state.is_empty() || state.starts_with('Z') || state.starts_with('X')
}

/// Asserts that the executor still runs a normal program correctly.
pub async fn assert_healthy(executor: &Executor) {
    let outcome = executor.run("return await tools.math.add({ a: 20, b: 22 })").await;
    assert_eq!(outcome.agent_text(), "42", "the executor is unhealthy after the previous program: {outcome:?}");
}

/// Processes whose parent is this test process, other than `except`.
pub fn child_pids(except: Option<i32>) -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        if status_field(pid, "PPid") == me && Some(pid) != except {
            pids.push(pid);
        }
    }
    pids
}

/// Open descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// `codemode ARGS` with `stdin` and extra environment, as scripts run it: in a session
/// of its own, with no terminal (so a tool that asks for approval is refused rather
/// than prompting on the terminal of whoever runs the tests): (exit code, stdout,
/// stderr).
pub fn codemode_cli(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"));
    // SAFETY: between fork and exec the child only calls setsid, which is
    // async-signal-safe.
    unsafe {
        command.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    let mut child = command
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A codemode that exits before reading (a usage mistake) closes the pipe early.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A running `codemode serve`; killed when dropped.
pub struct Served {
    /// The server process.
    pub child: std::process::Child,
    /// Its MCP endpoint (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` (`codemode serve ... --listen 127.0.0.1:0`), waits for the MCP
/// address it prints, and keeps draining its stderr so that it never blocks on a full
/// pipe.
pub fn start_serve(mut command: std::process::Command) -> Served {
    use std::io::BufRead;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("codemode serve exited before it listened").unwrap();
        if let Some(at) = line.find("serving MCP on ") {
            break line[at + "serving MCP on ".len()..].split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines.by_ref() {});
    Served { child, url }
}
