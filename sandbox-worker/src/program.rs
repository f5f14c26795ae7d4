//! Runs one program in a prepared [`Engine`] and reports its outcome to the host.
//!
//! The order, in one function ([`run`]):
//! 1. attach the host link (tool calls and console) to the runtime;
//! 2. set this program's heap limit;
//! 3. compile the program (a syntax error ends here);
//! 4. start the step clock and its watchdog, and the event loop;
//! 5. lock the process down: resource limits (the OS memory backstop among them) and
//!    the worker's seccomp filter, on every thread;
//! 6. drive the program on the single-threaded event loop that also reads tool answers;
//! 7. turn what happened into a [`WorkerOutcome`], send it, and exit.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use deno_core::error::{CoreError, CoreErrorKind};
use deno_core::PollEventLoopOptions;
use protocol::{HostToWorker, JsFailure, StartProgram, WorkerChannel, WorkerOutcome, WorkerToHost};
use serde_json::value::RawValue;

use crate::engine::{failure_from_js_error, Engine, ProgramForm};
use crate::memory::{self, MemoryTrip};
use crate::ops::{Driver, Finish, HostLink, ProgramSpec};
use crate::sandbox::{self, rlimits, WorkerPolicy};
use crate::step_clock::StepClock;

/// Runs `start` to its end and exits the process.
///
/// `base_data_bytes` is the process's data segment before the program (for the OS
/// memory backstop).
pub fn run(engine: &mut Engine, channel: WorkerChannel, start: StartProgram, base_data_bytes: u64, policy: &WorkerPolicy) -> ! {
    let limits = start.limits;
    let busy_poll = Duration::from_micros(start.busy_poll_us);
    let receiver = match channel.try_clone() {
        Ok(r) => r,
        Err(e) => crate::fail(&format!("cannot read the host channel: {e}")),
    };
    let link = Rc::new(HostLink::new(channel, limits.console_bytes));
    engine.runtime.op_state().borrow_mut().put(Rc::clone(&link));

    let memory_trip = memory::set_heap_limit(&mut engine.runtime, limits.memory_bytes);

    let (function, form) = match engine.compile(&start.code) {
        Ok(compiled) => compiled,
        Err(failure) => finish(&link, WorkerOutcome::Threw(failure)),
    };
    let spec = ProgramSpec { catalog: start.catalog, expression: form == ProgramForm::Expression, line1_prefix: form.line1_prefix() };
    engine.runtime.op_state().borrow_mut().put(spec);

    let clock = StepClock::start(Duration::from_millis(limits.cpu_step_ms));
    if let Err(e) = clock.spawn_watchdog(engine.runtime.v8_isolate().thread_safe_handle()) {
        crate::fail(&format!("cannot start the step watchdog: {e}"));
    }
    let event_loop = {
        let (park, unpark) = (Arc::clone(&clock), Arc::clone(&clock));
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .on_thread_park(move || park.on_park())
            .on_thread_unpark(move || unpark.on_unpark())
            .build()
    };
    let event_loop = match event_loop {
        Ok(rt) => rt,
        Err(e) => crate::fail(&format!("cannot start the event loop: {e}")),
    };

    let receiver = {
        let _runtime = event_loop.enter();
        match receiver.async_receiver() {
            Ok(r) => r,
            Err(e) => crate::fail(&format!("cannot read the host channel: {e}")),
        }
    };

    // The event loop and the watchdog exist: lock the process down before user code.
    let rlimits = rlimits::worker_rlimits(
        memory::os_backstop_bytes(base_data_bytes, limits.memory_bytes),
        limits.wall_clock_ms.div_ceil(1000).max(1).saturating_add(1),
    );
    if let Err(e) = sandbox::lock_worker(policy, &rlimits) {
        crate::fail(&e.to_string());
    }

    let result = event_loop.block_on(async {
        let driver = match engine.runtime.op_state().borrow().try_borrow::<Driver>() {
            Some(d) => d.0.clone(),
            None => crate::fail("the driver is missing"),
        };
        let call = engine.runtime.call_with_args(&driver, &[function]);
        let run = engine.runtime.with_event_loop_promise(Box::pin(call), PollEventLoopOptions::default());
        tokio::select! {
            result = run => result,
            () = serve_answers(receiver, &link, &clock, busy_poll) => crate::exit_now(crate::EXIT_HOST_GONE),
        }
    });

    let finished = engine.runtime.op_state().borrow_mut().try_take::<Finish>();
    let outcome = classify(result.map(|_| ()), finished, &memory_trip, &clock, limits.result_bytes);
    finish(&link, outcome)
}

