//! A service's part in the port's two-phase soft reset (seed 001):
//! [`ResetHold`].
//!
//! The port asks its clients to let go before it resets
//! ([`AgentEvent::ResetPending`]) and tells them when it is back
//! ([`AgentEvent::ResetEnd`]); an agent registered with
//! [`AgentSpec::hold_reset`](crate::AgentSpec::hold_reset) holds the reset
//! until it acknowledges ([`AgentRef::ack_reset`]). A service (the SA
//! client, the CM service, the exporter's reader, the SM and its SA
//! responder, a user's own) keeps one `ResetHold` beside its agent and
//! feeds it the agent's events:
//!
//! - on `ResetPending` it starts **draining**: new work waits
//!   ([`ResetHold::enter`] blocks), and the reset is acknowledged as soon
//!   as the work already begun has ended (no [`ResetHold::enter`] guard
//!   alive) and the agent has no send outstanding;
//! - on `ResetEnd` it **resumes**: waiting work goes on;
//! - on `DeviceFatal` it stops holding anything (the port is dead; waiting
//!   work goes on and fails fast on the dead port).
//!
//! The port forces a reset whose acknowledgements do not come within its
//! `reset_ack_timeout`, so a hold never lasts for ever; work that waits
//! longer than its own bound goes on anyway (the port queues what is
//! posted during a reset).

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use std::sync::Arc;

use mad_core::transport::Qp;

use super::handles::{Agent, AgentRef};
use super::Runtime;
use crate::spec::AgentSpec;
use crate::types::AgentEvent;
use crate::types::RegisterError;

/// Where a service is in the port's soft reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResetPhase {
    /// No reset pending: work runs.
    #[default]
    Running,
    /// A reset is pending: new work waits while the work in flight ends.
    Draining,
    /// Drained and acknowledged: waiting for the port's `ResetEnd`.
    Drained,
}

/// Counters of a [`ResetHold`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResetHoldStats {
    /// Soft resets this service held (`ResetPending` seen while running).
    pub holds: u64,
    /// Resets it acknowledged once drained.
    pub acks: u64,
    /// Times it resumed (`ResetEnd` seen).
    pub resumes: u64,
    /// Pieces of work that had to wait for a reset to end.
    pub waited: u64,
    /// Device-fatal errors heard.
    pub device_fatal: u64,
}

#[derive(Debug, Default)]
struct Hold {
    phase: ResetPhase,
    /// Work begun ([`ResetHold::enter`]) and not ended.
    active: usize,
    /// The service's loop has work in flight ([`ResetHold::try_busy`]).
    busy: bool,
    stats: ResetHoldStats,
}

/// A service's part in the two-phase soft reset (seed 001): it holds the
/// reset while its work in flight drains, acknowledges, and resumes at
/// `ResetEnd` (ARCHITECTURE.md, "One port, many services").
#[derive(Debug, Default)]
pub struct ResetHold {
    agent: OnceLock<AgentRef>,
    hold: Mutex<Hold>,
    resumed: Condvar,
}

/// Work begun under a [`ResetHold`] ([`ResetHold::enter`]): while it is
/// alive a pending reset is not acknowledged.
#[derive(Debug)]
#[must_use = "the work holds the reset while this guard lives"]
pub struct ResetWork<'a> {
    hold: &'a ResetHold,
}

impl Drop for ResetWork<'_> {
    fn drop(&mut self) {
        let mut h = self.hold.lock();
        h.active = h.active.saturating_sub(1);
        self.hold.settle(&mut h);
    }
}

impl ResetHold {
    /// A hold for an agent not yet registered ([`ResetHold::attach`] it
    /// once it is).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A hold fed by a new send-only agent `name` on `qp` of `rt`,
    /// registered to hold the port's soft resets
    /// ([`AgentSpec::holding_reset`]) and attached to it: how a service
    /// whose work is not one agent's (the exporter's reader, the SM) takes
    /// part in the reset. The agent lives as long as the returned
    /// [`Agent`]; drop it before the service's port.
    ///
    /// # Errors
    /// As [`Runtime::register`].
    pub fn register_holder(
        rt: &Runtime,
        name: &str,
        qp: Qp,
    ) -> Result<(Arc<Self>, Agent), RegisterError> {
        let hold = Arc::new(Self::new());
        let feed = hold.clone();
        let agent = rt.register(AgentSpec::send_only(name, qp).holding_reset(), move |ev| {
            feed.on_event(&ev);
        })?;
        hold.attach(agent.handle());
        Ok((hold, agent))
    }

    fn lock(&self) -> MutexGuard<'_, Hold> {
        self.hold.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The agent whose sends are drained and which acknowledges. A second
    /// call is ignored.
    pub fn attach(&self, agent: AgentRef) {
        let _ = self.agent.set(agent);
        // A reset may have come before the agent was known.
        self.settle(&mut self.lock());
    }

