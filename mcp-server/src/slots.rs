//! Program slots shared fairly between MCP sessions: `[server]
//! max_concurrent_programs` programs run at once, no session can hold them all, and a
//! program waiting for a person's answer holds none.
//!
//! The rules, decided by [`SlotsState`] alone (pure, unit-tested) and applied by
//! [`ProgramSlots`] and each program's [`Seat`]:
//! - a session runs at most `per_session` programs at once (under `codemode serve`,
//!   [`per_session_cap`] leaves a quarter of the slots to the other sessions; a stdio
//!   server has one session and lets it use them all). A 2026-07-28 client has no
//!   session: its programs share one by its credential
//!   ([`super::rounds::Binding::slots_session`]);
//! - a freed slot goes to the waiting session that runs the fewest programs (the
//!   earliest among equals), so a session that queued many programs cannot starve one
//!   that queued a single program after it;
//! - a program that asks a person something **pauses** ([`Seat::pause`]): it gives its
//!   slot back while it waits (its worker stays, idle), so paused programs never keep
//!   other programs from running. Paused programs are counted apart, under their own
//!   caps: `max_paused_programs` in all and `max_paused_programs_per_session` per
//!   session ([`PausedCaps`]). A question that would pause a program beyond either cap
//!   is not asked: the pause is refused ([`PauseRefused`]) and the program's call
//!   rejects with that message;
//! - when the answer comes, the program **resumes** ([`Seat::resume`]): it waits for a
//!   slot like a new program (the same fairness), and counts as paused until it has
//!   one, so workers never number more than the slots plus the paused cap.
//!
//! A paused program's worker still runs whatever JavaScript does not wait for the
//! answer; that time is bounded by the `cpu_step` limit (JavaScript time between two
//! tool answers) and its wall clock.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The most programs one session may run at once when `total` may run in all and
/// several sessions share them: three quarters of the slots (at least one), so that
/// other sessions always find room. The same share bounds one session's paused
/// programs.
pub fn per_session_cap(total: usize) -> usize {
    let total = total.max(1);
    (total - (total / 4).max(1)).max(1)
}

/// How many programs may wait for a person's answer at once: in all, and per session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PausedCaps {
    /// Paused programs of the whole server.
    pub total: usize,
    /// Paused programs of one session.
    pub per_session: usize,
}

/// Why a program may not pause for a person's answer (the question is not asked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PauseRefused {
    /// The server's cap.
    #[error("{cap} programs are already waiting for a person's answer on this server, the most `[server] max_paused_programs` allows, so this question was not asked; answer or end one of them, then run this again")]
    Server {
        /// The cap.
        cap: usize,
    },
    /// The session's cap.
    #[error("this client already has {cap} programs waiting for a person's answer, the most `[server] max_paused_programs_per_session` allows, so this question was not asked; answer or end one of them, then run this again")]
    Session {
        /// The cap.
        cap: usize,
    },
}

/// What a waiter for a slot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// A program that has not started.
    New,
    /// A paused program whose answer came (counted as paused until it has its slot).
    Resuming,
}

/// Who waits for a slot.
struct Waiter {
    session: u64,
    arrival: Arrival,
    wake: oneshot::Sender<()>,
}

/// The slots' bookkeeping: free slots, programs running and paused per session, and
/// the queue.
struct SlotsState {
    free: usize,
    per_session: usize,
    running: HashMap<u64, usize>,
    waiting: VecDeque<Waiter>,
    paused_caps: PausedCaps,
    paused: HashMap<u64, usize>,
    paused_total: usize,
}

impl SlotsState {
    fn new(total: usize, per_session: usize, paused: PausedCaps) -> Self {
        let paused_total = paused.total.max(1);
        Self {
            free: total.max(1),
            per_session: per_session.clamp(1, total.max(1)),
            running: HashMap::new(),
            waiting: VecDeque::new(),
            paused_caps: PausedCaps { total: paused_total, per_session: paused.per_session.clamp(1, paused_total) },
            paused: HashMap::new(),
            paused_total: 0,
        }
    }

