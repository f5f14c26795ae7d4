//! `cargo bench -p codemode --bench execute`: start-up and tool-call figures.
//!
//! Prints p50 and p95 of:
//! - the whole execute of a trivial program (host API call to outcome), for the
//!   template (fork) path one after another and each arriving at a quiet host, with and
//!   without the warm pool and the sandbox, and the spawn path; the seed's two-call
//!   program arriving at a quiet host; the median of each phase of a program;
//! - the tool-call round trip with an in-process tool: measured at the host as the time
//!   between consecutive calls of a program that awaits one call after another (answer
//!   sent → JavaScript resolves → next call arrives);
//! - the wall time of a program doing a 1,000-call `Promise.all`;
//! - throughput and latency of the seed's two-call program at 1, 2, 4, 8 and 16
//!   programs in flight, with the share of CPU time left idle while programs queued;
//! - the private memory of a worker running a trivial program (its own pages, not the
//!   template's it shares), and the host's and template's RSS before and after 10,000
//!   programs;
//! - the whole execute of a 50-line program as JavaScript and as TypeScript;
//! - the plugin round trip (host → plugin → host, timed at the host for each of 1,000
//!   sequential calls) for a Python process plugin and a JavaScript plugin;
//! - a plugin's load (runtime start to tool list) with real npm packages: seed 000's
//!   Effect + zod variant over effect 3 and 4, and plico's zod 3 + ArkType + CommonJS.
//!
//! `cargo bench -p codemode --bench execute -- startup` prints only the start-up,
//! tool-call and scaling figures (about a minute), for work on the program's path;
//! `-- profile` runs only trivial programs, one after another, for 20 s (for `perf`);
//! `-- cpu` prints only the CPU each trivial program costs the machine (host, template
//! and worker, user and kernel), its worker's page faults, VMAs and pages at the end,
//! one at a time and 16 in flight.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::plugins::javascript::JavascriptPlugin;
use codemode::plugins::process::{ProcessConfig, ProcessPlugin};
use codemode::plugins::PluginHost;
use codemode::{Catalog, Executor, LaunchMode, Phases, SandboxPolicy, Tool, ToolDefinition, ToolResult};
use futures::StreamExt;
use serde_json::json;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn report(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let (p50, p95) = (percentile(&samples, 0.5), percentile(&samples, 0.95));
    println!("{name:<44} n={:<6} p50 {:>10.1?}  p95 {:>10.1?}", samples.len(), p50, p95);
    p50
}

/// One field of a `/proc` file in kB (`VmRSS:` of status, `Private_Dirty:` of
/// smaps_rollup, ...), if the process exists.
fn proc_kib(pid: &str, file: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

/// A process's own memory (unique set size): the pages no other process maps.
fn private_kib(pid: i32) -> Option<u64> {
    let pid = pid.to_string();
    Some(proc_kib(&pid, "smaps_rollup", "Private_Dirty:")? + proc_kib(&pid, "smaps_rollup", "Private_Clean:")?)
}

/// The seed's two-call program (two tool calls at once, their answers returned).
const TWO_CALLS: &str =
    "const [a, b] = await Promise.all([tools.bench.noop({ a: 1 }), tools.bench.noop({ b: 2 })]); return [a, b]";

/// The children of `parent` (from `/proc/*/stat`).
fn children_of(parent: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|stat| {
                stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<i32>().ok())
            }) == Some(parent)
        })
        .collect()
}

/// User and kernel CPU time, and minor faults: of this process (`RUSAGE_SELF`), or of
/// every child it reaped (`RUSAGE_CHILDREN`: the workers, which are the host's children).
fn rusage(who: libc::c_int) -> (Duration, Duration, u64) {
    // SAFETY: getrusage writes one rusage struct, which we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (time(usage.ru_utime), time(usage.ru_stime), usage.ru_minflt as u64)
}

/// User and kernel CPU time and minor faults of a running process (the template), from
/// `/proc/<pid>/stat`.
fn proc_cpu(pid: i32) -> (Duration, Duration, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(") ").map(|(_, rest)| rest.split(' ').collect()).unwrap_or_default();
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    let ticks = |t: u64| Duration::from_nanos(t * 1_000_000_000 / hz);
    // After the ") ": state is field 0, minflt 7, utime 11, stime 12.
    (ticks(field(11)), ticks(field(12)), field(7))
}