    /// Feeds one of the agent's events: `ResetPending` starts draining,
    /// `ResetEnd` resumes, `DeviceFatal` ends any hold, and a send's
    /// completion may finish the drain. Other events change nothing.
    pub fn on_event(&self, ev: &AgentEvent) {
        let mut h = self.lock();
        match ev {
            AgentEvent::ResetPending => {
                if h.phase == ResetPhase::Running {
                    h.stats.holds += 1;
                }
                h.phase = ResetPhase::Draining;
                self.settle(&mut h);
            }
            AgentEvent::ResetEnd => {
                if h.phase != ResetPhase::Running {
                    h.stats.resumes += 1;
                }
                h.phase = ResetPhase::Running;
                self.resumed.notify_all();
            }
            AgentEvent::DeviceFatal => {
                h.stats.device_fatal += 1;
                h.phase = ResetPhase::Running;
                self.resumed.notify_all();
            }
            AgentEvent::SendDone(_) => self.settle(&mut h),
            _ => {}
        }
    }

    /// Acknowledges the reset once draining is over: no work begun, the
    /// loop not busy and no send of the agent outstanding. (Called on every event that may end
    /// the drain; a service whose completions go elsewhere, such as to a
    /// thread in [`AgentRef::send_and_wait`], calls it after them.)
    pub fn check(&self) {
        self.settle(&mut self.lock());
    }

    fn settle(&self, h: &mut Hold) {
        if h.phase != ResetPhase::Draining || h.active > 0 || h.busy {
            return;
        }
        let Some(agent) = self.agent.get() else {
            return;
        };
        if agent.outstanding() > 0 {
            return;
        }
        h.phase = ResetPhase::Drained;
        h.stats.acks += 1;
        // An agent already gone holds nothing.
        let _ = agent.ack_reset();
    }

    /// Begins a piece of work (a request, a batch of sends): waits while a
    /// reset is pending, at most `limit` (then it goes on: the port queues
    /// what is posted during a reset), and holds any reset that comes
    /// while the returned guard lives.
    pub fn enter(&self, limit: Duration) -> ResetWork<'_> {
        let mut h = self.lock();
        if h.phase != ResetPhase::Running {
            h.stats.waited += 1;
            let deadline = Instant::now().checked_add(limit);
            while h.phase != ResetPhase::Running {
                let left = deadline.map_or(limit, |d| d.saturating_duration_since(Instant::now()));
                if left.is_zero() {
                    break;
                }
                h = self
                    .resumed
                    .wait_timeout(h, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        h.active += 1;
        ResetWork { hold: self }
    }

    /// For a service whose work runs in one loop of its own (the
    /// exporter's reader's port thread, the SM's loop): marks it busy —
    /// work in flight, which holds a reset that comes as a
    /// [`ResetWork`] guard would — unless a reset is pending. False then:
    /// the loop hands nothing new over until the reset ends. Checked and
    /// marked under one lock, so a `ResetPending` is either seen here or
    /// held by the mark. A mark already set stays (true while running).
    pub fn try_busy(&self) -> bool {
        let mut h = self.lock();
        if h.phase != ResetPhase::Running {
            return false;
        }
        h.busy = true;
        true
    }

    /// The loop's work in flight has ended ([`ResetHold::try_busy`]): a
    /// pending reset is acknowledged once nothing else holds it.
    pub fn set_idle(&self) {
        let mut h = self.lock();
        if h.busy {
            h.busy = false;
            self.settle(&mut h);
        }
    }

    /// Waits up to `limit` while a reset is pending (woken at once by
    /// `ResetEnd` or `DeviceFatal`); true once work may run. For a
    /// service that keeps its own queue of deferred work and must look
    /// at other things between waits (the exporter's reader), where
    /// [`ResetHold::enter`] would block it.
    pub fn wait_resumed(&self, limit: Duration) -> bool {
        let h = self.lock();
        if h.phase == ResetPhase::Running {
            return true;
        }
        let (h, _) = self
            .resumed
            .wait_timeout_while(h, limit, |h| h.phase != ResetPhase::Running)
            .unwrap_or_else(PoisonError::into_inner);
        h.phase == ResetPhase::Running
    }

    /// True while a reset is pending (draining or drained, not yet
    /// resumed): a service that cannot wait defers new work.
    #[must_use]
    pub fn is_held(&self) -> bool {
        self.lock().phase != ResetPhase::Running
    }

    /// Where the service is in the reset.
    #[must_use]
    pub fn phase(&self) -> ResetPhase {
        self.lock().phase
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> ResetHoldStats {
        self.lock().stats
    }
}
