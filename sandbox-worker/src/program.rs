//! Runs one program in a prepared [`Engine`] and reports its outcome to the host.
//!
//! The order, in two functions: [`prepare`] (steps 1–3, which depend only on the
//! limits, so a warm worker does them before its program arrives, followed by its
//! [`rehearse`]al) and [`run`]:
//! 1. report panics on the channel; attach the host link (tool calls and console) and
//!    the memory trip to the runtime;
//! 2. start the step clock and its watchdog;
//! 3. lock the process down: resource limits (the OS memory backstop among them) and
//!    the worker's seccomp filter, on every thread;
//! 4. read the program's form (JavaScript or TypeScript, expression, body or
//!    `export default`; [`crate::source`]) and compile it (a syntax error, or whatever
//!    its top-level text throws, ends here);
//! 5. set this program's heap limit;
//! 6. call the bootstrap's driver and run the event loop ([`event_loop`]) until the
//!    driver reports how the program ended (`op_codemode_finish`); the loop reads tool
//!    answers from the channel whenever the program waits for them;
//! 7. turn what happened into a [`WorkerOutcome`], send it, and exit.
//!
//! No exception of the program reaches deno_core's error conversion: the driver and
//! the describer (`common.js`) describe every thrown value in JavaScript first.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use deno_core::error::{CoreError, CoreErrorKind};
use deno_core::PollEventLoopOptions;
use futures::FutureExt;
use protocol::{
    monotonic_ns, HostToWorker, JsFailure, PluginTools, StartProgram, WorkerChannel, WorkerLimits, WorkerOutcome,
    WorkerTimes, WorkerToHost,
};
use serde_json::value::RawValue;

use crate::engine::{failure_from_js_error, CompileError, Engine};
use crate::memory::{self, MemoryTrip};
use crate::ops::{Driver, Finish, Finishing, HostLink, ProgramSpec};
use crate::sandbox::{rlimits, setup::Setup};
use crate::source::Positions;
use crate::step_clock::StepClock;

/// A worker set up for programs with one set of limits: its host link, memory trip and
/// step clock exist, the watchdog runs and the process is locked down (steps 1–3).
/// What is left is the program itself ([`run`]).
pub struct Prepared {
    limits: WorkerLimits,
    link: Rc<HostLink>,
    memory_trip: MemoryTrip,
    clock: Arc<StepClock>,
    /// The program's event loop ([`event_loop`]), built ahead.
    event_loop: tokio::runtime::Runtime,
    /// When it was ready for its program ([`WorkerTimes::ready_ns`]).
    ready_ns: u64,
}

/// Steps 1–3 for programs with `limits`, on `channel`.
///
/// A worker of the host's warm pool does this as soon as it is forked (the host sends
/// [`HostToWorker::Prepare`]) and then waits for its program ([`Prepared::wait_for_start`]);
/// any other worker does it when its program arrives. Either way the step clock is
/// parked when this returns: the first step starts with the program.
///
/// `base_data_bytes` is the process's data segment before the program (for the OS
/// memory backstop).
pub fn prepare(
    engine: &mut Engine,
    channel: WorkerChannel,
    limits: WorkerLimits,
    base_data_bytes: u64,
    setup: &mut Setup,
) -> Prepared {
    crate::report_panics(Some(channel.raw_fd()));
    crate::report_aborts(channel.raw_fd());
    let link = Rc::new(HostLink::new(channel, limits.console_bytes, limits.tool_bytes_in_flight));
    let memory_trip = MemoryTrip::new(&mut engine.runtime);
    {
        let state = engine.runtime.op_state();
        let mut state = state.borrow_mut();
        state.put(Rc::clone(&link));
        state.put(memory_trip.clone());
    }

    let clock = StepClock::start(Duration::from_millis(limits.cpu_step_ms));
    if let Err(e) = clock.spawn_watchdog(engine.runtime.v8_isolate().thread_safe_handle()) {
        crate::fail(&format!("cannot start the step watchdog: {e}"));
    }
    engine.runtime.op_state().borrow_mut().put(Arc::clone(&clock));

    // The watchdog exists: lock the process down before any user input is read.
    let rlimits = rlimits::worker_rlimits(
        memory::program_backstop_bytes(base_data_bytes, limits.memory_bytes),
        limits.wall_clock_ms.div_ceil(1000).max(1).saturating_add(1),
    );
    if let Err(e) = setup.lock(&rlimits) {
        crate::fail(&e.to_string());
    }
    let event_loop = match event_loop(&clock) {
        Ok(rt) => rt,
        Err(e) => crate::fail(&format!("cannot start the event loop: {e}")),
    };
    clock.on_park();
    Prepared { limits, link, memory_trip, clock, event_loop, ready_ns: monotonic_ns() }
}

