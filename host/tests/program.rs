//! What a program can do: both forms, the global scope, tools and their results,
//! aliases, rejections, concurrency, errors and serialisation. Runs the real worker.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use codemode::{Catalog, LaunchMode, Limits, OutcomeKind, Tool, ToolResult};
use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn body_form_from_the_mission() {
    let ex = executor_with(LaunchMode::Template, Limits::default(), codemode::examples::example_catalog()).await;
    let outcome = ex
        .run(r#"const [a, b] = await Promise.all([tools.weather.forecast({ city: "Oslo" }), tools.weather.forecast({ city: "Rome" })]); console.log("both answered"); return { oslo: a, rome: b };"#)
        .await;
    let value = ok_value(&outcome);
    assert_eq!(value["oslo"]["city"], "Oslo");
    assert_eq!(value["rome"]["city"], "Rome");
    assert!(
        value["oslo"]["high_c"].is_number(),
        "forecast has an outputSchema, so the call resolves to structuredContent: {value}"
    );
    assert_eq!(outcome.console, "both answered\n");
    assert_eq!(outcome.tool_calls, 2);
}

#[tokio::test]
async fn expression_form_is_called_with_tools() {
    let ex = executor().await;
    let outcome = ex.run("async (tools) => (await tools.math.add({ a: 1, b: 2 }))").await;
    assert_eq!(outcome.kind, OutcomeKind::Ok { value: Some("\"3\"".into()) });
    assert_eq!(outcome.agent_text(), "3");
    // A plain expression is its own value; so is a body's last expression when the
    // body has no `return` of its own (see program_forms.rs).
    assert_eq!(ok_value(&ex.run("[1, 2].map((x) => x * 2)").await), json!([2, 4]));
    assert_eq!(ok_value(&ex.run("const x = 1; x + 1;").await), json!(2));
    assert_eq!(ex.run("const x = 1; if (x) { x + 1; }").await.kind, OutcomeKind::Ok { value: None });
    // In the body form a returned function is an error, not a call.
    let (name, message) = error_of(&ex.run("return () => 1").await);
    assert_eq!(
        (name.as_str(), message.as_str()),
        (
            "TypeError",
            "the program returned a function; return data (an object, array, string, number, boolean or null) instead"
        )
    );
}

#[tokio::test]
async fn global_scope_is_the_language_tools_and_console_only() {
    let ex = executor().await;
    let value = ok_value(&ex.run("return Reflect.ownKeys(globalThis).map(String).sort()").await);
    let mut expected = vec![
        "AggregateError",
        "Array",
        "ArrayBuffer",
        "AsyncDisposableStack",
        "Atomics",
        "BigInt",
        "BigInt64Array",
        "BigUint64Array",
        "Boolean",
        "DataView",
        "Date",
        "DisposableStack",
        "Error",
        "EvalError",
        "FinalizationRegistry",
        "Float16Array",
        "Float32Array",
        "Float64Array",
        "Function",
        "Infinity",
        "Int16Array",
        "Int32Array",
        "Int8Array",
        "Intl",
        "Iterator",
        "JSON",
        "Map",
        "Math",
        "NaN",
        "Number",
        "Object",
        "Promise",
        "Proxy",
        "RangeError",
        "ReferenceError",
        "Reflect",
        "RegExp",
        "Set",
        "SharedArrayBuffer",
        "String",
        "SuppressedError",
        "Symbol",
        "SyntaxError",
        "Temporal",
        "TypeError",
        "URIError",
        "Uint16Array",
        "Uint32Array",
        "Uint8Array",
        "Uint8ClampedArray",
        "WeakMap",
        "WeakRef",
        "WeakSet",
        "console",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "eval",
        "globalThis",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "tools",
        "undefined",
        "unescape",
    ];
    expected.sort();
    assert_eq!(value, json!(expected));
    let probes = ok_value(
        &ex.run(
            "return [typeof Deno, typeof require, typeof setTimeout, typeof setInterval, typeof queueMicrotask, typeof fetch, \
             typeof WebAssembly, typeof process, typeof __bootstrap, typeof performance, typeof gc, \
             Object.getPrototypeOf(globalThis) === Object.prototype]",
        )
        .await,
    );
    assert_eq!(
        probes,
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            true
        ])
    );
    let (name, _) = error_of(&ex.run("await import('data:text/javascript,export default 1')").await);
    assert!(!name.is_empty(), "dynamic import must fail");
}

