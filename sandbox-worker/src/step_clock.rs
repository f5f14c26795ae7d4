//! The per-step CPU limit: JavaScript time between two tool answers.
//!
//! A step's time is the **CPU time of the program's thread** (its kernel CPU clock), so
//! a program descheduled on a loaded machine is never charged for the time it did not
//! run. The event loop reports when it starts and stops waiting for a tool answer
//! ([`StepClock::on_park`], [`StepClock::on_unpark`]): CPU time spent while parked (the
//! short busy poll for the next answer) does not count. Each tool answer starts a new
//! step ([`StepClock::new_step`]). A thread blocked inside JavaScript uses no CPU, so the
//! one way to block there, `Atomics.wait`, is wrapped by both runtimes
//! (`common.js`'s `wrapAtomicsWait`) to report [`StepClock::on_block`] and
//! [`StepClock::on_unblock`]: while blocked, wall time counts as running time.
//!
//! A watchdog thread wakes when the step could first reach the limit and, if it has,
//! terminates the isolate. Waiting for tools never counts; a `while (true) {}`, an
//! endless microtask chain or a blocking `Atomics.wait` always does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use deno_core::v8::IsolateHandle;

/// How long the watchdog waits for a terminated program to end by itself.
const TERMINATION_GRACE: Duration = Duration::from_millis(250);

/// The CPU clock of one thread, readable from any thread of the process.
#[derive(Debug, Clone, Copy)]
pub struct ThreadCpuClock(libc::clockid_t);