    fn running(&self, session: u64) -> usize {
        self.running.get(&session).copied().unwrap_or(0)
    }

    fn paused(&self, session: u64) -> usize {
        self.paused.get(&session).copied().unwrap_or(0)
    }

    /// True when `session` may take a slot now.
    fn may_take(&self, session: u64) -> bool {
        self.free > 0 && self.running(session) < self.per_session
    }

    fn take(&mut self, session: u64) {
        self.free -= 1;
        *self.running.entry(session).or_default() += 1;
    }

    fn give_back(&mut self, session: u64) {
        self.free += 1;
        if let Some(n) = self.running.get_mut(&session) {
            *n -= 1;
            if *n == 0 {
                self.running.remove(&session);
            }
        }
    }

    /// A running program of `session` pauses for a person's answer: its slot is given
    /// back (and granted to a waiter), and it counts as paused; refused beyond either
    /// cap of paused programs, the program keeping its slot.
    fn pause(&mut self, session: u64) -> Result<(), PauseRefused> {
        if self.paused_total >= self.paused_caps.total {
            return Err(PauseRefused::Server { cap: self.paused_caps.total });
        }
        if self.paused(session) >= self.paused_caps.per_session {
            return Err(PauseRefused::Session { cap: self.paused_caps.per_session });
        }
        self.paused_total += 1;
        *self.paused.entry(session).or_default() += 1;
        self.give_back(session);
        self.grant();
        Ok(())
    }

    /// A paused program of `session` no longer counts as paused (it has its slot back,
    /// or it ended).
    fn unpause(&mut self, session: u64) {
        if let Some(n) = self.paused.get_mut(&session) {
            self.paused_total -= 1;
            *n -= 1;
            if *n == 0 {
                self.paused.remove(&session);
            }
        }
    }

    /// Hands free slots to waiters: each time, the waiting session with the fewest
    /// programs running (the earliest among equals) that may take one. Waiters that
    /// gave up (their receiver is gone) leave the queue.
    fn grant(&mut self) {
        self.waiting.retain(|w| !w.wake.is_closed());
        loop {
            let best = self
                .waiting
                .iter()
                .enumerate()
                .filter(|(_, w)| self.may_take(w.session))
                .min_by_key(|(i, w)| (self.running(w.session), *i))
                .map(|(i, _)| i);
            let Some(waiter) = best.and_then(|i| self.waiting.remove(i)) else { return };
            self.take(waiter.session);
            if waiter.arrival == Arrival::Resuming {
                self.unpause(waiter.session);
            }
            if waiter.wake.send(()).is_err() {
                // Cannot happen under the lock (closed receivers left the queue), but
                // stay exact: the slot goes back, a resuming waiter stays paused.
                self.give_back(waiter.session);
                if waiter.arrival == Arrival::Resuming {
                    self.paused_total += 1;
                    *self.paused.entry(waiter.session).or_default() += 1;
                }
            }
        }
    }
}

/// The program slots of one server.
pub struct ProgramSlots {
    state: Arc<Mutex<SlotsState>>,
}

/// What a program's [`Seat`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Nothing (not started yet, or its wait was abandoned).
    Nothing,
    /// A slot: the program runs.
    Slot,
    /// A place among the paused programs: the program waits for a person's answer.
    Paused,
}

/// One program's claim on the slots: a slot while it runs, a place among the paused
/// programs while it waits for a person. Whatever it holds is given back when dropped.
pub struct Seat {
    state: Arc<Mutex<SlotsState>>,
    session: u64,
    held: tokio::sync::Mutex<Held>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        let held = *self.held.get_mut();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match held {
            Held::Nothing => {}
            Held::Slot => state.give_back(self.session),
            Held::Paused => state.unpause(self.session),
        }
        state.grant();
    }
}