/// Reads tool answers until the host goes away; each answer starts a new step.
///
/// While tool calls are in flight, the program's event loop has nothing else to do
/// (it has no timers or I/O of its own), so this reader may busy-poll briefly for the
/// next answer instead of sleeping; after each answer it yields so that the program
/// runs first.
async fn serve_answers(mut receiver: protocol::channel::FromHost, link: &HostLink, clock: &StepClock, busy_poll: Duration) {
    loop {
        let budget = if link.pending.borrow().is_empty() { Duration::ZERO } else { busy_poll };
        match receiver.recv_from_host_busy_poll(budget).await {
            Ok(HostToWorker::ToolAnswer { call_id, answer }) => {
                clock.new_step();
                if let Some(waiter) = link.pending.borrow_mut().remove(&call_id) {
                    let _ = waiter.send(answer);
                }
                tokio::task::yield_now().await;
            }
            Ok(HostToWorker::Start(_)) => crate::fail("the host sent a second program"),
            Err(_) => return,
        }
    }
}

/// Decides the outcome. Limits win over whatever error the termination caused.
fn classify(
    result: Result<(), CoreError>,
    finished: Option<Finish>,
    memory: &MemoryTrip,
    clock: &StepClock,
    result_bytes: u64,
) -> WorkerOutcome {
    if memory.tripped() {
        return WorkerOutcome::MemoryLimit;
    }
    if clock.tripped() {
        return WorkerOutcome::CpuLimit;
    }
    match result {
        Ok(()) => match finished {
            Some(Finish::Undefined) => WorkerOutcome::Returned(None),
            Some(Finish::Unserializable(message)) => WorkerOutcome::Unserializable(message),
            Some(Finish::Json(text)) if text.len() as u64 > result_bytes => WorkerOutcome::ResultTooLarge { bytes: text.len() as u64 },
            Some(Finish::Json(text)) => match RawValue::from_string(text) {
                Ok(raw) => WorkerOutcome::Returned(Some(raw)),
                Err(e) => WorkerOutcome::Unserializable(format!("the returned value produced invalid JSON: {e}")),
            },
            None => WorkerOutcome::Threw(JsFailure {
                name: "Error".into(),
                message: "the program ended without a result".into(),
                stack: None,
                line: None,
                column: None,
            }),
        },
        Err(error) => match error.0.as_ref() {
            CoreErrorKind::PendingPromiseResolution => WorkerOutcome::Stuck,
            CoreErrorKind::Js(js) if is_out_of_memory(js) => WorkerOutcome::MemoryLimit,
            CoreErrorKind::Js(js) => WorkerOutcome::Threw(failure_from_js_error(js, ProgramForm::Body.line1_prefix())),
            other => WorkerOutcome::Threw(JsFailure {
                name: "Error".into(),
                message: other.to_string(),
                stack: None,
                line: None,
                column: None,
            }),
        },
    }
}

/// QuickJS reports a failed allocation as a thrown `InternalError: out of memory`.
fn is_out_of_memory(js: &deno_core::error::JsError) -> bool {
    js.name.as_deref() == Some("InternalError") && js.message.as_deref() == Some("out of memory")
}

/// Sends the outcome and exits.
fn finish(link: &HostLink, outcome: WorkerOutcome) -> ! {
    link.send(&WorkerToHost::Finished { outcome, console_dropped_bytes: link.console_dropped() });
    crate::exit_now(0)
}
