//! A channel agent's channel: one queue that the loop thread and the
//! receiving thread's own drives fill, in delivery order, and that the
//! receiver empties a batch at a time.
//!
//! What `std::sync::mpsc` did here, with two differences that matter on
//! the fast path ([`super::caller`]): a drive that takes a batch of the
//! agent's events puts them in under one lock ([`Fill`]) instead of one
//! send each, and the receiver takes everything queued under one lock
//! into a buffer of its own, from which the next events come without any
//! synchronisation. The order stays the delivery order: the shared queue
//! is the one place events enter, and the receiver's buffer only ever
//! holds a prefix of it, taken in order. A sender wakes the receiver only
//! if it is blocked (no system call per event otherwise). Dropping the
//! sender (the agent's sink goes) closes the channel: the receiver then
//! gets what is left, then [`TryRecvError::Disconnected`].

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::mpsc::TryRecvError;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use super::waiter::lock;
use crate::types::AgentEvent;

#[derive(Default)]
struct State {
    events: VecDeque<AgentEvent>,
    /// The sender is gone.
    closed: bool,
    /// The receiver is blocked on `cond`.
    waiting: bool,
}

#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    cond: Condvar,
}

/// The sending end (in the agent's sink); dropping it closes the channel.
pub(super) struct Sender(Arc<Queue>);

/// The receiving end.
pub(super) struct Receiver {
    queue: Arc<Queue>,
    /// Events taken out of the queue, in order, not yet handed out.
    taken: RefCell<VecDeque<AgentEvent>>,
    /// The model test's deliberate bug
    /// ([`super::shared::Deviation::QueueBeforeTaken`]).
    #[cfg(test)]
    pub(super) queue_first: bool,
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("taken", &self.taken.borrow().len())
            .finish_non_exhaustive()
    }
}

/// A new channel.
pub(super) fn channel() -> (Sender, Receiver) {
    let queue = Arc::new(Queue::default());
    (
        Sender(queue.clone()),
        Receiver {
            queue,
            taken: RefCell::default(),
            #[cfg(test)]
            queue_first: false,
        },
    )
}

/// Events going in under one lock; the receiver is woken (if blocked)
/// when it is dropped.
pub(super) struct Fill<'a> {
    state: MutexGuard<'a, State>,
    cond: &'a Condvar,
    added: bool,
}

impl Fill<'_> {
    /// Puts `ev` at the end of the queue. A port event equal to one the
    /// receiver has not taken yet replaces it (taken out, this one at the
    /// end: [`crate::types::coalesce_port_event`]): returns true then.
    pub(super) fn push(&mut self, ev: AgentEvent) -> bool {
        let coalesced = crate::types::coalesce_port_event(&mut self.state.events, &ev);
        self.state.events.push_back(ev);
        self.added = true;
        coalesced
    }
}

impl Drop for Fill<'_> {
    fn drop(&mut self) {
        if self.added && self.state.waiting {
            self.cond.notify_one();
        }
    }
}

impl Sender {
    /// Starts putting events in (one lock for all of them).
    pub(super) fn fill(&self) -> Fill<'_> {
        Fill {
            state: lock(&self.0.state),
            cond: &self.0.cond,
            added: false,
        }
    }

    /// Puts one event in; true if it replaced an equal port event (see
    /// [`Fill::push`]).
    pub(super) fn send(&self, ev: AgentEvent) -> bool {
        self.fill().push(ev)
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let mut st = lock(&self.0.state);
        st.closed = true;
        if st.waiting {
            self.0.cond.notify_one();
        }
    }
}

