//! The per-step CPU limit: JavaScript time between two tool answers.
//!
//! The program's thread is "running" whenever it is not waiting for the host. The event
//! loop reports when it starts and stops waiting for a tool answer
//! ([`StepClock::on_park`], [`StepClock::on_unpark`]); each tool answer starts a new
//! step ([`StepClock::new_step`]). A watchdog thread wakes when the running time of the
//! current step could first reach the limit and, if it has, terminates the isolate.
//! Waiting for tools never counts; a `while (true) {}`, an endless microtask chain or a
//! blocking `Atomics.wait` always does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use deno_core::v8::IsolateHandle;

/// How long the watchdog waits for a terminated program to end by itself.
const TERMINATION_GRACE: Duration = Duration::from_millis(250);

/// Running time of the current step, shared between the program thread and the watchdog.
pub struct StepClock {
    limit: Duration,
    state: Mutex<StepState>,
    tripped: AtomicBool,
}

struct StepState {
    /// When the thread last started running, or `None` while it is parked.
    running_since: Option<Instant>,
    /// Running time of this step before `running_since`.
    used: Duration,
}

impl StepClock {
    /// A clock for steps of at most `limit`; the thread counts as running from now.
    pub fn start(limit: Duration) -> Arc<Self> {
        Arc::new(Self {
            limit,
            state: Mutex::new(StepState { running_since: Some(Instant::now()), used: Duration::ZERO }),
            tripped: AtomicBool::new(false),
        })
    }

    fn state(&self) -> MutexGuard<'_, StepState> {
        // A poisoned lock only means a panic elsewhere; the data is two plain fields.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The program thread is about to wait for the host.
    pub fn on_park(&self) {
        let mut s = self.state();
        if let Some(since) = s.running_since.take() {
            s.used += since.elapsed();
        }
    }

    /// The program thread stopped waiting.
    pub fn on_unpark(&self) {
        let mut s = self.state();
        if s.running_since.is_none() {
            s.running_since = Some(Instant::now());
        }
    }

    /// A tool answer arrived: a new step starts.
    pub fn new_step(&self) {
        let mut s = self.state();
        s.used = Duration::ZERO;
        if s.running_since.is_some() {
            s.running_since = Some(Instant::now());
        }
    }

    /// Running time of the current step so far.
    pub fn used(&self) -> Duration {
        let s = self.state();
        s.used + s.running_since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// True once the watchdog stopped the program for exceeding the limit.
    pub fn tripped(&self) -> bool {
        self.tripped.load(Ordering::Acquire)
    }

    /// Starts the watchdog thread that terminates `isolate` when a step runs too long.
    ///
    /// Returns once the thread runs: its start-up system calls (robust futex list,
    /// rseq, signal stack) are done before the worker's seccomp filter, which does not
    /// allow them, is installed.
    pub fn spawn_watchdog(self: &Arc<Self>, isolate: IsolateHandle) -> std::io::Result<()> {
        let clock = Arc::clone(self);
        let (started_tx, started_rx) = std::sync::mpsc::sync_channel::<()>(1);
        std::thread::Builder::new().name("step-watchdog".into()).stack_size(64 * 1024).spawn(move || {
            let _ = started_tx.send(());
            clock.watch(isolate)
        })?;
        started_rx.recv().map_err(|_| std::io::Error::other("the step watchdog did not start"))
    }

    fn watch(&self, isolate: IsolateHandle) -> ! {
        let clock = self;
        loop {
            let used = clock.used();
            if used >= clock.limit {
                clock.tripped.store(true, Ordering::Release);
                isolate.terminate_execution();
                // Termination takes effect at the engine's next check. A thread blocked
                // outside JavaScript (in `Atomics.wait`) never gets there: after a grace
                // period, end the process with the exit code the host reads as this limit.
                std::thread::sleep(TERMINATION_GRACE);
                crate::exit_as(protocol::worker::WorkerExit::CpuLimit);
            }
            // Running time cannot grow faster than wall time: sleep until the earliest
            // moment the limit could be reached, then look again.
            std::thread::sleep((clock.limit - used).max(Duration::from_millis(1)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parked_time_does_not_count() {
        let clock = StepClock::start(Duration::from_secs(10));
        clock.on_park();
        std::thread::sleep(Duration::from_millis(30));
        assert!(clock.used() < Duration::from_millis(20), "{:?}", clock.used());
        clock.on_unpark();
        std::thread::sleep(Duration::from_millis(30));
        assert!(clock.used() >= Duration::from_millis(30));
    }

    #[test]
    fn a_tool_answer_starts_a_new_step() {
        let clock = StepClock::start(Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
        clock.new_step();
        assert!(clock.used() < Duration::from_millis(15), "{:?}", clock.used());
        clock.on_park();
        clock.new_step();
        assert_eq!(clock.used(), Duration::ZERO);
    }
}
