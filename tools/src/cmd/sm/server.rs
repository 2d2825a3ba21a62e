//! `mad sm`'s SM and SA on one port: [`SmServer`].
//!
//! The transport is split by QP ([`super::split`]): the SM's
//! [`SmDriver`] pumps the QP0 half on the caller's thread; the QP1 half
//! is a [`SharedPort`] (a runtime and its loop thread) on which the
//! [`SaResponder`] answers from the SM's model, and on which the
//! process's other services may open too (the port lives while a handle
//! does).
//!
//! # Soft reset (seed 001)
//! The port layer of the shared port hears the device's soft reset (the
//! QP1 half carries the asynchronous events) and resets the whole
//! transport, QP0 included. So the SM holds it like every other service:
//! an agent of its own on the shared port, registered holding the reset,
//! feeds a [`ResetHold`] from its callback. The SM's loop marks the hold
//! busy while SMPs it sent await their answers ([`ResetHold::try_busy`],
//! [`SubnetManager::awaiting_answers`]); from `ResetPending` on it posts
//! nothing ([`SmDriver::pump_quiet`]: answers are taken, timers fire,
//! resends wait), and once no answer is awaited it marks the hold idle,
//! which acknowledges. After `ResetEnd` it sweeps and sends again. The
//! SA responder holds the reset the same way on its own agent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mad_agents::sa::{SaResponder, SaResponderConfig, SaResponderStats};
use mad_agents::{Agent, EngineConfig, ResetHold, ResetHoldStats, Runtime, SharedPort};
use mad_core::port::PortConfig;
use mad_core::transport::{Qp, TransportError};
use mad_sm::sa::{FabricSa, SubnetView};
use mad_sm::{SmConfig, SmDriver, SmEvent, SubnetManager};

use super::split::{self, Half, Waitable};

/// The SM over the QP0 half of a port and its SA over the QP1 half, a
/// shared port; see the [module documentation](self).
pub struct SmServer<T: Waitable + 'static> {
    sm: SubnetManager,
    drv: SmDriver,
    qp0: Half<T>,
    source: Arc<FabricSa>,
    mc_gen: u64,
    /// The SM's part in the port's soft reset, fed by `holder`.
    hold: Arc<ResetHold>,
    /// The hold is marked busy: SMPs await their answers.
    busy: bool,
    /// Dropped before `port`, in this order: the responder, the SM's
    /// holder agent.
    responder: Option<SaResponder>,
    holder: Option<Agent>,
    port: SharedPort,
}