/// What `programs` trivial programs, `in_flight` at a time, cost the machine per program.
async fn cpu_per_program(ex: &Executor, template: i32, in_flight: usize, programs: usize) {
    for _ in 0..50 {
        assert!(ex.run("return 1").await.is_ok());
    }
    let (host_before, workers_before, template_before) =
        (rusage(libc::RUSAGE_SELF), rusage(libc::RUSAGE_CHILDREN), proc_cpu(template));
    let t = Instant::now();
    let _: Vec<()> = futures::stream::iter(0..programs)
        .map(|_| async {
            let outcome = ex.run("return 1").await;
            assert!(outcome.is_ok(), "{outcome:?}");
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let elapsed = t.elapsed();
    // The warm pool's last workers are reaped once they are replaced: let the pool settle.
    wait_for_a_quiet_pool(ex).await;
    let (host_after, workers_after, template_after) =
        (rusage(libc::RUSAGE_SELF), rusage(libc::RUSAGE_CHILDREN), proc_cpu(template));
    let per = |d: Duration| d.as_secs_f64() * 1e3 / programs as f64;
    let rows = [
        ("host", host_before, host_after),
        ("template", template_before, template_after),
        ("workers", workers_before, workers_after),
    ];
    let (mut user, mut kernel) = (0.0, 0.0);
    let mut line = String::new();
    for (name, before, after) in rows {
        let (u, k) = (per(after.0 - before.0), per(after.1 - before.1));
        user += u;
        kernel += k;
        line.push_str(&format!("  {name} {u:.2}+{k:.2}"));
    }
    let faults = (workers_after.2 - workers_before.2) as f64 / programs as f64;
    println!(
        "{:<44} {:.0}/s  {:.2} ms CPU a program (user {user:.2}, kernel {kernel:.2}, {:.0}% kernel)",
        format!("trivial programs, {in_flight:>2} in flight"),
        programs as f64 / elapsed.as_secs_f64(),
        user + kernel,
        100.0 * kernel / (user + kernel).max(f64::EPSILON)
    );
    println!("{:<44}{line}  (ms, user+kernel)", "  of which");
    println!("{:<44} {faults:.0} minor faults a worker", "");
}

/// A running worker's VMAs, resident pages and faults so far, read while its program
/// waits in the `bench.measure` tool (its last step before the end).
fn worker_shape(pid: i32) -> Option<(u64, u64, u64, u64)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?.lines().count() as u64;
    let pid_text = pid.to_string();
    let rss = proc_kib(&pid_text, "smaps_rollup", "Rss:")?;
    let private = private_kib(pid)?;
    let (_, _, faults) = proc_cpu(pid);
    Some((maps, rss, private, faults))
}

/// Busy and total CPU time of the machine so far (`/proc/stat`, in ticks).
fn cpu_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> =
        stat.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let total: u64 = fields.iter().sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// What a running worker holds on its own, read by the `bench.measure` tool while the
/// program that called it waits. Workers are the host's children (the template forks
/// them with `CLONE_PARENT`): the running one is the largest child other than the
/// template and the warm workers left waiting behind it.
#[derive(Default)]
struct RunningWorker {
    template: Option<i32>,
    warm: Vec<i32>,
    private_kib: Vec<u64>,
    /// VMAs, RSS KiB, private KiB and minor faults of each measured worker.
    shapes: Vec<(u64, u64, u64, u64)>,
}

/// The warm workers that stay waiting when the next program takes one: the pool hands
/// out its oldest worker first, which is the one the program will run in.
fn waiting_behind_the_next(warm: Vec<i32>) -> Vec<i32> {
    warm.into_iter().skip(1).collect()
}

fn catalog(arrivals: Arc<Mutex<Vec<Instant>>>) -> Catalog {
    catalog_measuring(arrivals, Arc::default())
}

fn catalog_measuring(arrivals: Arc<Mutex<Vec<Instant>>>, running: Arc<Mutex<RunningWorker>>) -> Catalog {
    let def = |name: &str| ToolDefinition::new(name, "bench", json!({"type": "object"}));
    let mut c = Catalog::new();
    c.add(
        "bench",
        Tool::from_fn(def("measure"), move |_, _| {
            let mut running = running.lock().unwrap();
            if let Some(template) = running.template {
                // Besides the template and the warm workers, the host's children are this
                // program's worker and perhaps the pool's replacement, just forked and smaller.
                let host = i32::try_from(std::process::id()).unwrap_or(0);
                let largest = children_of(host)
                    .into_iter()
                    .filter(|pid| *pid != template && !running.warm.contains(pid))
                    .filter_map(|pid| Some((private_kib(pid)?, pid)))
                    .max();
                running.private_kib.extend(largest.map(|(kib, _)| kib));
                let shape = largest.and_then(|(_, pid)| worker_shape(pid));
                running.shapes.extend(shape);
            }
            async { ToolResult::text("ok") }
        }),
    )
    .unwrap();
    c.add("bench", Tool::from_fn(def("noop"), |_, _| async { ToolResult::text("ok") })).unwrap();
    c.add(
        "bench",
        Tool::from_fn(def("stamp"), move |_, _| {
            arrivals.lock().unwrap().push(Instant::now());
            async { ToolResult::text("ok") }
        }),
    )
    .unwrap();
    c
}

async fn execute_samples(ex: &Executor, n: usize) -> Vec<Duration> {
    execute_with_phases(ex, n).await.0
}

/// `n` trivial programs, one at a time: each one's whole time and its phases.
async fn execute_with_phases(ex: &Executor, n: usize) -> (Vec<Duration>, Vec<Phases>) {
    for _ in 0..20 {
        assert!(ex.run("return 1").await.is_ok());
    }
    let (mut samples, mut phases) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        run_one(ex, "return 1", &mut samples, &mut phases).await;
    }
    (samples, phases)
}

