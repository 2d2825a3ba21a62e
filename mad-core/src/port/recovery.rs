//! Recovery as state: device death, async events, the two-phase soft
//! reset. What needs the transport (QP moves, recreating the queues,
//! refreshing the attributes) is the [`Driver`](super::Driver)'s.

use std::time::Instant;

use crate::transport::{AsyncEvent, Qp, WcStatus};

use super::state::{PortCore, Recreate, ResetState};
use super::{ClientId, PortError, PortEvent};

impl PortCore {
    /// The port died (`dead`) or was reopened: either way no soft reset
    /// is pending or due and no queue recreation waits, as the device
    /// they were for is gone.
    pub(super) fn new_life(&mut self, dead: bool) {
        self.dead = dead;
        self.reset = None;
        self.reset_due = None;
        self.recreate = None;
    }

    /// The device is gone: every client hears [`PortEvent::DeviceFatal`],
    /// everything posted and queued completes as flushed, and every later
    /// post fails until the port is reopened.
    pub fn go_dead(&mut self) {
        if self.dead {
            return;
        }
        self.new_life(true);
        self.stats.device_fatal += 1;
        self.broadcast(&PortEvent::DeviceFatal);
        for qp in [Qp::Qp0, Qp::Qp1] {
            self.flush_posted(qp);
            let overflow = std::mem::take(&mut self.qps[qp.index()].overflow);
            for r in overflow {
                self.complete(r.meta, qp, WcStatus::WrFlushErr, 0);
            }
        }
    }

    /// An async event from the transport at `now`. For the events that
    /// change the port's attributes the driver has refreshed them first
    /// ([`AsyncEvent::changes_attrs`]).
    pub fn handle_event(&mut self, now: Instant, ev: AsyncEvent) {
        match ev {
            AsyncEvent::PortActive
            | AsyncEvent::PortError
            | AsyncEvent::LidChange
            | AsyncEvent::PkeyChange
            | AsyncEvent::GidChange
            | AsyncEvent::SmChange
            | AsyncEvent::ClientReregister => {
                self.stats.events += 1;
                self.broadcast(&PortEvent::Async(ev));
            }
            AsyncEvent::CqError => {
                self.stats.cq_errors += 1;
                if self.recreate.is_none() {
                    self.recreate = Some(Recreate::CqError);
                }
            }
            // Recovered through the driver's QP state check.
            AsyncEvent::QpFatal(_) => self.stats.qp_fatal += 1,
            AsyncEvent::DeviceFatal => self.go_dead(),
            AsyncEvent::SoftResetRequest => self.begin_reset(now),
            AsyncEvent::SoftResetEnd => {}
        }
    }

    // ----- soft reset -----

    /// A client asks for an HCA soft reset (as `mlx4_reset_request`); the
    /// same two phases follow as for a transport's request.
    pub fn request_reset(&mut self, now: Instant) {
        self.begin_reset(now);
    }

    fn begin_reset(&mut self, now: Instant) {
        if self.dead
            || self.reset.is_some()
            || self.reset_due.is_some()
            || self.recreate == Some(Recreate::SoftReset)
        {
            return;
        }
        self.stats.reset_requests += 1;
        self.reset = Some(ResetState {
            deadline: now + self.cfg.reset_ack_timeout,
            pending: self.clients.ids(),
        });
        self.broadcast(&PortEvent::ResetPending);
        if self.clients.len() == 0 {
            self.reset = None;
            self.reset_due = Some(false);
        }
    }

    /// `client` has released what it holds (as `mlx4_reset_execute`). When
    /// the last client acknowledges, the reset is due: the driver resets
    /// the port at its next step and [`PortEvent::ResetEnd`] is queued for
    /// every client. A repeated acknowledgement is harmless.
    ///
    /// # Errors
    /// Unknown client, or no reset pending.
    pub fn ack_reset(&mut self, client: ClientId) -> Result<(), PortError> {
        if !self.clients.contains(client) {
            return Err(PortError::UnknownClient(client));
        }
        if self.reset.is_none() {
            return Err(PortError::NoResetPending);
        }
        self.acknowledged(client);
        Ok(())
    }

    /// `client` no longer holds the pending reset (acknowledged or gone).
    pub(super) fn acknowledged(&mut self, client: ClientId) {
        if let Some(r) = &mut self.reset {
            r.pending.retain(|c| *c != client);
            if r.pending.is_empty() {
                self.reset = None;
                self.reset_due = Some(false);
            }
        }
    }

    /// Makes the reset due if its deadline has passed at `now`.
    #[inline]
    pub(super) fn check_reset_deadline(&mut self, now: Instant) {
        if self.reset.as_ref().is_some_and(|r| now >= r.deadline) {
            self.reset = None;
            self.reset_due = Some(true);
        }
    }

    /// The reset is under way (the driver takes it): counted, and the
    /// queues are to be recreated.
    #[inline]
    pub(super) fn take_reset_due(&mut self) -> Option<bool> {
        let forced = self.reset_due.take()?;
        if forced {
            self.stats.forced_resets += 1;
        }
        Some(forced)
    }
}