impl ProgramSlots {
    /// `total` slots, at most `per_session` of them for one session, and room for
    /// `paused` programs waiting for a person's answer.
    pub fn new(total: usize, per_session: usize, paused: PausedCaps) -> Self {
        Self { state: Arc::new(Mutex::new(SlotsState::new(total, per_session, paused))) }
    }

    /// A seat for a program of `session`, holding nothing yet ([`Seat::take`] waits
    /// for its slot).
    pub fn seat(&self, session: u64) -> Arc<Seat> {
        Arc::new(Seat { state: Arc::clone(&self.state), session, held: tokio::sync::Mutex::new(Held::Nothing) })
    }

    /// A seat for a program of `session`, with its slot (waits for one).
    pub async fn acquire(&self, session: u64) -> Arc<Seat> {
        let seat = self.seat(session);
        seat.take().await;
        seat
    }
}

impl Seat {
    /// Waits for a slot for a program that has not started (dropping the future leaves
    /// the queue, and gives back a slot granted to it meanwhile).
    pub async fn take(&self) {
        let mut held = self.held.lock().await;
        if *held == Held::Nothing {
            wait_for_slot(&self.state, self.session, Arrival::New).await;
            *held = Held::Slot;
        }
    }

    /// The program waits for a person's answer: its slot is given back and it counts
    /// as paused, or, beyond the caps of paused programs, the pause is refused (the
    /// program keeps its slot, and its question must not be asked). A program already
    /// paused (for another question) stays paused, counted once.
    pub async fn pause(&self) -> Result<(), PauseRefused> {
        let mut held = self.held.lock().await;
        if *held == Held::Slot {
            self.state.lock().unwrap_or_else(|p| p.into_inner()).pause(self.session)?;
            *held = Held::Paused;
        }
        Ok(())
    }

    /// The answer came (or the wait for it ended): a paused program waits for a slot
    /// before it goes on. Dropping the future (the program ends meanwhile) gives back
    /// what it held.
    pub async fn resume(&self) {
        let mut held = self.held.lock().await;
        if *held == Held::Paused {
            // From here the waiter's guard owns the pause: given back if dropped.
            *held = Held::Nothing;
            wait_for_slot(&self.state, self.session, Arrival::Resuming).await;
            *held = Held::Slot;
        }
    }
}

/// Waits for a slot for `session` (a new program, or a paused one resuming); dropping
/// the future leaves the queue and gives back whatever the waiter held.
async fn wait_for_slot(state: &Arc<Mutex<SlotsState>>, session: u64, arrival: Arrival) {
    let woken = {
        let mut slots = state.lock().unwrap_or_else(|p| p.into_inner());
        if slots.waiting.is_empty() && slots.may_take(session) {
            slots.take(session);
            if arrival == Arrival::Resuming {
                slots.unpause(session);
            }
            None
        } else {
            let (wake, woken) = oneshot::channel();
            slots.waiting.push_back(Waiter { session, arrival, wake });
            // A slot may be free for this session while others wait for theirs.
            slots.grant();
            Some(woken)
        }
    };
    if let Some(woken) = woken {
        let mut pending = Pending { state: Arc::clone(state), session, arrival, woken: Some(woken) };
        if let Some(woken) = pending.woken.as_mut() {
            // Sent only once a slot was taken for this waiter.
            let _ = woken.await;
        }
        pending.woken = None;
    }
}

/// A waiter's place in the queue while its future lives.
struct Pending {
    state: Arc<Mutex<SlotsState>>,
    session: u64,
    arrival: Arrival,
    woken: Option<oneshot::Receiver<()>>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(mut woken) = self.woken.take() else { return };
        // Under the lock, so no slot is granted between the check and the drop: a
        // grant sends only while holding it, and a closed receiver is never granted.
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let granted = woken.try_recv().is_ok();
        drop(woken);
        if granted {
            // Its slot (a resuming waiter was no longer counted as paused).
            state.give_back(self.session);
            state.grant();
        } else if self.arrival == Arrival::Resuming {
            state.unpause(self.session);
        }
        drop(state);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;

