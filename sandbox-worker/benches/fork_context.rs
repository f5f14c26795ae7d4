//! `cargo bench -p sandbox-worker --bench fork_context`: what a forked worker costs when
//! it runs a small script in the context it inherits from the template, against one
//! that first creates a fresh context of its own (issue 27's "a fresh QuickJS context
//! created in the forked worker").
//!
//! The process plays the template: it creates and bootstraps an [`Engine`], runs the
//! rehearsal, collects garbage and trims malloc, as `template::serve` does. Then, for
//! each variant, it forks 300 children one after another; each child does the
//! variant's work and `_exit`s, and the parent reaps it with `wait4`, which reports the
//! child's whole CPU (user and kernel, its exit included) and its minor faults. No
//! sandbox and no host: only the engine's share is compared. Prints medians.

use std::error::Error;

use deno_core::v8;
use sandbox_worker::engine::Engine;

/// The script each child runs: a little of what a program does (a closure, an array,
/// an object, JSON).
const SCRIPT: &str = "JSON.stringify((() => ({ n: 1, list: [1, 2, 3].map((x) => x * 2) }))())";

/// Children per variant.
const CHILDREN: usize = 300;

/// The work a child does in the engine it inherits; false when it failed.
type ChildWork = fn(&mut Engine) -> bool;

/// What one child cost, as `wait4` reports it.
struct ChildCost {
    user_us: f64,
    kernel_us: f64,
    minor_faults: i64,
}

/// Forks a child that runs `work` and exits; reaps it and returns what it cost.
fn child_cost(work: &mut dyn FnMut() -> bool) -> Result<ChildCost, Box<dyn Error>> {
    // SAFETY: this process is single-threaded (the engine's runtime has no threads of
    // its own and none were started), so the child holds no lock another thread owns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork failed: {}", std::io::Error::last_os_error()).into());
    }
    if pid == 0 {
        let code = if work() { 0 } else { 1 };
        // SAFETY: _exit(2) has no preconditions; the child ends without teardown, as a
        // worker does.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: rusage is plain data; zeroed is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are valid for writes for the call's duration.
    if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } != pid {
        return Err(format!("wait4 failed: {}", std::io::Error::last_os_error()).into());
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("the child failed (wait status {status:#x})").into());
    }
    let micros = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    Ok(ChildCost { user_us: micros(usage.ru_utime), kernel_us: micros(usage.ru_stime), minor_faults: usage.ru_minflt })
}

/// Compiles and runs `code` in `scope`'s context; false when it does not compile or throws.
fn run_script(scope: &mut v8::PinScope, code: &str) -> bool {
    let Some(source) = v8::String::new(scope, code) else { return false };
    let Some(script) = v8::Script::compile(scope, source, None) else { return false };
    script.run(scope).is_some()
}

/// Runs [`SCRIPT`] in the context the engine was bootstrapped in (today's workers).
fn in_inherited_context(engine: &mut Engine) -> bool {
    deno_core::scope!(scope, &mut engine.runtime);
    run_script(scope, SCRIPT)
}

/// Creates a fresh context and runs [`SCRIPT`] in it; with `compile_runtime`, first
/// compiles and runs the program runtime's JavaScript (`common.js` and `bootstrap.js`,
/// wrapped, not called), the least a fresh context needs before it can run a program.
fn in_fresh_context(engine: &mut Engine, compile_runtime: bool) -> bool {
    deno_core::scope!(scope, &mut engine.runtime);
    let context = v8::Context::new(scope, Default::default());
    let scope = &mut v8::ContextScope::new(scope, context);
    if compile_runtime {
        // The bundle (`build.rs`) is one function of primordials and its call: keep the
        // function, drop the call.
        let bundle = sandbox_worker::engine::PROGRAM_RUNTIME_JS;
        let runtime = bundle.strip_suffix("(globalThis.__bootstrap.primordials);\n").unwrap_or(bundle);
        if !run_script(scope, runtime) {
            return false;
        }
    }
    run_script(scope, SCRIPT)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() -> Result<(), Box<dyn Error>> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let mut engine = Engine::new(None)?;
    let event_loop = tokio::runtime::Builder::new_current_thread().build()?;
    sandbox_worker::program::rehearse(&mut engine, &event_loop);
    drop(event_loop);
    engine.runtime.v8_isolate().low_memory_notification();
    // SAFETY: malloc_trim only releases free memory back to the system.
    unsafe { libc::malloc_trim(0) };

    println!(
        "a forked child of a bootstrapped engine, {CHILDREN} children a variant (medians; CPU as wait4 reports it)"
    );
    let variants: [(&str, ChildWork); 4] = [
        ("fork and exit, nothing run", |_| true),
        ("script in the inherited context", in_inherited_context),
        ("fresh context, then the script", |e| in_fresh_context(e, false)),
        ("fresh context + program runtime JS", |e| in_fresh_context(e, true)),
    ];
    for (name, work) in variants {
        let costs =
            (0..CHILDREN).map(|_| child_cost(&mut || work(&mut engine))).collect::<Result<Vec<ChildCost>, _>>()?;
        let total = median(costs.iter().map(|c| c.user_us + c.kernel_us).collect());
        let user = median(costs.iter().map(|c| c.user_us).collect());
        let kernel = median(costs.iter().map(|c| c.kernel_us).collect());
        let faults = median(costs.iter().map(|c| c.minor_faults as f64).collect());
        println!("{name:38} CPU {:8.0} µs (user {user:6.0}, kernel {kernel:6.0})  {faults:5.0} minor faults", total);
    }
    Ok(())
}