#[tokio::test]
async fn temporal_works_in_workers_forked_without_the_engines_bytecode_cache() {
    // The template keeps the engine's cached Temporal bytecode out of its forks
    // (sandbox_worker::fork_exclusions); Temporal in a forked worker must not need it.
    let ex = executor_with(LaunchMode::Template, Limits::default(), codemode::examples::example_catalog()).await;
    for _ in 0..3 {
        let outcome = ex
            .run(r#"const d = Temporal.PlainDate.from("2026-12-04").add({ days: 28 }); return [d.toString(), d.dayOfWeek, Temporal.Duration.from({ hours: 25 }).round({ largestUnit: "day", relativeTo: d }).days];"#)
            .await;
        assert_eq!(ok_value(&outcome), json!(["2027-01-01", 5, 1]));
    }
}

#[tokio::test]
async fn names_with_other_characters_are_reachable_with_underscores() {
    let ex = executor().await;
    let value = ok_value(&ex.run(r#"return [await tools.my_db.search_rows({ q: "a" }), await tools["my-db"]["search-rows"]({ q: "b" }), Object.keys(tools.my_db)]"#).await);
    assert_eq!(value, json!(["rows for a", "rows for b", ["search-rows"]]));
}

#[tokio::test]
async fn mcp_tool_names_with_dots_are_reachable_as_written_and_with_underscores() {
    let tool = Tool::from_fn(def("admin.users.list", None), |_, _| async { ToolResult::text("users") });
    let ex = executor_with(LaunchMode::Template, Limits::default(), Catalog::new().with("gw", tool).unwrap()).await;
    let value =
        ok_value(&ex.run(r#"return [await tools.gw["admin.users.list"](), await tools.gw.admin_users_list()]"#).await);
    assert_eq!(value, json!(["users", "users"]));
}

#[tokio::test]
async fn a_tool_that_needs_approval_never_runs_without_someone_to_ask() {
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&ran);
    let mut definition = def("delete", None);
    definition.requires_approval = codemode::tool::Approval::Always;
    let tool = Tool::from_fn(definition, move |_, _| {
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        async { ToolResult::text("deleted") }
    });
    let ex = executor_with(LaunchMode::Template, Limits::default(), Catalog::new().with("notes", tool).unwrap()).await;
    let value = ok_value(&ex.run("try { await tools.notes.delete() } catch (e) { return e.message }").await);
    assert_eq!(
        value,
        json!("tools.notes.delete needs a person's approval (for each call), and nobody can be asked here: run the program through the MCP server (codemode mcp or codemode serve), whose client asks the person")
    );
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "the tool must not run");
}

#[tokio::test]
async fn a_real_name_wins_over_another_names_underscore_alias() {
    let tool = |name: &str, answer: &'static str| {
        Tool::from_fn(def(name, None), move |_, _| async move { ToolResult::text(answer) })
    };
    let catalog = Catalog::new()
        .with("my-db", tool("get-x", "dash plugin, dash tool"))
        .unwrap()
        .with("my-db", tool("get_x", "dash plugin, underscore tool"))
        .unwrap()
        .with("my_db", tool("get-x", "underscore plugin"))
        .unwrap();
    let ex = executor_with(LaunchMode::Template, Limits::default(), catalog).await;
    let value = ok_value(
        &ex.run(r#"return [await tools["my-db"]["get-x"](), await tools["my-db"].get_x(), await tools.my_db.get_x()]"#)
            .await,
    );
    assert_eq!(value, json!(["dash plugin, dash tool", "dash plugin, underscore tool", "underscore plugin"]));
}

#[tokio::test]
async fn results_resolve_to_structured_content_text_or_the_content_list() {
    let ex = executor().await;
    let value = ok_value(&ex.run(r#"return [await tools.echo.structured({ x: 1 }), await tools.echo.echo({ x: 1 }), await tools.echo.picture({})]"#).await);
    assert_eq!(
        value,
        json!([
            { "got": { "x": 1 } },
            "{\"x\":1}",
            [{ "type": "text", "text": "a red dot" }, { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }]
        ])
    );
}

#[tokio::test]
async fn a_failed_call_rejects_with_an_error_carrying_the_tool_text() {
    let ex = executor().await;
    let value = ok_value(
        &ex.run(r#"try { await tools.echo.fail({ city: "Atlantis" }); return "resolved"; } catch (e) { return [e instanceof Error, e.message]; }"#).await,
    );
    assert_eq!(value, json!([true, "no such city: Atlantis"]));
    let outcome = ex.run(r#"await tools.echo.fail({ city: "Nowhere" })"#).await;
    assert_eq!(error_of(&outcome), ("Error".into(), "no such city: Nowhere".into()));
    assert_eq!(
        ok_value(&ex.run("try { await tools.echo.panic({}) } catch (e) { return e.message }").await),
        json!("tool echo.panic crashed")
    );
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn unknown_tools_reject_naming_the_closest_ones() {
    let ex = executor().await;
    let msg = |code: &'static str| {
        let ex = &ex;
        async move { ok_value(&ex.run(code).await) }
    };
    assert_eq!(
        msg("try { await tools.math.ad({}) } catch (e) { return e.message }").await,
        json!("Unknown tool tools.math.ad. Did you mean tools.math.add?")
    );
    let message = msg("try { await tools.mth.add({}) } catch (e) { return e.message }").await;
    assert!(
        message
            .as_str()
            .unwrap()
            .starts_with("Unknown tool tools.mth.add: there is no plugin mth. Did you mean tools.math.add, "),
        "{message}"
    );
    // Protocol lookups must not look like tools: awaiting a plugin object works.
    assert_eq!(msg("const m = await tools.math; return typeof m.then").await, json!("undefined"));
}

#[tokio::test]
async fn inputs_that_are_not_json_reject_before_reaching_the_host() {
    let ex = executor().await;
    let value = ok_value(&ex.run("const a = {}; a.a = a; try { await tools.echo.echo(a) } catch (e) { return [e.name, e.message.startsWith('tools.echo.echo: the input cannot be sent as JSON')] }").await);
    assert_eq!(value, json!(["TypeError", true]));
    let outcome = ex.run("return await tools.echo.echo()").await;
    assert_eq!(ok_value(&outcome), json!("{}"), "a missing input is an empty object");
}

#[tokio::test]
async fn calls_made_together_run_together() {
    let ex = executor().await;
    let started = Instant::now();
    let outcome = ex
        .run("return (await Promise.all(Array.from({ length: 10 }, () => tools.slow.wait({ ms: 200 })))).length")
        .await;
    let took = started.elapsed();
    assert_eq!(ok_value(&outcome), json!(10));
    assert_eq!(outcome.tool_calls, 10);
    assert!(took < Duration::from_millis(1500), "10 concurrent 200 ms calls took {took:?}; they ran one after another");
}

#[tokio::test]
async fn syntax_errors_name_line_and_column() {
    let ex = executor().await;
    match ex.run("const a = 1;\nconst b = ;\nreturn a").await.kind {
        OutcomeKind::Error { name, line, column, .. } => {
            assert_eq!(name, "SyntaxError");
            assert_eq!((line, column), (Some(2), Some(11)));
        }
        other => panic!("{other:?}"),
    }
    match ex.run("return )").await.kind {
        OutcomeKind::Error { name, line, column, .. } => {
            assert_eq!(name, "SyntaxError");
            assert_eq!((line, column), (Some(1), Some(8)), "line-1 columns are the program's own, not the wrapper's");
        }
        other => panic!("{other:?}"),
    }
    // The expression form: its wrapper is longer, and takes nothing from the columns
    // either (the report had them 8 too far right).
    for (code, expected) in
        [("async (tools) => null.f", (Some(1), Some(23))), ("tools.math.add({ a: 1, b: })", (Some(1), Some(27)))]
    {
        match ex.run(code).await.kind {
            OutcomeKind::Error { line, column, stack, .. } => {
                assert_eq!((line, column), expected, "{code}");
                if let Some(stack) = stack {
                    assert!(stack.contains(&format!("program.js:1:{}", expected.1.unwrap())), "{code}: {stack}");
                }
            }
            other => panic!("{code}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn thrown_errors_keep_their_name_message_and_program_stack() {
    let ex = executor().await;
    let outcome =
        ex.run("function inner() { throw new TypeError('bad input') }\nfunction outer() { inner() }\nouter()").await;
    match &outcome.kind {
        OutcomeKind::Error { name, message, stack, line, .. } => {
            assert_eq!((name.as_str(), message.as_str(), *line), ("TypeError", "bad input", Some(1)));
            let stack = stack.as_deref().unwrap_or_default();
            assert!(stack.contains("at inner (program.js:1:"), "{stack}");
            assert!(stack.contains("at outer (program.js:2:"), "{stack}");
            assert!(!stack.contains("codemode:"), "internal frames leak into the stack: {stack}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(error_of(&ex.run("throw 'boom'").await), (String::new(), "boom".into()));
}

#[tokio::test]
async fn unserialisable_results_get_a_clear_error() {
    let ex = executor().await;
    let cases = [
        ("const a = {}; a.self = a; return a", "the returned value cannot be written as JSON: circular reference"),
        ("return { n: 10n }", "the returned value cannot be written as JSON: BigInt are forbidden in JSON.stringify"),
        (
            "return { f() {} }",
            "the returned value cannot be written as JSON: a function at key \"f\" cannot be written as JSON",
        ),
        ("return Symbol('s')", "the program returned a symbol; return data instead"),
    ];
    for (code, expected) in cases {
        assert_eq!(error_of(&ex.run(code).await), ("TypeError".into(), expected.into()), "{code}");
    }
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn console_methods_are_kept_in_order_with_levels() {
    let ex = executor().await;
    let outcome = ex.run("console.log('a', 1, { b: [true, null] }); console.warn('careful'); console.error(new Error('bad')); console.info('i'); console.debug('d'); return 'done'").await;
    assert_eq!(outcome.agent_text(), "done\n\nConsole output:\na 1 { b: [ true, null ] }\n[warn] careful\n[error] Error: bad\n    at program.js:1:82\ni\nd");
}

#[tokio::test]
async fn each_program_gets_a_fresh_runtime() {
    let ex = executor().await;
    assert_eq!(ok_value(&ex.run("globalThis.leak = 42; Array.prototype.evil = 1; return 1").await), json!(1));
    assert_eq!(ok_value(&ex.run("return [typeof leak, [].evil]").await), json!(["undefined", null]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_two_programs_share_a_random_sequence() {
    // Every worker is a fork of one template: its generators are reseeded per program,
    // before the program's first instruction (also code that runs while it compiles).
    let ex = std::sync::Arc::new(executor().await);
    let draw = "return Array.from({ length: 4 }, () => Math.random())";
    let mut seen: Vec<Value> = Vec::new();
    // In a row (warm workers), at once, with other limits (fresh forks), on the spawn
    // path, and drawn while the program compiles.
    for _ in 0..4 {
        seen.push(ok_value(&ex.run(draw).await));
    }
    let at_once = futures::future::join_all((0..12).map(|_| {
        let ex = std::sync::Arc::clone(&ex);
        async move { ok_value(&ex.run(draw).await) }
    }))
    .await;
    seen.extend(at_once);
    let other_limits = Limits::default().with_memory_bytes(200 * codemode::limits::MIB);
    for _ in 0..3 {
        seen.push(ok_value(&ex.run(codemode::Program::new(draw).limits(other_limits)).await));
    }
    let spawned = executor_with(LaunchMode::Spawn, Limits::default(), test_catalog()).await;
    seen.push(ok_value(&spawned.run(draw).await));
    let compiling = "}); globalThis.early = Math.random(); (async function () { return [early]";
    seen.push(ok_value(&ex.run(compiling).await));
    seen.push(ok_value(&ex.run(compiling).await));
    for (i, a) in seen.iter().enumerate() {
        let numbers = a.as_array().unwrap();
        assert!(numbers.iter().all(|n| (0.0..1.0).contains(&n.as_f64().unwrap())), "{a}");
        for b in &seen[i + 1..] {
            assert_ne!(a, b, "two programs drew the same sequence");
        }
    }
}

#[tokio::test]
async fn the_spawn_path_runs_the_same_programs() {
    let ex = executor_with(LaunchMode::Spawn, Limits::default(), codemode::examples::example_catalog()).await;
    assert_eq!(ex.launch_mode(), LaunchMode::Spawn);
    assert!(ex.template_pid().await.is_none());
    let outcome = ex.run(r#"const [a, b] = await Promise.all([tools.weather.forecast({ city: "Oslo" }), tools.weather.forecast({ city: "Rome" })]); console.log("both answered"); return { oslo: a.city, rome: b.city };"#).await;
    assert_eq!(outcome.agent_text(), "{\"oslo\":\"Oslo\",\"rome\":\"Rome\"}\n\nConsole output:\nboth answered");
    assert_eq!(ex.run("async (tools) => (await tools.math.add({ a: 1, b: 2 }))").await.agent_text(), "3");
    let limits = Limits::default().with_cpu_step(Duration::from_millis(300));
    assert_eq!(
        ex.run(codemode::Program::new("while (true) {}").limits(limits)).await.kind,
        OutcomeKind::CpuLimit { limit_ms: 300 }
    );
    let limits = Limits::default().with_memory_bytes(64 * codemode::limits::MIB);
    assert_eq!(
        ex.run(codemode::Program::new("const a = []; while (true) a.push(new Array(1e5).fill(1));").limits(limits))
            .await
            .kind,
        OutcomeKind::MemoryLimit { limit_bytes: 64 << 20 }
    );
}

#[tokio::test]
async fn auto_mode_picks_the_template_for_quickjs() {
    let ex = executor_with(LaunchMode::Auto, Limits::default(), test_catalog()).await;
    assert_eq!(ex.launch_mode(), LaunchMode::Template);
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn the_catalog_can_change_between_programs() {
    let ex = executor().await;
    let mut catalog = test_catalog();
    catalog
        .add("extra", codemode::Tool::from_fn(def("hello", None), |_, _| async { codemode::ToolResult::text("hi") }))
        .unwrap();
    ex.set_catalog(catalog);
    assert_eq!(ok_value(&ex.run("return await tools.extra.hello()").await), json!("hi"));
}

#[tokio::test]
async fn a_program_searches_the_catalog_then_calls_what_it_found() {
    let ex = executor_with(LaunchMode::Template, Limits::default(), codemode::examples::example_catalog()).await;
    let outcome = ex
        .run(
            r#"const found = await tools.$search("will it rain in Oslo tomorrow", { limit: 1 });
               const { plugin, tool, call, declaration } = found[0];
               const forecast = await tools[plugin][tool]({ city: "Oslo" });
               let badQuery, badLimit;
               try { await tools.$search(5); } catch (e) { badQuery = `${e.name}: ${e.message}`; }
               try { await tools.$search("sum", { limit: 500 }); } catch (e) { badLimit = e.message; }
               const sums = await tools.$search("add two numbers", { plugin: "math" });
               const either = await tools.$search(["sum of numbers", "weather forecast"], { limit: 2 });
               let badPhrasing, tooMany;
               try { await tools.$search(["sum", null]); } catch (e) { badPhrasing = `${e.name}: ${e.message}`; }
               try { await tools.$search(Array(9).fill("sum")); } catch (e) { tooMany = e.message; }
               return { count: found.length, call, declared: declaration.includes("city: string"), city: forecast.city, badQuery, badLimit,
                        sums: sums.map((h) => h.call), plugins: Object.keys(tools), ranker: found[0].ranker,
                        either: either.map((h) => h.call).sort(), badPhrasing, tooMany };"#,
        )
        .await;
    let value = ok_value(&outcome);
    assert_eq!(value["count"], 1);
    assert_eq!(value["call"], "tools.weather.forecast");
    assert_eq!(value["declared"], true, "{value}");
    assert_eq!(value["city"], "Oslo");
    assert_eq!(
        value["badQuery"],
        "TypeError: tools.$search: the query must be a string or an array of strings, not number; call it as tools.$search(\"what the tool should do\"), tools.$search([\"one phrasing\", \"another\"]) or tools.$search(query, { plugin: \"name\", limit: 10 })"
    );
    assert_eq!(
        value["badPhrasing"],
        "TypeError: tools.$search: phrasing 1 of the query must be a string, not null; call it as tools.$search(\"what the tool should do\"), tools.$search([\"one phrasing\", \"another\"]) or tools.$search(query, { plugin: \"name\", limit: 10 })"
    );
    assert_eq!(value["tooMany"], "tools.$search: give one phrasing or up to 8 (an array of strings), not 9");
    assert_eq!(value["either"], json!(["tools.math.add", "tools.weather.forecast"]), "one hit for each phrasing");
    assert_eq!(value["ranker"], "BM25", "no search model given to this executor");
    assert_eq!(value["badLimit"], "tools.$search: limit must be between 1 and 50, not 500");
    assert_eq!(value["sums"], json!(["tools.math.add"]));
    assert_eq!(value["plugins"], json!(["math", "weather"]), "$search is not a plugin");
}

/// A call that fails at once, never awaited: its answer races the program's end (it
/// may reach the worker before the outcome leaves, or find the worker gone), and the
/// outcome names it every time.
#[tokio::test]
async fn a_call_answered_as_the_program_ends_is_still_named() {
    let fail = Tool::from_fn(def("fail", None), |_, _| async { ToolResult::error("refused at once") });
    let ok = Tool::from_fn(def("ok", None), |_, _| async { ToolResult::text("fine") });
    let catalog = Catalog::new().with("quick", fail).unwrap().with("quick", ok).unwrap();
    let ex = executor_with(LaunchMode::Template, Limits::default(), catalog).await;
    for round in 0..40 {
        let outcome = ex.run(r#"tools.quick.fail({}); tools.quick.ok({}); return "sent";"#).await;
        assert_eq!(outcome.kind, OutcomeKind::Ok { value: Some("\"sent\"".into()) }, "round {round}");
        let calls: Vec<(String, Option<String>)> =
            outcome.unawaited_calls.iter().map(|c| (c.call.clone(), c.failure.clone())).collect();
        assert_eq!(
            calls,
            [
                ("tools.quick.fail".to_string(), Some("refused at once".to_string())),
                ("tools.quick.ok".to_string(), None)
            ],
            "round {round}: {}",
            outcome.agent_text()
        );
    }
    // One the program awaited, answered at once, is not named.
    let outcome = ex.run(r#"await tools.quick.ok({}); return "awaited";"#).await;
    assert!(outcome.unawaited_calls.is_empty(), "{}", outcome.agent_text());
}

#[tokio::test]
async fn calls_never_awaited_run_to_their_end_and_are_named() {
    let finished = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let done = std::sync::Arc::clone(&finished);
    let slow = Tool::from_fn(def("sleep", None), move |input, _| {
        let done = std::sync::Arc::clone(&done);
        async move {
            tokio::time::sleep(Duration::from_millis(input["ms"].as_u64().unwrap_or(0))).await;
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            ToolResult::text("slept")
        }
    });
    let fail = Tool::from_fn(def("fail", None), |_, _| async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        ToolResult::error("the disk is full")
    });
    let catalog = Catalog::new().with("slow", slow).unwrap().with("slow", fail).unwrap();
    let limits = Limits { wall_clock: Duration::from_secs(2), ..Limits::default() };
    let ex = executor_with(LaunchMode::Template, limits, catalog).await;

    let outcome = ex
        .run(r#"tools.slow.sleep({ ms: 300 }); tools.slow.fail({}); await tools.slow.sleep({ ms: 1 }); return "done";"#)
        .await;
    assert_eq!(outcome.kind, OutcomeKind::Ok { value: Some("\"done\"".into()) });
    assert_eq!(finished.load(std::sync::atomic::Ordering::SeqCst), 2, "the call never awaited still ran to its end");
    let calls: Vec<(String, Option<String>, bool)> =
        outcome.unawaited_calls.iter().map(|c| (c.call.clone(), c.failure.clone(), c.stopped)).collect();
    assert_eq!(
        calls,
        [
            ("tools.slow.fail".to_string(), Some("the disk is full".to_string()), false),
            ("tools.slow.sleep".to_string(), None, false)
        ]
    );
    assert_eq!(
        outcome.agent_text(),
        "done\n\n[2 tool calls were never awaited: the program returned while they were running; 1 succeeded; 1 failed: tools.slow.fail: the disk is full. Await every call whose result matters.]"
    );

    // A call still running at the wall-clock limit is stopped, and said to be.
    let outcome = ex.run(r#"tools.slow.sleep({ ms: 60000 }); return 1;"#).await;
    assert_eq!(outcome.kind, OutcomeKind::Ok { value: Some("1".into()) });
    assert_eq!(outcome.unawaited_calls.len(), 1);
    assert!(outcome.unawaited_calls[0].stopped && outcome.unawaited_calls[0].call == "tools.slow.sleep");
    assert!(
        outcome.agent_text().contains("1 stopped unfinished at the wall-clock limit: tools.slow.sleep"),
        "{}",
        outcome.agent_text()
    );

    // Awaited calls are not mentioned.
    assert!(ex.run(r#"return await tools.slow.sleep({ ms: 1 });"#).await.unawaited_calls.is_empty());
}