impl Receiver {
    /// The next event if one is there; takes everything queued into this
    /// receiver's buffer when that is empty.
    pub(super) fn try_recv(&self) -> Result<AgentEvent, TryRecvError> {
        // The bug: newer events before the rest of a batch taken.
        #[cfg(test)]
        if self.queue_first && !self.taken.borrow().is_empty() {
            if let Some(ev) = lock(&self.queue.state).events.pop_front() {
                return Ok(ev);
            }
        }
        let mut taken = self.taken.borrow_mut();
        if let Some(ev) = taken.pop_front() {
            return Ok(ev);
        }
        let mut st = lock(&self.queue.state);
        Self::take_all(&mut st, &mut taken)
    }

    fn take_all(
        st: &mut State,
        taken: &mut VecDeque<AgentEvent>,
    ) -> Result<AgentEvent, TryRecvError> {
        if st.events.is_empty() {
            return Err(if st.closed {
                TryRecvError::Disconnected
            } else {
                TryRecvError::Empty
            });
        }
        // The buffer is empty: swapping keeps both allocations.
        std::mem::swap(&mut st.events, taken);
        taken.pop_front().ok_or(TryRecvError::Empty)
    }

    /// True once the sender is gone and every event has been taken.
    pub(super) fn is_closed(&self) -> bool {
        if !self.taken.borrow().is_empty() {
            return false;
        }
        let st = lock(&self.queue.state);
        st.closed && st.events.is_empty()
    }

    /// The next event, blocking until one comes (until `deadline`, if
    /// any); `None` at the deadline, or once the channel is closed and
    /// empty.
    pub(super) fn recv_until(&self, deadline: Option<Instant>) -> Option<AgentEvent> {
        let mut taken = self.taken.borrow_mut();
        if let Some(ev) = taken.pop_front() {
            return Some(ev);
        }
        let mut st = lock(&self.queue.state);
        loop {
            match Self::take_all(&mut st, &mut taken) {
                Ok(ev) => return Some(ev),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {}
            }
            st.waiting = true;
            st = match deadline {
                None => self
                    .queue
                    .cond
                    .wait(st)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        st.waiting = false;
                        return None;
                    }
                    self.queue
                        .cond
                        .wait_timeout(st, left)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
            };
            st.waiting = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::AgentEvent;
    use std::time::Duration;

    fn ev(i: usize) -> AgentEvent {
        AgentEvent::CallbackPanicked {
            message: i.to_string(),
        }
    }

    fn num(e: AgentEvent) -> usize {
        match e {
            AgentEvent::CallbackPanicked { message } => message.parse().unwrap_or(usize::MAX),
            _ => usize::MAX,
        }
    }

    #[test]
    fn events_come_out_in_the_order_they_went_in_across_batches_and_after_close() {
        let (tx, rx) = channel();
        {
            let mut f = tx.fill();
            f.push(ev(0));
            f.push(ev(1));
        }
        assert_eq!(rx.try_recv().map(num), Ok(0));
        // Added while the receiver holds a batch: after it.
        tx.send(ev(2));
        assert_eq!(rx.try_recv().map(num), Ok(1));
        assert_eq!(rx.try_recv().map(num), Ok(2));
        assert_eq!(rx.try_recv().map(num), Err(TryRecvError::Empty));
        tx.send(ev(3));
        drop(tx);
        assert_eq!(rx.recv_until(None).map(num), Some(3), "what is left first");
        assert_eq!(rx.try_recv().map(num), Err(TryRecvError::Disconnected));
        assert_eq!(rx.recv_until(None).map(num), None);
    }

    #[test]
    fn a_blocked_receiver_wakes_for_an_event_for_a_close_and_at_its_deadline() {
        let (tx, rx) = channel();
        let t = std::thread::spawn(move || {
            let a = rx.recv_until(None).map(num);
            let b = rx.recv_until(Some(Instant::now() + Duration::from_millis(1)));
            let c = rx.recv_until(None).map(num);
            (a, b.map(num), c)
        });
        std::thread::sleep(Duration::from_millis(20));
        tx.send(ev(7));
        std::thread::sleep(Duration::from_millis(20));
        drop(tx);
        assert_eq!(t.join().ok(), Some((Some(7), None, None)));
    }
}
