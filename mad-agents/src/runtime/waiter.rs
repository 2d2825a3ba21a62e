//! How a completion reaches a thread blocked in
//! [`super::AgentRef::send_and_wait`]: through a slot of that thread's,
//! made once per thread and reused by each of its waits, instead of a
//! channel made per call.
//!
//! The runtime keeps a [`Waiter`] (in `Core::waiters`, or handing it over
//! on the loop thread); the waiting thread holds the [`WaitSlot`]. The
//! waiter fills the slot once ([`Waiter::send`]); dropped unfilled (the
//! loop ended, or the thread took the completion itself) it closes the
//! slot. Each wait has its own generation: a waiter of an earlier wait of
//! the same thread, dropped late, touches nothing.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::types::Completion;

/// Locks `m`, whatever a panicking holder left behind.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Default)]
enum State {
    /// Nothing yet.
    #[default]
    Empty,
    /// The completion.
    Done(Completion),
    /// The runtime dropped the waiter unfilled.
    Closed,
}

#[derive(Default)]
struct Slot {
    /// The generation of the wait in progress, and its state.
    state: Mutex<(u64, State)>,
    cond: Condvar,
}

thread_local! {
    /// This thread's slot, reused by each of its waits (a thread waits
    /// for one completion at a time).
    static SLOT: Arc<Slot> = Arc::default();
}

/// The waiting thread's end of a wait.
pub(super) struct WaitSlot {
    slot: Arc<Slot>,
    generation: u64,
}

/// What [`WaitSlot::try_recv`] found.
#[derive(Debug)]
#[cfg_attr(not(test), allow(dead_code))]
pub(super) enum Taken {
    /// The completion.
    Done(Completion),
    /// Not yet.
    Empty,
    /// The waiter was dropped unfilled.
    Closed,
}

/// The runtime's end of a wait: fills the slot once, or closes it when
/// dropped unfilled.
pub(super) struct Waiter {
    slot: Option<Arc<Slot>>,
    generation: u64,
}

/// Starts a wait on this thread's slot.
pub(super) fn wait() -> (WaitSlot, Waiter) {
    // During the thread's teardown (a wait from a thread-local's drop) a
    // slot of its own.
    let slot = SLOT.try_with(Arc::clone).unwrap_or_default();
    {
        let slot = &slot;
        let generation = {
            let mut st = lock(&slot.state);
            st.0 = st.0.wrapping_add(1);
            st.1 = State::Empty;
            st.0
        };
        (
            WaitSlot {
                slot: slot.clone(),
                generation,
            },
            Waiter {
                slot: Some(slot.clone()),
                generation,
            },
        )
    }
}

impl Waiter {
    /// Hands `c` to the waiting thread.
    pub(super) fn send(mut self, c: Completion) {
        self.settle(State::Done(c));
    }

    fn settle(&mut self, to: State) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        let mut st = lock(&slot.state);
        if st.0 == self.generation && matches!(st.1, State::Empty) {
            st.1 = to;
            slot.cond.notify_all();
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.settle(State::Closed);
    }
}

impl WaitSlot {
    fn take(&self, st: &mut (u64, State)) -> Taken {
        if st.0 != self.generation {
            return Taken::Closed;
        }
        match std::mem::take(&mut st.1) {
            State::Empty => Taken::Empty,
            State::Done(c) => Taken::Done(c),
            State::Closed => {
                st.1 = State::Closed;
                Taken::Closed
            }
        }
    }

    /// What the slot holds now (the completion is taken out).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) fn try_recv(&self) -> Taken {
        self.take(&mut lock(&self.slot.state))
    }

    /// Blocks until the completion comes (`None`: the waiter was dropped
    /// unfilled).
    pub(super) fn recv(&self) -> Option<Completion> {
        let mut st = lock(&self.slot.state);
        loop {
            match self.take(&mut st) {
                Taken::Done(c) => return Some(c),
                Taken::Closed => return None,
                Taken::Empty => {
                    st = self
                        .slot
                        .cond
                        .wait(st)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_dropped_unfilled_closes_its_wait_and_a_stale_one_touches_nothing() {
        let (first, stale) = wait();
        // The same thread's next wait reuses the slot.
        let (rx, tx) = wait();
        assert!(matches!(first.try_recv(), Taken::Closed), "a wait replaced");
        // A waiter of the earlier wait, dropped late.
        drop(stale);
        assert!(matches!(rx.try_recv(), Taken::Empty));
        drop(tx);
        assert!(matches!(rx.try_recv(), Taken::Closed));
        assert!(rx.recv().is_none());
    }

    #[test]
    fn each_thread_waits_on_a_slot_of_its_own() {
        let (rx, _tx) = wait();
        std::thread::spawn(|| {
            let (other, tx) = wait();
            drop(tx);
            assert!(matches!(other.try_recv(), Taken::Closed));
        })
        .join()
        .unwrap();
        assert!(matches!(rx.try_recv(), Taken::Empty));
    }
}
