//! Program slots shared fairly between MCP sessions: `[server]
//! max_concurrent_programs` programs run at once, and no session can hold them all.
//!
//! The rules, decided by [`SlotsState`] alone (pure, unit-tested) and applied by
//! [`ProgramSlots`]:
//! - a session runs at most `per_session` programs at once (under `codemode serve`,
//!   [`per_session_cap`] leaves a quarter of the slots to the other sessions; a stdio
//!   server has one session and lets it use them all);
//! - a freed slot goes to the waiting session that runs the fewest programs (the
//!   earliest among equals), so a session that queued many programs cannot starve one
//!   that queued a single program after it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The most programs one session may run at once when `total` may run in all and
/// several sessions share them: three quarters of the slots (at least one), so that
/// other sessions always find room.
pub fn per_session_cap(total: usize) -> usize {
    let total = total.max(1);
    (total - (total / 4).max(1)).max(1)
}

/// Who waits for a slot.
struct Waiter {
    session: u64,
    wake: oneshot::Sender<()>,
}

/// The slots' bookkeeping: free slots, programs running per session, and the queue.
struct SlotsState {
    free: usize,
    per_session: usize,
    running: HashMap<u64, usize>,
    waiting: VecDeque<Waiter>,
}

impl SlotsState {
    fn running(&self, session: u64) -> usize {
        self.running.get(&session).copied().unwrap_or(0)
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
            if waiter.wake.send(()).is_err() {
                self.give_back(waiter.session);
            }
        }
    }
}

/// The program slots of one server.
pub struct ProgramSlots {
    state: Arc<Mutex<SlotsState>>,
}

/// A slot, given back when dropped.
pub struct Slot {
    state: Arc<Mutex<SlotsState>>,
    session: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.give_back(self.session);
        state.grant();
    }
}

impl ProgramSlots {
    /// `total` slots, at most `per_session` of them for one session.
    pub fn new(total: usize, per_session: usize) -> Self {
        let state = SlotsState {
            free: total.max(1),
            per_session: per_session.clamp(1, total.max(1)),
            running: HashMap::new(),
            waiting: VecDeque::new(),
        };
        Self { state: Arc::new(Mutex::new(state)) }
    }

    /// Waits for a slot for `session` (dropping the future leaves the queue, and gives
    /// back a slot granted to it meanwhile).
    pub async fn acquire(&self, session: u64) -> Slot {
        let woken = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.waiting.is_empty() && state.may_take(session) {
                state.take(session);
                None
            } else {
                let (wake, woken) = oneshot::channel();
                state.waiting.push_back(Waiter { session, wake });
                // A slot may be free for this session while others wait for theirs.
                state.grant();
                Some(woken)
            }
        };
        if let Some(woken) = woken {
            let mut pending = Pending { state: Arc::clone(&self.state), session, woken: Some(woken) };
            if let Some(woken) = pending.woken.as_mut() {
                // Sent only once a slot was taken for this waiter.
                let _ = woken.await;
            }
            pending.woken = None;
        }
        Slot { state: Arc::clone(&self.state), session }
    }
}

/// A waiter's place in the queue while its future lives.
struct Pending {
    state: Arc<Mutex<SlotsState>>,
    session: u64,
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
            state.give_back(self.session);
            state.grant();
        }
        drop(state);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_quarter_of_the_slots_stays_for_other_sessions() {
        assert_eq!(per_session_cap(1), 1);
        assert_eq!(per_session_cap(2), 1);
        assert_eq!(per_session_cap(4), 3);
        assert_eq!(per_session_cap(8), 6);
        assert_eq!(per_session_cap(16), 12);
    }

    #[tokio::test]
    async fn one_session_cannot_hold_every_slot_and_freed_slots_go_to_the_least_served() {
        let slots = ProgramSlots::new(4, 3);
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
        let other = tokio::time::timeout(std::time::Duration::from_millis(200), slots.acquire(2)).await;
        let other = other.expect("another session is served while the hog holds its share");
        // A third session queues behind the hog's fourth, but gets the next free slot:
        // it runs nothing, the hog runs three.
        let third = tokio::spawn({
            let state = Arc::clone(&slots.state);
            async move { ProgramSlots { state }.acquire(3).await }
        });
        tokio::task::yield_now().await;
        drop(other);
        let third = tokio::time::timeout(std::time::Duration::from_millis(200), third).await.unwrap().unwrap();
        assert!(!fourth.is_finished(), "the hog still waits: it runs its share");
        drop(hog.pop());
        let fourth = tokio::time::timeout(std::time::Duration::from_millis(200), fourth).await.unwrap().unwrap();
        drop((third, fourth, hog));
        let state = slots.state.lock().unwrap();
        assert_eq!((state.free, state.running.len(), state.waiting.len()), (4, 0, 0));
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_the_queue() {
        let slots = ProgramSlots::new(1, 1);
        let held = slots.acquire(1).await;
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(20), slots.acquire(2)).await;
        assert!(gave_up.is_err());
        drop(held);
        let next = tokio::time::timeout(std::time::Duration::from_millis(200), slots.acquire(3)).await;
        assert!(next.is_ok(), "the slot went to a living waiter");
        drop(next);
        assert_eq!(slots.state.lock().unwrap().free, 1);
    }
}