/// A canned program that goes where programs go: compiled in its wrapper, the driver
/// building `tools`, an async function, promise jobs, objects, strings and JSON.
const REHEARSAL: &str =
    "const made = await Promise.all([1, 2, 3].map(async (n) => ({ n, text: `item ${n}`, list: [n, n * 2] })));\n\
    const text = JSON.stringify(made);\n\
    return { count: JSON.parse(text).length, keys: Object.keys(made[0]), text };";

/// A warm worker's rehearsal, before its program arrives: runs [`REHEARSAL`] through
/// the very steps a program takes (compile, driver, event loop, report), with the step
/// clock parked and the report kept from the host. A forked worker pays for its first
/// touch of the template's memory (copy-on-write faults) and of code a fork does not
/// map (page faults) there, instead of on its program's path. The rehearsal defines no
/// global (`tools` is left to the program) and leaves only garbage behind.
pub fn rehearse(engine: &mut Engine, event_loop: &tokio::runtime::Runtime) {
    let Ok((function, source)) = engine.compile_named(REHEARSAL, "rehearsal.js") else { return };
    let spec = ProgramSpec {
        catalog: vec![PluginTools { plugin: "rehearsal".into(), tools: vec!["noop".into()], unavailable: None }],
        calls_function_value: source.calls_function_value,
        positions: source.positions.flat(),
        rehearsal: true,
    };
    let reported = hand_to_driver(engine, spec);
    let _ = drive(engine, event_loop, function, reported);
    let state = engine.runtime.op_state();
    let mut state = state.borrow_mut();
    state.try_take::<Finishing>();
    // What the rehearsal's end reported is not the program's.
    if let Some(link) = state.try_borrow::<Rc<HostLink>>() {
        link.in_flight_at_end.borrow_mut().take();
    }
}

/// Puts `spec` where the driver reads it (`op_codemode_program`) and a fresh
/// [`Finishing`] where it reports the end; returns what fires at that report.
fn hand_to_driver(engine: &mut Engine, spec: ProgramSpec) -> futures::channel::oneshot::Receiver<()> {
    let (done, reported) = futures::channel::oneshot::channel();
    let state = engine.runtime.op_state();
    let mut state = state.borrow_mut();
    state.put(spec);
    state.put(Finishing { done: Some(done), ..Finishing::default() });
    reported
}

/// Calls the driver on the compiled `function` and runs the event loop until the
/// driver reports how the program ended (`reported` fires) or nothing is left to run.
fn drive(
    engine: &mut Engine,
    event_loop: &tokio::runtime::Runtime,
    function: deno_core::v8::Global<deno_core::v8::Value>,
    reported: futures::channel::oneshot::Receiver<()>,
) -> Result<(), CoreError> {
    let driver = match engine.runtime.op_state().borrow().try_borrow::<Driver>() {
        Some(d) => d.0.clone(),
        None => crate::fail("the driver is missing"),
    };
    event_loop.block_on(async {
        // Inside the runtime: the program's first tool calls start ops right away. The
        // driver returns at once; the program's end arrives as `op_codemode_finish`.
        drop(engine.runtime.call_with_args(&driver, &[function]));
        let reported = reported.map(|sent| sent.map_err(|_| CoreErrorKind::PendingPromiseResolution.into_box()));
        engine.runtime.with_event_loop_promise(reported, PollEventLoopOptions::default()).await
    })
}

impl Prepared {
    /// The worker's rehearsal ([`rehearse`]) on its own event loop.
    pub fn rehearse(&self, engine: &mut Engine) {
        rehearse(engine, &self.event_loop);
    }

    /// Waits for the program (a warm worker's next message).
    pub fn wait_for_start(&mut self) -> StartProgram {
        self.ready_ns = monotonic_ns();
        let message = self.link.channel.borrow_mut().recv_from_host_blocking();
        match message {
            Ok(HostToWorker::Start(start)) => start,
            Ok(_) => crate::fail("a prepared worker's next message must start a program"),
            Err(_) => crate::exit_as(protocol::worker::WorkerExit::HostGone),
        }
    }
}

