//! Every limit ends the program with its own outcome, naming the limit's value, and the
//! executor stays healthy afterwards. Runs the real worker.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use codemode::limits::MIB;
use codemode::{LaunchMode, Limits, OutcomeKind};
use common::*;
use serde_json::json;

fn fast_limits() -> Limits {
    Limits::default().with_cpu_step(Duration::from_millis(500)).with_memory_bytes(64 * MIB)
}

async fn ex() -> codemode::Executor {
    executor_with(LaunchMode::Template, fast_limits(), test_catalog()).await
}

#[tokio::test]
async fn memory_bombs_hit_the_memory_limit() {
    // A generous step: some bombs need half a second of CPU to fill 64 MiB (QuickJS
    // collects cycles as the heap grows), and the memory limit is what is tested here.
    let ex =
        executor_with(LaunchMode::Template, fast_limits().with_cpu_step(Duration::from_secs(20)), test_catalog()).await;
    for code in [
        "const a = []; while (true) a.push(new Array(100000).fill(1.5));",
        "const a = []; while (true) a.push({ x: Math.random(), y: [1, 2, 3] });",
        "const parts = []; for (let i = 0; i < 1e6; i++) parts.push('x'.repeat(1000) + i); return parts.length",
        "JSON.parse('[' + '1,'.repeat(3e7) + '1]')",
    ] {
        let outcome = ex.run(code).await;
        assert_eq!(outcome.kind, OutcomeKind::MemoryLimit { limit_bytes: 64 * MIB }, "{code}");
        assert!(outcome.agent_text().starts_with("Memory limit: the program used more than its 64 MiB of memory"));
    }
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn a_busy_loop_hits_the_cpu_limit() {
    let ex = ex().await;
    let outcome = ex.run("while (true) {}").await;
    assert_eq!(outcome.kind, OutcomeKind::CpuLimit { limit_ms: 500 });
    assert!(outcome.agent_text().contains("more than 500 ms"));
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn an_endless_microtask_chain_hits_the_cpu_limit() {
    let ex = ex().await;
    assert_eq!(ex.run("while (true) { await null; }").await.kind, OutcomeKind::CpuLimit { limit_ms: 500 });
    assert_eq!(
        ex.run("async function spin() { for (;;) await Promise.resolve(); } await spin();").await.kind,
        OutcomeKind::CpuLimit { limit_ms: 500 }
    );
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn a_blocking_atomics_wait_hits_the_cpu_limit() {
    let ex = ex().await;
    let outcome = ex.run("Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return 'woke'").await;
    assert_eq!(outcome.kind, OutcomeKind::CpuLimit { limit_ms: 500 });
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn waiting_for_tools_does_not_count_as_cpu() {
    let ex = ex().await;
    // 3 × 400 ms of waiting with a 500 ms step limit: each answer starts a new step.
    let outcome = ex.run("for (let i = 0; i < 3; i++) await tools.slow.wait({ ms: 400 }); const r = await tools.slow.wait({ ms: 900 }); return r").await;
    assert_eq!(ok_value(&outcome), json!("waited 900"));
}

#[tokio::test]
async fn cpu_between_answers_resets_at_each_answer() {
    let ex = ex().await;
    // Each step burns about 300 ms (under the 500 ms limit), four times over.
    let code = "for (let i = 0; i < 4; i++) { const end = Date.now() + 300; while (Date.now() < end) {} await tools.math.add({ a: 1, b: 1 }); } return 'ok'";
    assert_eq!(ok_value(&ex.run(code).await), json!("ok"));
}

#[tokio::test]
async fn a_never_settling_promise_is_stuck_at_once() {
    let ex = ex().await;
    let started = std::time::Instant::now();
    let outcome = ex.run("await new Promise(() => {}); return 'never'").await;
    assert_eq!(outcome.kind, OutcomeKind::Stuck);
    assert!(started.elapsed() < Duration::from_secs(5), "stuck detection waited {:?}", started.elapsed());
    assert_eq!(
        outcome.agent_text(),
        "Stuck: the program waits for a promise that nothing will settle (no tool call is in flight), so it was ended."
    );
    // With a tool call in flight, the program is not stuck.
    assert_eq!(ok_value(&ex.run("let done; const p = new Promise((r) => (done = r)); tools.slow.wait({ ms: 100 }).then(done); await p; return 'settled'").await), json!("settled"));
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn deep_recursion_is_a_range_error_not_a_crash() {
    let ex = ex().await;
    let (name, message) = error_of(&ex.run("function f(n) { return f(n + 1) + 1 } return f(0)").await);
    assert_eq!((name.as_str(), message.as_str()), ("RangeError", "Maximum call stack size exceeded"));
    assert_eq!(
        ok_value(&ex.run("function f(n) { return n === 0 ? 0 : 1 + f(n - 1) } return f(2000)").await),
        json!(2000)
    );
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn a_console_flood_is_cut_at_the_cap_with_a_marker() {
    let ex = ex().await;
    let outcome = ex
        .run("const line = 'x'.repeat(99); for (let i = 0; i < 100000; i++) console.log(line); return 'flooded'")
        .await;
    assert_eq!(ok_value(&outcome), json!("flooded"));
    assert_eq!(outcome.console.len(), 64 * 1024);
    assert_eq!(outcome.console_dropped_bytes, 100_000 * 100 - 64 * 1024);
    let text = outcome.agent_text();
    assert!(
        text.ends_with(&format!("\n[console output cut here: {} more bytes were dropped]", 100_000 * 100 - 64 * 1024)),
        "{}",
        &text[text.len() - 200..]
    );
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn a_huge_return_value_hits_the_result_limit() {
    let ex = ex().await;
    let outcome = ex.run("return 'x'.repeat(10 * 1024 * 1024)").await;
    assert_eq!(outcome.kind, OutcomeKind::ResultTooLarge { limit_bytes: 4 * MIB, bytes: 10 * 1024 * 1024 + 2 });
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn the_wall_clock_limit_kills_the_worker() {
    let ex =
        executor_with(LaunchMode::Template, fast_limits().with_wall_clock(Duration::from_millis(400)), test_catalog())
            .await;
    let started = std::time::Instant::now();
    let outcome = ex.run("await tools.slow.wait({ ms: 5000 }); return 'late'").await;
    assert_eq!(outcome.kind, OutcomeKind::WallClockLimit { limit_ms: 400 });
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(outcome.agent_text(), "Wall-clock limit: the program ran for more than 400 ms in all and was stopped.");
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn limits_are_per_call() {
    let ex = ex().await;
    let tight = fast_limits().with_cpu_step(Duration::from_millis(100));
    assert_eq!(
        ex.run(codemode::Program::new("while (true) {}").limits(tight)).await.kind,
        OutcomeKind::CpuLimit { limit_ms: 100 }
    );
    // A generous step: filling 128 MiB must hit the memory limit first, even on a busy machine.
    let bigger = fast_limits().with_memory_bytes(128 * MIB).with_cpu_step(Duration::from_secs(20));
    assert_eq!(
        ex.run(codemode::Program::new("const a = []; while (true) a.push(new Array(1e5).fill(1));").limits(bigger))
            .await
            .kind,
        OutcomeKind::MemoryLimit { limit_bytes: 128 * MIB }
    );
    // 100 MiB of live data fits in 128 MiB but not in 64 MiB.
    let code = "const a = []; for (let i = 0; i < 40; i++) a.push(new Array(1e5).fill(i + 0.5)); return a.length";
    assert_eq!(ok_value(&ex.run(codemode::Program::new(code).limits(bigger)).await), json!(40));
    let bad = Limits::default().with_memory_bytes(1);
    assert!(matches!(ex.run(codemode::Program::new("1").limits(bad)).await.kind, OutcomeKind::Internal { .. }));
}

#[tokio::test]
async fn too_many_calls_in_flight_reject_the_extra_ones() {
    let mut limits = fast_limits();
    limits.tool_calls_in_flight = 5;
    let ex = executor_with(LaunchMode::Template, limits, test_catalog()).await;
    let value = ok_value(&ex.run("const r = await Promise.allSettled(Array.from({ length: 8 }, () => tools.slow.wait({ ms: 300 }))); return r.map((x) => x.status === 'fulfilled' ? 'ok' : x.reason.message)").await);
    let rejected: Vec<_> = value.as_array().unwrap().iter().filter(|v| *v != "ok").collect();
    assert_eq!(rejected.len(), 3);
    assert_eq!(rejected[0], "too many tool calls in flight: the limit is 5; await some before starting more");
}

#[tokio::test]
async fn cancelling_a_program_stops_it_and_its_tool_calls() {
    // A tool that says when it starts, and how it learns that its call was given up: its
    // future is dropped (an in-process tool stops there) and its token fires (work it
    // handed to another task stops there).
    struct OnDrop(tokio::sync::mpsc::UnboundedSender<&'static str>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            let _ = self.0.send("dropped");
        }
    }
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let mut catalog = test_catalog();
    catalog
        .add(
            "watch",
            codemode::Tool::from_fn(def("wait", None), move |_, ctx| {
                let (started, seen) = (started_tx.clone(), seen_tx.clone());
                async move {
                    let token = ctx.cancel.clone();
                    let watcher = seen.clone();
                    tokio::spawn(async move {
                        token.cancelled().await;
                        let _ = watcher.send("token");
                    });
                    let _guard = OnDrop(seen);
                    let _ = started.send(());
                    std::future::pending::<codemode::ToolResult>().await
                }
            }),
        )
        .unwrap();
    let ex = std::sync::Arc::new(executor_with(LaunchMode::Template, fast_limits(), catalog).await);
    let token = tokio_util::sync::CancellationToken::new();
    let run = {
        let (ex, token) = (ex.clone(), token.clone());
        tokio::spawn(async move {
            ex.run(codemode::Program::new("await tools.watch.wait({})").limits(fast_limits()).cancel(token)).await
        })
    };
    tokio::time::timeout(Duration::from_secs(10), started.recv()).await.expect("the tool call starts").unwrap();
    token.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(3), run).await.expect("cancel is prompt").unwrap();
    assert_eq!(error_of(&outcome), ("Cancelled".into(), "the program was cancelled".into()));
    let mut signals = Vec::new();
    for _ in 0..2 {
        signals.push(
            tokio::time::timeout(Duration::from_secs(3), seen.recv())
                .await
                .expect("the tool saw its call given up")
                .unwrap(),
        );
    }
    signals.sort_unstable();
    assert_eq!(signals, ["dropped", "token"]);
    assert_healthy(&ex).await;
}

/// Warm workers are locked down for the executor's default limits before any program
/// arrives. A program with other limits never runs in one: it gets a fresh worker set up
/// for its own (filling 80 MiB or more fails under its 64 MiB although the warm workers
/// allow 256 MiB), and a program with the default limits takes a warm worker.
#[tokio::test]
async fn a_program_with_other_limits_never_runs_in_a_warm_worker() {
    let ex = executor_with(LaunchMode::Template, Limits::default(), test_catalog()).await;
    let size = codemode::launcher::default_warm_workers();
    assert!(eventually(Duration::from_secs(10), || ex.warm_workers().len() == size).await, "the pool filled");
    let warm = ex.warm_workers();
    // Each waits, prepared: its step watchdog runs beside the thread that will run the
    // program (a worker that could not prepare would have exited).
    let prepared = |pid: i32| status_field(pid, "Threads") == "2";
    assert!(eventually(Duration::from_secs(10), || warm.iter().all(|&pid| prepared(pid))).await, "{warm:?}");
    let fill = "const a = []; for (let i = 0; i < 10; i++) a.push(new Array(1e6).fill(i)); return a.length";
    let small = Limits::default().with_memory_bytes(64 * MIB);
    let fresh = ex.run(codemode::Program::new(fill).limits(small)).await;
    assert_eq!(fresh.kind, OutcomeKind::MemoryLimit { limit_bytes: 64 * MIB });
    assert_eq!(ex.warm_workers(), warm, "the 64 MiB program took no warm worker");
    // Its phases say so: a fresh worker prepares after the program's call.
    let phases = fresh.phases.expect("a worker that ran the program reports its phases");
    assert!(phases.worker_not_ready > Duration::ZERO && phases.worker_not_ready <= phases.to_worker, "{phases:?}");
    let outcome = ex.run(fill).await;
    assert_eq!(ok_value(&outcome), json!(10));
    assert!(!ex.warm_workers().contains(&warm[0]), "the default program took the first warm worker");
    let phases = outcome.phases.expect("a worker that ran the program reports its phases");
    assert_eq!(phases.worker_not_ready, Duration::ZERO, "the warm worker was waiting for its program: {phases:?}");
    assert!(eventually(Duration::from_secs(10), || ex.warm_workers().len() == size).await, "the pool refilled");
}

/// A program that arrives at a quiet host leaves the rest of the pool waiting and has
/// its replacement forked once it ends, not while it runs (the refill would take a core
/// from it); the pool is full again after.
#[tokio::test]
async fn a_program_arriving_at_a_quiet_host_is_replaced_after_it_ends() {
    let ex = std::sync::Arc::new(executor_with(LaunchMode::Template, Limits::default(), test_catalog()).await);
    let size = codemode::launcher::default_warm_workers();
    assert!(eventually(Duration::from_secs(10), || ex.warm_workers().len() == size).await, "the pool filled");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let warm = ex.warm_workers();
    let running = {
        let ex = ex.clone();
        tokio::spawn(async move { ex.run("await tools.slow.wait({ ms: 1000 }); return 'done'").await })
    };
    assert!(
        eventually(Duration::from_secs(5), || ex.warm_workers() == warm[1..]).await,
        "the program took the oldest warm worker"
    );
    // Long enough for a refill (a fork and a lockdown take a few milliseconds).
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(ex.warm_workers(), warm[1..], "no replacement was forked while the program ran");
    assert_eq!(ok_value(&running.await.unwrap()), json!("done"));
    assert!(
        eventually(Duration::from_secs(10), || ex.warm_workers().len() == size).await,
        "the pool refilled after the program"
    );
    assert!(!ex.warm_workers().contains(&warm[0]));
}

/// The step limit counts the program's CPU time: time blocked in `Atomics.wait` counts
/// too (it is the one way to block inside JavaScript), so a loop of short waits still
/// ends at the step limit, and a long wait ends there as well.
#[tokio::test]
async fn time_blocked_in_atomics_wait_counts_towards_the_step() {
    let ex = ex().await;
    let step = fast_limits().with_cpu_step(Duration::from_millis(300));
    for code in [
        "const cell = new Int32Array(new SharedArrayBuffer(4)); while (true) Atomics.wait(cell, 0, 0, 20);",
        "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000); return 'woke'",
    ] {
        let outcome = ex.run(codemode::Program::new(code).limits(step)).await;
        assert_eq!(outcome.kind, OutcomeKind::CpuLimit { limit_ms: 300 }, "{code}");
    }
    // A wait that ends by its timeout returns "timed-out" to the program, as the language says.
    let outcome = ex.run("return Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)").await;
    assert_eq!(ok_value(&outcome), json!("timed-out"));
    assert_healthy(&ex).await;
}

/// An answer larger than the program's whole budget of tool data is never delivered:
/// the call rejects, saying how large the answer was and what to do, and the program
/// goes on.
#[tokio::test]
async fn an_answer_over_the_tool_data_budget_is_replaced_by_a_rejection() {
    use codemode::{Catalog, Tool, ToolDefinition, ToolResult};
    let mut catalog = Catalog::new();
    catalog
        .add(
            "big",
            Tool::from_fn(
                ToolDefinition::new("text", "answers 2 MiB of text", json!({"type": "object"})),
                |_, _| async { ToolResult::text("x".repeat(2 * 1024 * 1024)) },
            ),
        )
        .unwrap();
    let limits = Limits::default().with_tool_bytes_in_flight(MIB);
    let ex = executor_with(LaunchMode::Template, limits, catalog).await;
    let outcome = ex.run("try { await tools.big.text({}); return 'delivered' } catch (e) { return e.message }").await;
    assert_eq!(
        ok_value(&outcome),
        json!("the tool's answer is 2.0 MiB of JSON, more than the 1.0 MiB of tool data a program may have in flight; ask the tool for less (filter, page or summarise)")
    );
}