/// `n` trivial programs, each started once the previous one's worker is gone and the
/// warm pool is full again (as programs arrive from agents that think between them):
/// nothing else competes for the CPU while it runs.
async fn execute_on_a_quiet_host(ex: &Executor, code: &str, n: usize) -> (Vec<Duration>, Vec<Phases>) {
    let (mut samples, mut phases) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        wait_for_a_quiet_pool(ex).await;
        tokio::time::sleep(Duration::from_millis(2)).await;
        run_one(ex, code, &mut samples, &mut phases).await;
    }
    (samples, phases)
}

/// Runs `code` once, adding its whole time and its phases.
async fn run_one(ex: &Executor, code: &str, samples: &mut Vec<Duration>, phases: &mut Vec<Phases>) {
    let t = Instant::now();
    let outcome = ex.run(code).await;
    samples.push(t.elapsed());
    assert!(outcome.is_ok(), "{outcome:?}");
    phases.extend(outcome.phases);
}

/// Waits (up to half a second) until the warm pool is full and every worker the host
/// has is a warm one: no program runs, no worker is being prepared or torn down.
async fn wait_for_a_quiet_pool(ex: &Executor) {
    let host = i32::try_from(std::process::id()).unwrap_or(0);
    let template = ex.template_pid().await.unwrap_or(0);
    for _ in 0..500 {
        let warm = ex.warm_workers();
        if warm.len() >= codemode::launcher::default_warm_workers()
            && children_of(host).iter().all(|pid| *pid == template || warm.contains(pid))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The median of each phase (arrival → worker has the program → compiled → returned →
/// the host has the outcome).
fn report_phases(phases: &[Phases]) {
    let median = |pick: fn(&Phases) -> Duration| {
        let mut v: Vec<Duration> = phases.iter().map(pick).collect();
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    println!(
        "{:<44} to worker {:>8.1?} (not ready {:>8.1?})  compile {:>8.1?}  run {:>8.1?}  report {:>8.1?}",
        "  phases (medians)",
        median(|p| p.to_worker),
        median(|p| p.worker_not_ready),
        median(|p| p.compile),
        median(|p| p.run),
        median(|p| p.report)
    );
}

/// `-- cpu`: one sandboxed executor with its warm pool, nothing else running.
fn cpu_only() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let running = Arc::new(Mutex::new(RunningWorker::default()));
        let ex = Executor::builder()
            .launch_mode(LaunchMode::Template)
            .catalog(catalog_measuring(Arc::default(), Arc::clone(&running)))
            .build()
            .await
            .unwrap();
        let template = ex.template_pid().await.expect("a template");
        println!(
            "codemode CPU per program ({} cores)",
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
        );
        // Latency at an idle host: each program arrives once the pool has settled.
        let mut quiet = Vec::new();
        for _ in 0..300 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let t = Instant::now();
            assert!(ex.run("return 1").await.is_ok());
            quiet.push(t.elapsed());
        }
        report("trivial program at an idle host", quiet);
        cpu_per_program(&ex, template, 1, 1000).await;
        cpu_per_program(&ex, template, 16, 3000).await;
        running.lock().unwrap().template = Some(template);
        for _ in 0..100 {
            wait_for_a_quiet_pool(&ex).await;
            running.lock().unwrap().warm = waiting_behind_the_next(ex.warm_workers());
            assert!(ex.run("await tools.bench.measure({}); return 1").await.is_ok());
        }
        let mut shapes = std::mem::take(&mut running.lock().unwrap().shapes);
        let median = |shapes: &mut Vec<(u64, u64, u64, u64)>, pick: fn(&(u64, u64, u64, u64)) -> u64| {
            let mut v: Vec<u64> = shapes.iter().map(pick).collect();
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        };
        println!(
            "{:<44} n={} VMAs {}  RSS {:.2} MiB  private {:.2} MiB  {} minor faults (medians)",
            "a worker at its program's last step",
            shapes.len(),
            median(&mut shapes, |s| s.0),
            median(&mut shapes, |s| s.1) as f64 / 1024.0,
            median(&mut shapes, |s| s.2) as f64 / 1024.0,
            median(&mut shapes, |s| s.3)
        );
    });
}