    fn caps(total: usize, per_session: usize) -> PausedCaps {
        PausedCaps { total, per_session }
    }

    #[test]
    fn a_quarter_of_the_slots_stays_for_other_sessions() {
        assert_eq!(per_session_cap(1), 1);
        assert_eq!(per_session_cap(2), 1);
        assert_eq!(per_session_cap(4), 3);
        assert_eq!(per_session_cap(8), 6);
        assert_eq!(per_session_cap(16), 12);
    }

    #[test]
    fn a_paused_program_gives_its_slot_back_and_counts_under_its_own_caps() {
        let mut s = SlotsState::new(2, 2, caps(3, 2));
        s.take(1);
        s.take(1);
        assert!(!s.may_take(2), "session 1 runs on every slot");
        s.pause(1).unwrap();
        assert_eq!((s.free, s.running(1), s.paused(1), s.paused_total), (1, 1, 1, 1));
        assert!(s.may_take(2), "a paused program's slot serves another session");
        s.pause(1).unwrap();
        assert_eq!((s.free, s.running(1), s.paused(1)), (2, 0, 2));
        // Beyond the session's cap: refused, and the program keeps its slot.
        s.take(1);
        assert_eq!(s.pause(1), Err(PauseRefused::Session { cap: 2 }));
        assert_eq!((s.free, s.running(1), s.paused(1)), (1, 1, 2));
        // Beyond the server's cap: refused for every session.
        s.take(2);
        s.pause(2).unwrap();
        s.take(2);
        assert_eq!(s.pause(2), Err(PauseRefused::Server { cap: 3 }));
        assert_eq!((s.free, s.running(2), s.paused(2), s.paused_total), (0, 1, 1, 3));
        // An ended paused program makes room.
        s.unpause(1);
        s.pause(2).unwrap();
        assert_eq!((s.free, s.running(2), s.paused(2), s.paused_total), (1, 0, 2, 3));
    }

    #[test]
    fn a_resuming_program_waits_for_a_slot_and_counts_as_paused_until_it_has_one() {
        let mut s = SlotsState::new(1, 1, caps(2, 2));
        s.take(1);
        s.pause(1).unwrap();
        // Another session's program takes the slot the paused one gave back.
        assert!(s.may_take(2));
        s.take(2);
        let (wake, mut woken) = oneshot::channel();
        s.waiting.push_back(Waiter { session: 1, arrival: Arrival::Resuming, wake });
        s.grant();
        assert!(woken.try_recv().is_err(), "no slot is free");
        assert_eq!((s.paused(1), s.paused_total), (1, 1));
        s.give_back(2);
        s.grant();
        assert!(woken.try_recv().is_ok(), "the freed slot goes to the resuming program");
        assert_eq!((s.free, s.running(1), s.paused(1), s.paused_total), (0, 1, 0, 0));
    }

    #[test]
    fn caps_are_at_least_one_and_a_session_never_exceeds_the_servers() {
        let s = SlotsState::new(0, 0, caps(0, 0));
        assert_eq!((s.free, s.per_session, s.paused_caps), (1, 1, caps(1, 1)));
        let s = SlotsState::new(4, 9, caps(3, 9));
        assert_eq!((s.per_session, s.paused_caps), (4, caps(3, 3)));
    }

    #[test]
    fn refused_pauses_say_which_cap_and_what_to_do() {
        assert_eq!(
            PauseRefused::Server { cap: 16 }.to_string(),
            "16 programs are already waiting for a person's answer on this server, the most `[server] max_paused_programs` allows, so this question was not asked; answer or end one of them, then run this again"
        );
        assert_eq!(
            PauseRefused::Session { cap: 12 }.to_string(),
            "this client already has 12 programs waiting for a person's answer, the most `[server] max_paused_programs_per_session` allows, so this question was not asked; answer or end one of them, then run this again"
        );
    }

