//! The composition root (`codemode::app`) built the way `codemode run` builds it, from
//! a configuration file, without spawning the binary: its limits reach the executor,
//! its example tools the catalog, and a program runs through both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use codemode::app::{App, AppOptions};
use codemode::config::Config;
use codemode::limits::{LimitOverrides, LimitSource, MIB};
use codemode::OutcomeKind;

/// A configuration file offering the example tools, with two limits of its own.
fn example_config() -> Config {
    let dir = std::env::temp_dir().join(format!("codemode-app-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("codemode.toml");
    std::fs::write(&path, "example_tools = true\n\n[limits]\nmemory_mib = 96\ncpu_step_ms = 5000\n").unwrap();
    Config::load(&path).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_app_runs_a_program_with_the_configurations_tools_and_limits() {
    let config = example_config();
    // The command line's overrides go over the file's limits, as `codemode run` does.
    let flags = LimitOverrides { wall_clock_ms: Some(60_000), ..LimitOverrides::default() };
    let limits = flags.apply(config.limits(), LimitSource::CommandLine).unwrap();
    let app = App::from_config(&config, AppOptions { limits, warm_workers: 0, ..AppOptions::of(&config) })
        .await
        .expect("the app starts (is sandbox-worker built? scripts/test builds it)");

    let used = app.executor.limits();
    assert_eq!(used.memory_bytes, 96 * MIB);
    assert_eq!(used.cpu_step, Duration::from_millis(5000));
    assert_eq!(used.wall_clock, Duration::from_secs(60));
    assert_eq!(used.console_bytes, codemode::Limits::default().console_bytes);
    assert!(app.problems.is_empty(), "{:?}", app.problems.iter().map(|p| p.describe()).collect::<Vec<_>>());

    let outcome = app
        .executor
        .run(
            "const sum = await tools.math.add({ a: 2, b: 3 });\n\
             const f = await tools.weather.forecast({ city: 'Oslo' });\n\
             return { sum, city: f.city };",
        )
        .await;
    assert!(matches!(outcome.kind, OutcomeKind::Ok { .. }), "{:?}", outcome.kind);
    // math.add answers with text, which a program reads as a string.
    assert_eq!(outcome.agent_text(), "{\"sum\":\"5\",\"city\":\"Oslo\"}");
    assert_eq!(outcome.tool_calls, 2);
}