fn main() {
    let startup_only = std::env::args().any(|a| a == "startup");
    if std::env::args().any(|a| a == "cpu") {
        return cpu_only();
    }
    let profile_only = std::env::args().any(|a| a == "profile");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(Mutex::new(RunningWorker::default()));
        let template = Executor::builder()
            .launch_mode(LaunchMode::Template)
            .catalog(catalog_measuring(arrivals.clone(), Arc::clone(&running)))
            .build()
            .await
            .unwrap();
        println!("codemode execute benchmark ({} cores)", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0));
        if profile_only {
            let until = Instant::now() + Duration::from_secs(20);
            let mut n = 0;
            while Instant::now() < until {
                assert!(template.run("return 1").await.is_ok());
                n += 1;
            }
            println!("{n} trivial programs in 20 s");
            return;
        }

        let (fork, phases) = execute_with_phases(&template, 500).await;
        let fork_p50 = report("execute, trivial program, template (fork)", fork);
        report_phases(&phases);
        let (quiet, quiet_phases) = execute_on_a_quiet_host(&template, "return 1", 300).await;
        report("  the same, each arriving at a quiet host", quiet);
        report_phases(&quiet_phases);
        let (quiet, quiet_phases) = execute_on_a_quiet_host(&template, TWO_CALLS, 300).await;
        report("two-call program, each arriving at a quiet host", quiet);
        report_phases(&quiet_phases);
        // The other executors start only now: their templates and warm workers are this
        // process's children too, and a quiet host is one where none of them is running.
        let unsandboxed = Executor::builder()
            .launch_mode(LaunchMode::Template)
            .sandbox(SandboxPolicy::InsecureDisabled)
            .catalog(catalog(arrivals.clone()))
            .build()
            .await
            .unwrap();
        let spawn = Executor::builder().launch_mode(LaunchMode::Spawn).catalog(catalog(arrivals.clone())).build().await.unwrap();
        let cold = Executor::builder()
            .launch_mode(LaunchMode::Template)
            .warm_workers(0)
            .catalog(catalog(arrivals.clone()))
            .build()
            .await
            .unwrap();
        let cold_p50 = report("  the same without the warm pool", execute_samples(&cold, 500).await);
        println!("{:<44} {:.2}x faster", "  with the warm pool", cold_p50.as_secs_f64() / fork_p50.as_secs_f64());
        drop(cold);
        let bare_p50 = report("  the same without the sandbox", execute_samples(&unsandboxed, 500).await);
        println!("{:<44} {:+.2} ms", "  what the sandbox adds to the p50", (fork_p50.as_secs_f64() - bare_p50.as_secs_f64()) * 1e3);
        drop(unsandboxed);
        let spawn_p50 = report("execute, trivial program, spawn", execute_samples(&spawn, 60).await);
        println!("{:<44} {:.1}x faster than spawn", "template start-up", spawn_p50.as_secs_f64() / fork_p50.as_secs_f64());
        drop(spawn);

        // A 50-line program as JavaScript, and the same with TypeScript's types: the
        // TypeScript path parses and strips in the worker; plain JavaScript only parses.
        if !startup_only {
        let js_p50 = report("execute, 50-line program, JavaScript", program_samples(&template, FIFTY_JS, 300).await);
        let ts_p50 = report("  the same program in TypeScript", program_samples(&template, FIFTY_TS, 300).await);
        println!(
            "{:<44} {:+.2} ms ({:.2}x)",
            "  what TypeScript adds to the p50",
            (ts_p50.as_secs_f64() - js_p50.as_secs_f64()) * 1e3,
            ts_p50.as_secs_f64() / js_p50.as_secs_f64()
        );
        }

        arrivals.lock().unwrap().clear();
        let outcome = template.run("for (let i = 0; i < 3000; i++) await tools.bench.stamp({ i }); return 'done'").await;
        assert!(outcome.is_ok(), "{outcome:?}");
        let stamps = std::mem::take(&mut *arrivals.lock().unwrap());
        let gaps: Vec<Duration> = stamps.windows(2).skip(100).map(|w| w[1] - w[0]).collect();
        report("tool-call round trip, in-process tool", gaps);

        let mut walls = Vec::new();
        for _ in 0..30 {
            let t = Instant::now();
            let outcome = template.run("return (await Promise.all(Array.from({ length: 1000 }, (_, i) => tools.bench.noop({ i })))).length").await;
            walls.push(t.elapsed());
            assert_eq!(outcome.agent_text(), "1000");
        }
        report("Promise.all of 1,000 calls (whole execute)", walls);

        // Scaling: the seed's two-call program with 1 to 16 programs in flight, each
        // program a fresh worker (the warm pool refills behind them).
        for in_flight in [1usize, 2, 4, 8, 16] {
            let programs = 600;
            let t = Instant::now();
            let (busy_before, total_before) = cpu_ticks();
            let (samples, phases): (Vec<Duration>, Vec<Option<Phases>>) = futures::stream::iter(0..programs)
                .map(|_| async {
                    let started = Instant::now();
                    let outcome = template.run(TWO_CALLS).await;
                    assert!(outcome.is_ok(), "{outcome:?}");
                    (started.elapsed(), outcome.phases)
                })
                .buffer_unordered(in_flight)
                .unzip()
                .await;
            let rate = programs as f64 / t.elapsed().as_secs_f64();
            let (busy_after, total_after) = cpu_ticks();
            let idle = 100.0 * (1.0 - (busy_after - busy_before) as f64 / (total_after - total_before).max(1) as f64);
            report(&format!("two-call program, {in_flight:>2} in flight ({rate:.0}/s, {idle:.0}% idle)"), samples);
            if in_flight == 1 {
                report_phases(&phases.into_iter().flatten().collect::<Vec<_>>());
            }
        }

        // Memory: a running trivial program's own pages, then RSS across 10,000 programs.
        let template_pid = template.template_pid().await;
        running.lock().unwrap().template = template_pid;
        for _ in 0..100 {
            wait_for_a_quiet_pool(&template).await;
            running.lock().unwrap().warm = waiting_behind_the_next(template.warm_workers());
            assert!(template.run("await tools.bench.measure({}); return 1").await.is_ok());
        }
        let mut private = std::mem::take(&mut running.lock().unwrap().private_kib);
        private.sort_unstable();
        println!(
            "{:<44} n={:<6} p50 {:>7.2} MiB",
            "private memory of a running trivial program",
            private.len(),
            private.get(private.len() / 2).copied().unwrap_or(0) as f64 / 1024.0
        );
        let template_proc = template_pid.map(|p| p.to_string()).unwrap_or_default();
        let rss = || {
            (proc_kib("self", "status", "VmRSS:").unwrap_or(0), proc_kib(&template_proc, "status", "VmRSS:").unwrap_or(0))
        };
        let (host_before, template_before) = rss();
        let started = Instant::now();
        futures::stream::iter(0..10_000)
            .map(|_| async { assert!(template.run("return 1").await.is_ok()) })
            .buffer_unordered(8)
            .collect::<Vec<()>>()
            .await;
        let (host_after, template_after) = rss();
        println!(
            "{:<44} host {:.1} → {:.1} MiB, template {:.1} → {:.1} MiB ({:.1} s)",
            "RSS before → after 10,000 programs",
            host_before as f64 / 1024.0,
            host_after as f64 / 1024.0,
            template_before as f64 / 1024.0,
            template_after as f64 / 1024.0,
            started.elapsed().as_secs_f64()
        );

        if startup_only {
            return;
        }
        // Plugin round trips: each call timed at the host, from handing the input to the
        // plugin's handler to its result (host → plugin → host), over 1,000 sequential
        // calls from a program; plus the whole call as the program sees it (mean).
        let py_tools = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/py-tools/plugin.py");
        let python = ProcessConfig {
            name: "py".into(),
            command: "python3".into(),
            args: vec![py_tools.display().to_string()],
            env: vec![],
            settings: Default::default(),
            cwd: None,
            call_timeout: Duration::from_secs(10),
            net: None,
            permissions: Vec::new(),
        };
        let hello = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/hello-tools");
        let javascript = JavascriptPlugin {
            memory_mib: 64,
            cpu_step_ms: 5000,
            call_timeout: Duration::from_secs(10),
            ..JavascriptPlugin::new("js", &hello, None).unwrap()
        }
        .process_config(&codemode::default_worker_path(), SandboxPolicy::Required);
        for (label, config, call) in [
            ("Python process plugin", python, "tools.py.slugify({ title: \"A \" + i })"),
            ("JavaScript plugin", javascript, "tools.js.greet({ name: \"n\" + i })"),
        ] {
            let host = Arc::new(PluginHost::new(Catalog::new(), vec![ProcessPlugin::new(config)]));
            let (plugin_catalog, problems) = host.catalog().await;
            assert!(problems.is_empty(), "{problems:?}");
            let samples = Arc::new(Mutex::new(Vec::new()));
            template.set_catalog(timed(&plugin_catalog, &samples));
            let n = 1000;
            let t = Instant::now();
            let outcome = template.run(&format!("for (let i = 0; i < {n}; i++) await {call}; return 'done'")).await;
            assert!(outcome.is_ok(), "{outcome:?}");
            let whole = t.elapsed() / n;
            let samples: Vec<Duration> = std::mem::take(&mut *samples.lock().unwrap()).into_iter().skip(50).collect();
            report(&format!("plugin round trip, {label}"), samples);
            println!("{:<44} n={n:<6} mean {:>9.1?}", "  the whole call, seen from the program", whole);
        }

        // Plugin load: from starting the runtime to its tool list, for seed 000's Effect
        // + zod variant with the real packages (scripts/npm-fixtures.sh installs them).
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/formats");
        for (label, fixture) in [("effect 3 + zod 4", "effect3"), ("effect 4 + zod 4", "effect4"), ("zod 3 + ArkType + CommonJS (plico)", "plico")] {
            let dir = root.join(fixture);
            if !dir.is_dir() {
                println!("plugin load, {label}: skipped, run scripts/npm-fixtures.sh first");
                continue;
            }
            let mut loads = Vec::new();
            for _ in 0..10 {
                let mut plugin = JavascriptPlugin::new("p", &dir, None).unwrap();
                plugin.settings.insert("PLICO_TOKEN".into(), codemode::plugins::settings::SettingValue::Literal(json!("t")));
                let process = ProcessPlugin::new(plugin.process_config(&codemode::default_worker_path(), SandboxPolicy::Required));
                let t = Instant::now();
                let listed = process.list_tools(true).await.unwrap();
                loads.push(t.elapsed());
                assert!(!listed.is_empty());
            }
            report(&format!("plugin load to tool list, {label}"), loads);
        }
    });
}