    #[tokio::test]
    async fn one_session_cannot_hold_every_slot_and_freed_slots_go_to_the_least_served() {
        let slots = ProgramSlots::new(4, 3, caps(4, 4));
        let mut hog = Vec::new();
        for _ in 0..3 {
            hog.push(slots.acquire(1).await);
        }
        // The hog's fourth waits; another session gets the last slot at once.
        let fourth = tokio::spawn({
            let state = Arc::clone(&slots.state);
            async move { ProgramSlots { state }.acquire(1).await }
        });
        tokio::task::yield_now().await;
        let other = tokio::time::timeout(Duration::from_millis(200), slots.acquire(2)).await;
        let other = other.expect("another session is served while the hog holds its share");
        // A third session queues behind the hog's fourth, but gets the next free slot:
        // it runs nothing, the hog runs three.
        let third = tokio::spawn({
            let state = Arc::clone(&slots.state);
            async move { ProgramSlots { state }.acquire(3).await }
        });
        tokio::task::yield_now().await;
        drop(other);
        let third = tokio::time::timeout(Duration::from_millis(200), third).await.unwrap().unwrap();
        assert!(!fourth.is_finished(), "the hog still waits: it runs its share");
        drop(hog.pop());
        let fourth = tokio::time::timeout(Duration::from_millis(200), fourth).await.unwrap().unwrap();
        drop((third, fourth, hog));
        let state = slots.state.lock().unwrap();
        assert_eq!((state.free, state.running.len(), state.waiting.len()), (4, 0, 0));
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_the_queue() {
        let slots = ProgramSlots::new(1, 1, caps(1, 1));
        let held = slots.acquire(1).await;
        let gave_up = tokio::time::timeout(Duration::from_millis(20), slots.acquire(2)).await;
        assert!(gave_up.is_err());
        drop(held);
        let next = tokio::time::timeout(Duration::from_millis(200), slots.acquire(3)).await;
        assert!(next.is_ok(), "the slot went to a living waiter");
        drop(next);
        assert_eq!(slots.state.lock().unwrap().free, 1);
    }

    #[tokio::test]
    async fn a_seat_pauses_resumes_and_gives_back_all_it_holds() {
        let slots = ProgramSlots::new(1, 1, caps(2, 2));
        let asking = slots.acquire(1).await;
        asking.pause().await.unwrap();
        asking.pause().await.unwrap();
        assert_eq!(slots.state.lock().unwrap().paused_total, 1, "a program pauses once for its questions");
        // Its slot serves another session's program meanwhile.
        let other = tokio::time::timeout(Duration::from_millis(200), slots.acquire(2)).await.unwrap();
        // The answer comes: the paused program waits for the slot, then goes on.
        let resumed = tokio::spawn({
            let asking = Arc::clone(&asking);
            async move { asking.resume().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!resumed.is_finished(), "the slot is taken");
        drop(other);
        tokio::time::timeout(Duration::from_millis(200), resumed).await.unwrap().unwrap();
        assert_eq!(*asking.held.lock().await, Held::Slot);
        // Paused again, then ended while paused; and a resume abandoned while waiting.
        asking.pause().await.unwrap();
        drop(asking);
        let running = slots.acquire(3).await;
        let waiting = slots.acquire(4);
        let abandoned = tokio::time::timeout(Duration::from_millis(20), waiting).await;
        assert!(abandoned.is_err());
        running.pause().await.unwrap();
        let blocker = slots.acquire(5).await;
        assert!(tokio::time::timeout(Duration::from_millis(20), running.resume()).await.is_err());
        drop((running, blocker));
        let state = slots.state.lock().unwrap();
        assert_eq!((state.free, state.running.len(), state.paused_total, state.paused.len()), (1, 0, 0, 0));
    }
}