/// Runs `start` to its end in a worker [`prepare`]d for its limits, and exits the process.
///
/// A worker never runs a program with limits other than the ones it was locked down
/// for: such a program (which the host sends to a fresh worker instead) is not run.
pub fn run(engine: &mut Engine, prepared: Prepared, start: StartProgram) -> ! {
    let Prepared { limits, link, memory_trip, clock, event_loop, ready_ns } = prepared;
    link.times.set(WorkerTimes { ready_ns, received_ns: monotonic_ns(), ..WorkerTimes::default() });
    if start.limits != limits {
        finish(
            &link,
            WorkerOutcome::Internal(
                "the host sent a program with other limits than this worker was prepared with; it was not run".into(),
            ),
        );
    }
    clock.on_unpark();

    // Before the program's first instruction (its text may run code while it compiles).
    if !engine.reseed(start.entropy) {
        finish(&link, WorkerOutcome::Internal("the program's generators could not be reseeded; it was not run".into()));
    }
    let compiled = engine.compile(&start.code);
    link.times.set(WorkerTimes { compiled_ns: monotonic_ns(), ..link.times.get() });
    let (function, prepared) = match compiled {
        Ok(compiled) => compiled,
        Err(CompileError::Threw(failure)) => finish(&link, WorkerOutcome::Threw(failure)),
        Err(CompileError::OutOfMemory) => finish(&link, WorkerOutcome::MemoryLimit),
        Err(CompileError::Terminated) => {
            finish(&link, limit_outcome(&memory_trip, &clock).unwrap_or(WorkerOutcome::CpuLimit))
        }
    };
    let spec = ProgramSpec {
        catalog: start.catalog,
        calls_function_value: prepared.calls_function_value,
        positions: prepared.positions.flat(),
        rehearsal: false,
    };
    let reported = hand_to_driver(engine, spec);

    // After compiling: with a near-heap-limit callback registered, the QuickJS backend
    // measures the whole heap after every script it evaluates.
    memory::set_heap_limit(&mut engine.runtime, memory::program_heap_limit_bytes(limits.memory_bytes), &memory_trip);

    WAITING_LINK.with(|l| *l.borrow_mut() = Some(Rc::clone(&link)));
    BUSY_POLL.with(|b| b.set(Duration::from_micros(start.busy_poll_us)));
    let result = drive(engine, &event_loop, function, reported);

    let finishing = engine.runtime.op_state().borrow_mut().try_take::<Finishing>();
    let outcome = classify(result, finishing, &memory_trip, &clock, limits.result_bytes, &prepared.positions);
    finish(&link, outcome)
}