/// The 50-line program, as JavaScript and as TypeScript.
const FIFTY_JS: &str = include_str!("programs/fifty.js");
const FIFTY_TS: &str = include_str!("programs/fifty.ts");

async fn program_samples(ex: &Executor, code: &str, n: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + 20 {
        let t = Instant::now();
        let outcome = ex.run(code).await;
        if i >= 20 {
            samples.push(t.elapsed());
        }
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    samples
}

/// Every tool of `catalog`, its handler timed into `samples`.
fn timed(catalog: &Catalog, samples: &Arc<Mutex<Vec<Duration>>>) -> Catalog {
    struct Timed(Arc<dyn codemode::ToolHandler>, Arc<Mutex<Vec<Duration>>>);
    impl codemode::ToolHandler for Timed {
        fn call(
            &self,
            input: serde_json::Value,
            context: codemode::CallContext,
        ) -> futures::future::BoxFuture<'static, ToolResult> {
            let (call, samples) = (self.0.call(input, context), Arc::clone(&self.1));
            Box::pin(async move {
                let t = Instant::now();
                let result = call.await;
                samples.lock().unwrap().push(t.elapsed());
                result
            })
        }
    }
    let mut out = Catalog::new();
    for (plugin, tools) in catalog.plugins() {
        for tool in tools {
            out.add(
                plugin,
                Tool::new(tool.definition.clone(), Arc::new(Timed(Arc::clone(&tool.handler), Arc::clone(samples)))),
            )
            .unwrap();
        }
    }
    out
}