impl ThreadCpuClock {
    /// The calling thread's clock.
    ///
    /// The kernel names a thread's CPU clock `(!tid << 3) | CPUCLOCK_PERTHREAD |
    /// CPUCLOCK_SCHED` (`include/linux/posix-timers.h`; the encoding glibc's
    /// `pthread_getcpuclockid` uses). The tid is asked of the kernel, not read from
    /// glibc's cache: a worker forked by a raw clone(2) still has the template's there.
    pub fn current() -> Self {
        const CPUCLOCK_PERTHREAD: libc::clockid_t = 4;
        const CPUCLOCK_SCHED: libc::clockid_t = 2;
        // SAFETY: gettid(2) has no arguments and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::clockid_t;
        Self((!tid << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED)
    }

    /// CPU time the thread has used so far (zero if the clock cannot be read, which
    /// only happens once the thread is gone).
    pub fn now(self) -> Duration {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes one timespec we own.
        if unsafe { libc::clock_gettime(self.0, &mut ts) } != 0 {
            return Duration::ZERO;
        }
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}

/// Running time of the current step, shared between the program thread and the watchdog.
pub struct StepClock {
    limit: Duration,
    cpu: ThreadCpuClock,
    state: Mutex<StepState>,
    tripped: AtomicBool,
}

/// What the program thread is doing, as far as the step clock is concerned.
#[derive(Debug, Clone, Copy)]
enum Activity {
    /// Running JavaScript since the thread's CPU clock read this.
    Running { cpu_since: Duration },
    /// Blocked inside JavaScript (`Atomics.wait`) since then: wall time counts.
    Blocked { since: Instant },
    /// Waiting for the host: nothing counts.
    Parked,
}

struct StepState {
    activity: Activity,
    /// Running time of this step before the current activity began.
    used: Duration,
}

impl StepClock {
    /// A clock for steps of at most `limit`, measuring the calling thread, which counts
    /// as running from now.
    pub fn start(limit: Duration) -> Arc<Self> {
        let cpu = ThreadCpuClock::current();
        Arc::new(Self {
            limit,
            cpu,
            state: Mutex::new(StepState { activity: Activity::Running { cpu_since: cpu.now() }, used: Duration::ZERO }),
            tripped: AtomicBool::new(false),
        })
    }

    fn state(&self) -> MutexGuard<'_, StepState> {
        // A poisoned lock only means a panic elsewhere; the data is two plain fields.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Time the current activity has added to the step so far.
    fn activity_time(&self, activity: Activity) -> Duration {
        match activity {
            Activity::Running { cpu_since } => self.cpu.now().saturating_sub(cpu_since),
            Activity::Blocked { since } => since.elapsed(),
            Activity::Parked => Duration::ZERO,
        }
    }

    /// Ends the current activity (adding its time) and starts `next`.
    fn switch(&self, next: Activity) {
        let mut s = self.state();
        let spent = self.activity_time(s.activity);
        s.used += spent;
        s.activity = next;
    }

    /// The program thread is about to wait for the host.
    pub fn on_park(&self) {
        self.switch(Activity::Parked);
    }

    /// The program thread stopped waiting.
    pub fn on_unpark(&self) {
        self.switch(Activity::Running { cpu_since: self.cpu.now() });
    }

    /// The program thread is about to block inside JavaScript (`Atomics.wait`).
    pub fn on_block(&self) {
        self.switch(Activity::Blocked { since: Instant::now() });
    }

    /// The program thread is back from blocking.
    pub fn on_unblock(&self) {
        self.switch(Activity::Running { cpu_since: self.cpu.now() });
    }

    /// What `Atomics.wait`'s wrapper reports through either runtime's op: the thread is
    /// about to block (`true`) or is back (`false`). Does nothing before the runtime's
    /// clock exists (`state` holds it as an `Arc<StepClock>`).
    pub fn report_blocking(state: &deno_core::OpState, blocking: bool) {
        if let Some(clock) = state.try_borrow::<Arc<StepClock>>() {
            if blocking {
                clock.on_block();
            } else {
                clock.on_unblock();
            }
        }
    }

    /// A tool answer arrived: a new step starts.
    pub fn new_step(&self) {
        let mut s = self.state();
        s.used = Duration::ZERO;
        s.activity = match s.activity {
            Activity::Running { .. } => Activity::Running { cpu_since: self.cpu.now() },
            Activity::Blocked { .. } => Activity::Blocked { since: Instant::now() },
            Activity::Parked => Activity::Parked,
        };
    }

    /// Running time of the current step so far.
    pub fn used(&self) -> Duration {
        let s = self.state();
        s.used + self.activity_time(s.activity)
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

    /// Burns CPU on the calling thread until `clock` has used `at_least` of it.
    fn spin_until(at_least: Duration, used: impl Fn() -> Duration) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while used() < at_least {
            assert!(Instant::now() < deadline, "the clock never reached {at_least:?}");
            std::hint::black_box((0..1000u64).sum::<u64>());
        }
    }

    #[test]
    fn running_counts_cpu_time_and_sleeping_does_not() {
        let clock = StepClock::start(Duration::from_secs(10));
        let before = clock.used();
        // A descheduled or sleeping thread uses no CPU: it is not charged.
        std::thread::sleep(Duration::from_millis(60));
        assert!(clock.used() - before < Duration::from_millis(10), "{:?}", clock.used());
        spin_until(Duration::from_millis(40), || clock.used());
    }

    #[test]
    fn another_threads_cpu_time_does_not_count() {
        let clock = StepClock::start(Duration::from_secs(10));
        let before = clock.used();
        std::thread::spawn(|| {
            let own = ThreadCpuClock::current();
            spin_until(Duration::from_millis(60), || own.now());
        })
        .join()
        .unwrap();
        assert!(clock.used() - before < Duration::from_millis(10), "{:?}", clock.used());
    }

    #[test]
    fn parked_time_does_not_count_even_when_spinning() {
        let clock = StepClock::start(Duration::from_secs(10));
        clock.on_park();
        let parked = clock.used();
        let own = ThreadCpuClock::current();
        let start = own.now();
        spin_until(Duration::from_millis(30), || own.now() - start);
        assert_eq!(clock.used(), parked);
        clock.on_unpark();
        spin_until(parked + Duration::from_millis(20), || clock.used());
    }

    #[test]
    fn blocked_time_counts_as_wall_time() {
        let clock = StepClock::start(Duration::from_secs(10));
        clock.on_block();
        std::thread::sleep(Duration::from_millis(40));
        assert!(clock.used() >= Duration::from_millis(40), "{:?}", clock.used());
        clock.on_unblock();
        let after = clock.used();
        std::thread::sleep(Duration::from_millis(30));
        assert!(clock.used() - after < Duration::from_millis(10), "{:?}", clock.used());
    }

    #[test]
    fn a_tool_answer_starts_a_new_step() {
        let clock = StepClock::start(Duration::from_secs(10));
        spin_until(Duration::from_millis(20), || clock.used());
        clock.new_step();
        assert!(clock.used() < Duration::from_millis(15), "{:?}", clock.used());
        clock.on_park();
        clock.new_step();
        assert_eq!(clock.used(), Duration::ZERO);
    }
}