thread_local! {
    /// The host link, for the event loop's park hook (which must be `Send`); set when
    /// the program starts (a rehearsal has none: it waits for nothing).
    static WAITING_LINK: RefCell<Option<Rc<HostLink>>> = const { RefCell::new(None) };
    /// How long the park hook polls for an answer before it blocks (the host's choice,
    /// sent with the program).
    static BUSY_POLL: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// The program's event loop: a single-threaded tokio runtime with no I/O driver (so no
/// descriptor of its own). When it has nothing left to run, the program is waiting for
/// tool answers (it has no timers or I/O of its own), so instead of sleeping it reads
/// the next answer from the channel, after a short busy poll; delivering the answer
/// wakes the op that waits for it. Time spent there does not count towards the step
/// limit; each answer starts a new step.
fn event_loop(clock: &Arc<StepClock>) -> std::io::Result<tokio::runtime::Runtime> {
    let clock = Arc::clone(clock);
    tokio::runtime::Builder::new_current_thread()
        .on_thread_park(move || {
            WAITING_LINK.with(|l| wait_for_answer(l.borrow().as_deref(), &clock, BUSY_POLL.with(Cell::get)))
        })
        .build()
}

fn wait_for_answer(link: Option<&HostLink>, clock: &StepClock, busy_poll: Duration) {
    let Some(link) = link else { return };
    if link.pending.borrow().is_empty() {
        // Nothing in flight and nothing to run: the event loop should have reported the
        // stuck promise itself; never sleep waiting for an answer that cannot come.
        finish(link, WorkerOutcome::Stuck);
    }
    clock.on_park();
    let message = link.channel.borrow_mut().recv_from_host_busy_poll(busy_poll);
    clock.on_unpark();
    match message {
        Ok(HostToWorker::ToolAnswer { call_id, answer }) => {
            clock.new_step();
            if let Some(waiter) = link.pending.borrow_mut().remove(&call_id) {
                let _ = waiter.send(answer);
            }
        }
        Ok(HostToWorker::Start(_) | HostToWorker::Prepare { .. }) => crate::fail("the host sent a second program"),
        Err(_) => crate::exit_as(protocol::worker::WorkerExit::HostGone),
    }
}

/// The limit that stopped the program, if one did.
fn limit_outcome(memory: &MemoryTrip, clock: &StepClock) -> Option<WorkerOutcome> {
    if memory.tripped() {
        Some(WorkerOutcome::MemoryLimit)
    } else if clock.tripped() {
        Some(WorkerOutcome::CpuLimit)
    } else {
        None
    }
}

/// Decides the outcome. Limits win over whatever error their termination caused; then
/// what the program threw; then a promise it left rejected; then its value.
fn classify(
    result: Result<(), CoreError>,
    finishing: Option<Finishing>,
    memory: &MemoryTrip,
    clock: &StepClock,
    result_bytes: u64,
    positions: &Positions,
) -> WorkerOutcome {
    if let Some(limit) = limit_outcome(memory, clock) {
        return limit;
    }
    let Finishing { finish, unhandled, .. } = finishing.unwrap_or_default();
    match (finish, unhandled) {
        (Some(Finish::Threw(failure)), _) | (_, Some(failure)) if is_out_of_memory_failure(&failure) => {
            WorkerOutcome::MemoryLimit
        }
        (Some(Finish::Threw(failure)), _) => WorkerOutcome::Threw(failure),
        (_, Some(failure)) => WorkerOutcome::Threw(failure),
        (Some(Finish::Undefined), None) => WorkerOutcome::ReturnedUndefined,
        (Some(Finish::Unserializable(message)), None) => WorkerOutcome::Unserializable(message),
        (Some(Finish::Json(text)), None) if text.len() as u64 > result_bytes => {
            WorkerOutcome::ResultTooLarge { bytes: text.len() as u64 }
        }
        (Some(Finish::Json(text)), None) => match RawValue::from_string(text) {
            Ok(raw) => WorkerOutcome::Returned(raw),
            Err(e) => WorkerOutcome::Unserializable(format!("the returned value produced invalid JSON: {e}")),
        },
        (None, None) => match result {
            Ok(()) => {
                WorkerOutcome::Internal("the program's driver finished without reporting how the program ended".into())
            }
            Err(error) => match error.0.as_ref() {
                CoreErrorKind::PendingPromiseResolution => WorkerOutcome::Stuck,
                CoreErrorKind::Js(js) if is_out_of_memory(js) => WorkerOutcome::MemoryLimit,
                CoreErrorKind::Js(js) => WorkerOutcome::Threw(failure_from_js_error(js, positions)),
                other => WorkerOutcome::Threw(JsFailure {
                    name: "Error".into(),
                    message: other.to_string(),
                    stack: None,
                    line: None,
                    column: None,
                    unhandled_rejection: false,
                }),
            },
        },
    }
}

/// QuickJS reports a failed allocation as a thrown `InternalError: out of memory`.
fn is_out_of_memory_failure(failure: &JsFailure) -> bool {
    failure.name == "InternalError" && failure.message == "out of memory"
}

/// The same, as deno_core reports it.
fn is_out_of_memory(js: &deno_core::error::JsError) -> bool {
    js.name.as_deref() == Some("InternalError") && js.message.as_deref() == Some("out of memory")
}

/// Sends the outcome and exits.
fn finish(link: &HostLink, outcome: WorkerOutcome) -> ! {
    // Every call the program never saw answered: still waiting here, or answered into
    // the runtime after the program ended (its answer queued behind the end).
    let mut unanswered_calls: Vec<u64> = link.pending.borrow().keys().copied().collect();
    unanswered_calls.extend(link.in_flight_at_end.borrow().iter().flatten());
    unanswered_calls.sort_unstable();
    unanswered_calls.dedup();
    let times = link.times.get();
    let times = (times.received_ns > 0).then(|| WorkerTimes { ended_ns: monotonic_ns(), ..times });
    link.send(&WorkerToHost::Finished {
        outcome,
        console_dropped_bytes: link.console_dropped(),
        unanswered_calls,
        times,
    });
    crate::exit_now(0)
}
