//! The fast path: a caller's thread drives the port itself.
//!
//! A thread waiting for its agent's events ([`super::AgentReceiver`]) or
//! for one completion ([`super::AgentRef::send_and_wait`]) first drives the
//! engine itself, under the core lock, in one locked step
//! ([`Shared::caller_drive`], [`Shared::caller_take`]): it polls the port
//! and takes what is its own — the queued events of its channel agent,
//! put into the channel right there, in order, exactly once, or the one
//! completion it waits for. Only when nothing is there yet does it block
//! and leave the rest to the loop thread. A round trip that the transport
//! answers at once (the built-in fabric) then costs no thread hand-off.
//!
//! What stays with the loop thread: callbacks (always called there),
//! events of other agents (a driving caller that leaves some wakes the
//! loop), timers and MADs nobody asked for.
//!
//! The loop thread gets out of the way while callers are active
//! ([`Relay`](super::relay::Relay)): with nothing to do, it parks — not
//! watching the transport — for at most [`LINGER`](super::relay::LINGER)
//! (or its next deadline) if callers drove the port, or took from their
//! channels what the loop had put there, since it last waited, and no
//! caller is blocked waiting for it; it parks again, without going round,
//! while callers stay active (their drives poll the engine, its timers
//! too). Every wake-up ([`Shared::wake`]) unparks it; a caller about to
//! block makes sure it watches
//! ([`Relay::watch`](super::relay::Relay::watch)).
//!
//! Counting the takes matters: a receiver that found its channel filled
//! by the loop used not to count as active, so the loop kept watching the
//! transport, every send woke it (an eventfd write and a futex wake-up
//! per MAD), and it delivered the next answers before the receiver could
//! drive for them — a hand-off per MAD that sustained itself once begun
//! (the W = 16 collapse of `mad --sim bench` on a loaded machine: 2.3
//! futex calls and 0.8 wake-ups per query under `strace -f -c`, against
//! 0.03–0.13 and 0.05 now).

use std::time::{Duration, Instant};

use super::shared::{Core, Deviation, Shared, Sink};
use crate::types::{AgentId, Completion, SendId};

/// How long a caller keeps driving the port, while what it waits for may
/// come soon, before it blocks and leaves the port to the loop thread.
pub(super) const SPIN: Duration = Duration::from_micros(20);

/// Drives with `drive` (given the time) until it returns a value, for at
/// most [`SPIN`] while `drive` says more may come (spinning first, then
/// yielding the CPU, which the loop thread may need to hand the value
/// over). Also returns when it started. One clock reading per turn.
pub(super) fn spin<R>(mut drive: impl FnMut(Instant) -> (Option<R>, bool)) -> (Option<R>, Instant) {
    let t0 = Instant::now();
    let mut now = t0;
    let mut turns = 0u32;
    loop {
        let (got, more) = drive(now);
        if got.is_some() || !more {
            return (got, t0);
        }
        now = Instant::now();
        if now.saturating_duration_since(t0) > SPIN {
            return (None, t0);
        }
        turns += 1;
        if turns < 8 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

impl Shared {
    /// Wakes the loop thread after a send unless it is parked: then a
    /// caller drives the port and the loop comes back within [`LINGER`]
    /// anyway.
    pub(super) fn nudge(&self) {
        if !self.relay.is_parked() {
            // Out of `mio::Poll::poll` only: a loop about to park may
            // park (a caller drives).
            if let Some(w) = &self.waker {
                let _ = w.wake();
            }
        }
    }

    /// A caller's thread drives the port once for its channel agent
    /// `agent` (one locked step): polls the engine and puts the agent's
    /// queued events into its channel — unless the loop thread is handing
    /// one of them over, which then delivers the rest in order. Wakes the
    /// loop if other agents have events (its own left are the loop's to
    /// hand over). True if more for `agent` may come
    /// soon (sends outstanding, or the loop is handing one over): worth
    /// spinning for.
    pub(super) fn caller_drive(&self, agent: AgentId, now: Instant) -> bool {
        let (others, more) = {
            let mut core = self.core();
            if core.stopped {
                return false;
            }
            self.relay.driven();
            if !self.poll_or_end(&mut core, now) {
                return false;
            }
            self.take_own(&mut core, agent);
            self.reap(&mut core);
            let more = core.engine.delivering(agent) || core.engine.agent_outstanding(agent) > 0;
            (core.engine.has_events_besides(agent), more)
        };
        self.bury();
        if others {
            self.wake();
        }
        more
    }

    /// (Locked) Polls the engine on a caller's thread. A panic there (a
    /// transport that blew up) ends the runtime as the loop thread's own
    /// death does ([`Shared::loop_ended`]): the caller, and every other,
    /// gets what a dead loop gives ([`crate::SendError::Stopped`], a
    /// closed channel), not the transport's panic; the loop thread stops
    /// at its next step. False then.
    fn poll_or_end(&self, core: &mut Core, now: Instant) -> bool {
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| core.engine.poll(now)));
        if polled.is_err() {
            self.loop_ended(core);
            self.wake();
            return false;
        }
        true
    }

    /// (Locked) Puts `agent`'s queued events into its channel.
    fn take_own(&self, core: &mut Core, agent: AgentId) {
        // Nothing queued (each turn of a spin that waits): no sink to
        // look up and lock.
        let in_turn = !core.engine.delivering(agent) || self.deviation == Deviation::TakeOutOfTurn;
        if core.engine.queued_events(agent) == 0 || !in_turn {
            return;
        }
        let Some(sink) = core.sinks.get(&agent).cloned() else {
            return;
        };
        // A callback is only ever called on the loop thread.
        let Ok(mut sink) = sink.try_lock() else {
            return;
        };
        let Sink::Channel { tx, queued } = &mut *sink else {
            return;
        };
        // A buffer kept in the core: no allocation per turn.
        let mut evs = std::mem::take(&mut core.scratch);
        core.engine.take_events_into(agent, &mut evs);
        self.complete_waiters(core, &mut evs);
        // All of them into the channel under one lock of it.
        let mut fill = tx.fill();
        for ev in evs.drain(..) {
            if self.admit(queued, &ev) {
                if fill.push(ev) {
                    core.engine.count_port_event_coalesced(agent);
                }
            } else {
                core.engine.count_recv_drop(agent);
            }
            core.stats.channel_events += 1;
        }
        drop(fill);
        core.scratch = evs;
    }

    /// A thread in [`super::AgentRef::send_and_wait`] drives the port once
    /// (one locked step) and takes the completion of `send` of `agent` if
    /// it is there. Wakes the loop if agents have events. The flag: it may
    /// still come this way (no one else took it).
    pub(super) fn caller_take(
        &self,
        agent: AgentId,
        send: SendId,
        now: Instant,
    ) -> (Option<Completion>, bool) {
        let (done, others, more) = {
            let mut core = self.core();
            if core.stopped {
                return (None, false);
            }
            self.relay.driven();
            if !self.poll_or_end(&mut core, now) {
                return (None, false);
            }
            let done = core.engine.take_completion(agent, send);
            if done.is_some() {
                core.waiters.remove(&send);
                core.stats.waiter_completions += 1;
            }
            self.reap(&mut core);
            let more = done.is_none() && core.waiters.contains_key(&send);
            (done, core.engine.has_events(), more)
        };
        self.bury();
        if others {
            self.wake();
        }
        (done, more)
    }
}