impl<T: Waitable + 'static> std::fmt::Debug for SmServer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmServer")
            .field("sm", &self.sm)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl<T: Waitable + 'static> SmServer<T> {
    /// Splits `t`, starts the shared port over its QP1 half (port layer
    /// `port`, engine `engine`) and the SA on it with `sa`, and starts the
    /// SM (`sm`) at `now`.
    ///
    /// # Errors
    /// The runtime cannot start, or an agent cannot be registered.
    pub fn start(
        t: T,
        (port, engine): (PortConfig, EngineConfig),
        sm: SmConfig,
        sa: SaResponderConfig,
        now: Instant,
    ) -> Result<Self, String> {
        let attrs = t.port_attrs().clone();
        let (qp0, qp1) = split::split(t);
        let port = Runtime::start_with_port(qp1, port, engine)
            .map(SharedPort::from_runtime)
            .map_err(|e| format!("cannot start the SA's runtime: {e}"))?;
        let source = Arc::new(FabricSa::new(SubnetView::default()));
        let responder = SaResponder::open(&port, source.clone(), sa)
            .map_err(|e| format!("cannot start the SA: {e}"))?;
        let (hold, holder) = ResetHold::register_holder(port.runtime(), "mad-sm", Qp::Qp0)
            .map_err(|e| format!("cannot register the SM's agent: {e}"))?;
        let mut sm = SubnetManager::new(sm, &attrs);
        sm.start(now);
        Ok(Self {
            sm,
            drv: SmDriver::new(),
            qp0,
            source,
            mc_gen: 0,
            hold,
            busy: false,
            responder: Some(responder),
            holder: Some(holder),
            port,
        })
    }

    /// One non-blocking round at `now`: the SA's multicast groups handed
    /// to the SM, then the driver's pump — without posting anything while
    /// a soft reset is pending ([`SmDriver::pump_quiet`]). True if
    /// anything was received or sent.
    ///
    /// # Errors
    /// What the QP0 half's transport reports.
    pub fn pump(&mut self, now: Instant) -> Result<bool, TransportError> {
        let g = self.source.mc_generation();
        if g != self.mc_gen {
            self.mc_gen = g;
            self.sm.set_mcast_groups(self.source.mc_groups());
        }
        // Marked busy before sending, so that a reset coming meanwhile
        // waits for the answers to what goes out.
        let send = if self.busy {
            !self.hold.is_held()
        } else {
            self.busy = self.hold.try_busy();
            self.busy
        };
        let r = if send {
            self.drv.pump(&mut self.sm, &mut self.qp0, now)
        } else {
            self.drv.pump_quiet(&mut self.sm, &mut self.qp0, now)
        };
        if self.busy && self.sm.awaiting_answers() == 0 {
            // Nothing on the wire: a pending reset may be acknowledged.
            self.hold.set_idle();
            self.busy = false;
        }
        r
    }

    /// The SM's next event; after a sweep the SA's model is brought up to
    /// date first.
    pub fn poll_event(&mut self) -> Option<SmEvent> {
        let ev = self.sm.poll_event()?;
        if matches!(ev, SmEvent::SweepDone { .. }) {
            self.source.update(SubnetView::from_sm(&self.sm));
        }
        Some(ev)
    }

    /// Waits for something to receive on QP0, up to the SM's next timer
    /// and at most 1 ms (while a soft reset is pending, up to 1 ms).
    pub fn wait(&mut self) {
        let wait = self
            .sm
            .poll_timeout()
            .map_or(Duration::from_millis(1), |d| {
                d.saturating_duration_since(Instant::now())
            });
        self.qp0.wait(wait.min(Duration::from_millis(1)));
    }

    /// The SM.
    #[must_use]
    pub fn sm(&self) -> &SubnetManager {
        &self.sm
    }

    /// The SM, to steer it (a re-sweep, say).
    pub fn sm_mut(&mut self) -> &mut SubnetManager {
        &mut self.sm
    }

    /// The driver (its counters).
    #[must_use]
    pub fn driver(&self) -> &SmDriver {
        &self.drv
    }

    /// The shared port (the QP1 half): other services of the process
    /// open on it.
    #[must_use]
    pub fn port(&self) -> &SharedPort {
        &self.port
    }

    /// The SA's counters.
    #[must_use]
    pub fn sa_stats(&self) -> SaResponderStats {
        self.responder
            .as_ref()
            .map(SaResponder::stats)
            .unwrap_or_default()
    }

    /// The SA responder's part in soft resets so far.
    #[must_use]
    pub fn sa_reset_stats(&self) -> ResetHoldStats {
        self.responder
            .as_ref()
            .map(SaResponder::reset_stats)
            .unwrap_or_default()
    }

    /// The SM's part in soft resets so far (held, acknowledged, resumed).
    #[must_use]
    pub fn reset_stats(&self) -> ResetHoldStats {
        self.hold.stats()
    }

    /// Stops the SA and the SM's agent and lets go of the shared port
    /// (the last handle's drop shuts it down), then of the QP0 half (IsSM
    /// goes with the attachment). Returns the SA's last counters.
    pub fn shutdown(mut self) -> SaResponderStats {
        let stats = self.sa_stats();
        drop(self.responder.take());
        drop(self.holder.take());
        stats
    }
}
