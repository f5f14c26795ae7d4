//! Generated hostile programs: every way of producing a value the engine cannot easily
//! describe (thrown values, getters, Proxies, `toJSON`, deep and cyclic structures,
//! endless conversions), used in every way a program can hand it over (thrown,
//! rejected, returned, logged, sent to a tool), in every phase of a program's life
//! (while it is compiled, synchronously, after an await, after it returned). Every
//! program must end in a named outcome: never a crashed worker, an internal error or
//! the wall clock.
//!
//! Seeded: set `CODEMODE_HOSTILE_SEED` to replay a run (the seed is printed), and
//! `CODEMODE_HOSTILE_CASES` for more random cases on top of every combination.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use codemode::{Executor, LaunchMode, Limits, OutcomeKind};
use common::*;
use futures::StreamExt;

/// Values a program can produce, each as a JavaScript expression.
const VALUES: &[(&str, &str)] = &[
    ("symbol", r#"Symbol("hostile")"#),
    ("null prototype", "Object.create(null)"),
    ("throwing toString", "({ toString() { throw Symbol('ts') } })"),
    ("recursive toString", "({ toString() { return String(this) } })"),
    ("throwing toPrimitive", "({ [Symbol.toPrimitive]() { throw Symbol('prim') } })"),
    ("throwing proxy", "new Proxy({}, { get() { throw Symbol('get') }, getPrototypeOf() { throw 1 }, ownKeys() { throw 2 }, has() { throw 3 } })"),
    ("revoked proxy", "(() => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; })()"),
    ("error with symbol cause", "new Error('caused', { cause: Symbol('cause') })"),
    ("aggregate of hostile values", "new AggregateError([Symbol(), Object.create(null), new Proxy({}, { get() { throw 1 } })], 'many')"),
    ("error with throwing getters", "(() => { const e = new TypeError('t'); Object.defineProperty(e, 'message', { get() { throw Symbol() } }); Object.defineProperty(e, 'stack', { get() { throw Symbol() } }); Object.defineProperty(e, 'name', { get() { throw Symbol() } }); return e; })()"),
    ("error subclass", "(() => { class Weird extends Error { get name() { throw Symbol() } } return new Weird('w'); })()"),
    ("throwing toJSON", "({ toJSON() { throw Symbol('json') } })"),
    ("throwing getter", "({ get x() { throw Symbol('x') } })"),
    ("cyclic", "(() => { const a = { b: [] }; a.b.push(a); return a; })()"),
    ("deep", "(() => { let a = {}; for (let i = 0; i < 20000; i++) a = { a }; return a; })()"),
    ("bigint", "10n"),
    ("function", "(function named() {})"),
    ("undefined", "undefined"),
    ("null", "null"),
    ("large string", "'x'.repeat(300000)"),
    ("endless toString", "({ toString() { for (;;) {} } })"),
];

/// How a program hands a value over. `{v}` is the value's expression.
const ACTIONS: &[(&str, &str)] = &[
    ("throw", "throw {v};"),
    ("return", "return {v};"),
    ("reject unhandled", "Promise.reject({v}); return 1;"),
    ("await a rejection", "await Promise.reject({v});"),
    ("log", "console.log({v}); console.error('x', {v}); return 2;"),
    ("tool input", "return await tools.echo.echo({v});"),
    ("cause of a throw", "throw new Error('outer', { cause: {v} });"),
    ("returned inside an object", "return { inner: {v} };"),
];

/// When the action happens.
const PHASES: &[&str] = &["compile", "sync", "after await", "after return"];

/// The program for one case.
fn program(value: &str, action: &str, phase: &str) -> String {
    let act = action.replace("{v}", value);
    match phase {
        // Code that closes the wrapper runs while the program is compiled.
        "compile" => format!(
            "}}); (() => {{ {} }})(); (async function () {{",
            act.replace("return ", "void ").replace("await ", "")
        ),
        "sync" => act,
        "after await" => format!("await tools.math.add({{ a: 1, b: 2 }});\n{act}"),
        // Runs in a microtask after the program's own body returned.
        _ => format!("Promise.resolve().then(async () => {{ {act} }}); return 'returned first';"),
    }
}

/// A tiny deterministic generator (splitmix64), so that a seed replays a run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

#[derive(Clone)]
struct Case {
    value: &'static str,
    action: &'static str,
    phase: &'static str,
    code: String,
}

fn case(value: (&'static str, &'static str), action: (&'static str, &'static str), phase: &'static str) -> Case {
    Case { value: value.0, action: action.0, phase, code: program(value.1, action.1, phase) }
}

/// Composite programs: two hostile values in one program, chained through a tool call.
fn composite(rng: &mut Rng) -> Case {
    let (first, second) = (rng.pick(VALUES), rng.pick(VALUES));
    let (act, phase) = (rng.pick(ACTIONS), rng.pick(PHASES));
    let inner = program(second.1, act.1, phase);
    let code = format!("try {{ await tools.echo.echo({}); }} catch (e) {{ console.log(e); }}\n{inner}", first.1);
    Case { value: second.0, action: act.0, phase, code }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_generated_hostile_program_ends_in_a_named_outcome() {
    let seed = std::env::var("CODEMODE_HOSTILE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    let extra: usize = std::env::var("CODEMODE_HOSTILE_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    println!("hostile programs: seed {seed} (replay with CODEMODE_HOSTILE_SEED={seed})");
    let mut rng = Rng(seed);

    let mut cases = Vec::new();
    for &value in VALUES {
        for &action in ACTIONS {
            for &phase in PHASES {
                cases.push(case(value, action, phase));
            }
        }
    }
    for _ in 0..extra {
        if rng.next().is_multiple_of(4) {
            cases.push(composite(&mut rng));
        } else {
            cases.push(case(rng.pick(VALUES), rng.pick(ACTIONS), rng.pick(PHASES)));
        }
    }
    // Shuffled, so that a slow family does not run all at once.
    for i in (1..cases.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        cases.swap(i, j);
    }

    let limits = Limits::default()
        .with_cpu_step(Duration::from_millis(300))
        .with_memory_bytes(64 << 20)
        .with_wall_clock(Duration::from_secs(20));
    let executor: Arc<Executor> = Arc::new(executor_with(LaunchMode::Template, limits, test_catalog()).await);
    let total = cases.len();
    let results: Vec<(Case, OutcomeKind)> = futures::stream::iter(cases)
        .map(|c| {
            let executor = Arc::clone(&executor);
            async move {
                let outcome = executor.run(&c.code).await;
                (c, outcome.kind)
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;

    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let mut failures = Vec::new();
    for (c, kind) in &results {
        *counts.entry(kind.name()).or_default() += 1;
        let named = matches!(
            kind,
            OutcomeKind::Ok { .. }
                | OutcomeKind::Error { .. }
                | OutcomeKind::MemoryLimit { .. }
                | OutcomeKind::CpuLimit { .. }
                | OutcomeKind::ResultTooLarge { .. }
                | OutcomeKind::Stuck
        );
        // What each action must end as, whatever the value (a limit is always a
        // possible end: a loaded machine can push a heavy case past 300 ms of CPU).
        let limit = matches!(kind, OutcomeKind::MemoryLimit { .. } | OutcomeKind::CpuLimit { .. });
        let expected = match (c.action, c.phase) {
            ("throw" | "await a rejection" | "cause of a throw", "sync" | "after await") => {
                limit || matches!(kind, OutcomeKind::Error { unhandled_rejection: false, .. })
            }
            ("reject unhandled", "sync" | "after await") => {
                limit || matches!(kind, OutcomeKind::Error { unhandled_rejection: true, .. })
            }
            _ => true,
        };
        if !named || !expected {
            failures.push(format!(
                "[{} / {} / {}] ended as {kind:?}\n--- program ---\n{}\n",
                c.value, c.action, c.phase, c.code
            ));
        }
    }
    println!("{total} hostile programs: {counts:?}");
    assert_healthy(&executor).await;
    assert!(
        failures.is_empty(),
        "seed {seed}: {} of {total} programs did not end in the expected named outcome:\n{}",
        failures.len(),
        failures.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
}
