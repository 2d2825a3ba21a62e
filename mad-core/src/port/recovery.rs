//! Recovery: device death, async events, QP and queue recovery, the
//! two-phase soft reset and reopening.

use std::time::Instant;

use crate::transport::{AsyncEvent, Qp, QpState, Transport, WcStatus};

use super::{ClientId, Port, PortError, PortEvent, Recreate, ResetState};

impl<T: Transport> Port<T> {
    pub(super) fn go_dead(&mut self) {
        if self.dead {
            return;
        }
        self.dead = true;
        self.reset = None;
        self.recreate = None;
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

    pub(super) fn poll_events(&mut self, now: Instant) {
        while !self.dead {
            let Some(ev) = self.transport.poll_event() else {
                break;
            };
            self.on_event(ev, now);
        }
    }

    pub(super) fn on_event(&mut self, ev: AsyncEvent, now: Instant) {
        match ev {
            AsyncEvent::PortActive
            | AsyncEvent::PortError
            | AsyncEvent::LidChange
            | AsyncEvent::PkeyChange
            | AsyncEvent::GidChange
            | AsyncEvent::SmChange => {
                match self.transport.refresh_port_attrs() {
                    Ok(()) => self.stats.refreshes += 1,
                    Err(e) => {
                        if self.failed(&e) {
                            return;
                        }
                    }
                }
                self.stats.events += 1;
                self.broadcast(&PortEvent::Async(ev));
            }
            AsyncEvent::ClientReregister => {
                self.stats.events += 1;
                self.broadcast(&PortEvent::Async(ev));
            }
            AsyncEvent::CqError => {
                self.stats.cq_errors += 1;
                if self.recreate.is_none() {
                    self.recreate = Some(Recreate::CqError);
                }
            }
            // Recovered through the QP state check in `recover`.
            AsyncEvent::QpFatal(_) => self.stats.qp_fatal += 1,
            AsyncEvent::DeviceFatal => self.go_dead(),
            AsyncEvent::SoftResetRequest => self.begin_reset(now),
            AsyncEvent::SoftResetEnd => {}
        }
    }

    /// Recreates the queues if a CQ error or a reset asked for it, and
    /// brings every QP that is not in RTS back.
    pub(super) fn recover(&mut self) {
        if let Some(reason) = self.recreate {
            self.flush_posted(Qp::Qp0);
            self.flush_posted(Qp::Qp1);
            match self.transport.recreate_queues() {
                Ok(()) => {
                    self.recreate = None;
                    self.stats.recreates += 1;
                    if reason == Recreate::SoftReset {
                        self.stats.soft_resets += 1;
                        self.broadcast(&PortEvent::ResetEnd);
                    }
                }
                Err(e) => {
                    self.failed(&e);
                    return;
                }
            }
        }
        for qp in [Qp::Qp0, Qp::Qp1] {
            let state = self.transport.qp_state(qp);
            if state == QpState::Rts {
                continue;
            }
            // Whatever is still posted dies with the reset of the QP: its
            // completions were drained before we got here.
            self.flush_posted(qp);
            let path: &[QpState] = match state {
                QpState::Sqe => &[QpState::Rts],
                QpState::Reset => &[QpState::Init, QpState::Rtr, QpState::Rts],
                QpState::Init => &[QpState::Rtr, QpState::Rts],
                QpState::Rtr => &[QpState::Rts],
                QpState::Err | QpState::Rts => {
                    &[QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts]
                }
            };
            let mut ok = true;
            for &to in path {
                if let Err(e) = self.transport.modify_qp(qp, to) {
                    if self.failed(&e) {
                        return;
                    }
                    ok = false;
                    break;
                }
            }
            if ok {
                self.stats.qp_recoveries += 1;
            }
        }
    }

    // ----- soft reset -----

    /// A client asks for an HCA soft reset (as `mlx4_reset_request`); the
    /// same two phases follow as for a transport's request.
    pub fn request_reset(&mut self, now: Instant) {
        self.begin_reset(now);
    }

    pub(super) fn begin_reset(&mut self, now: Instant) {
        if self.dead || self.reset.is_some() || self.recreate == Some(Recreate::SoftReset) {
            return;
        }
        self.stats.reset_requests += 1;
        self.reset = Some(ResetState {
            deadline: now + self.cfg.reset_ack_timeout,
            pending: self.clients.ids(),
        });
        self.broadcast(&PortEvent::ResetPending);
        if self.clients.len() == 0 {
            self.execute_reset(false);
        }
    }

    /// `client` has released what it holds (as `mlx4_reset_execute`). When
    /// the last client acknowledges, the port resets at once and
    /// [`PortEvent::ResetEnd`] is queued for every client. A repeated
    /// acknowledgement is harmless.
    ///
    /// # Errors
    /// Unknown client, or no reset pending.
    pub fn ack_reset(&mut self, client: ClientId) -> Result<(), PortError> {
        if !self.clients.contains(client) {
            return Err(PortError::UnknownClient(client));
        }
        let Some(r) = &mut self.reset else {
            return Err(PortError::NoResetPending);
        };
        r.pending.retain(|c| *c != client);
        if r.pending.is_empty() {
            self.execute_reset(false);
        }
        Ok(())
    }

    pub(super) fn execute_reset(&mut self, forced: bool) {
        self.reset = None;
        if forced {
            self.stats.forced_resets += 1;
        }
        // Sends the device finished before the reset keep their real status.
        self.poll_completions();
        if self.dead {
            return;
        }
        self.recreate = Some(Recreate::SoftReset);
        self.recover();
        self.drain_overflow();
    }

    // ----- reopening -----

    /// Puts a new transport under the port (after a device-fatal error, or
    /// to replace a working one) and drops the old one. Anything still
    /// posted on the old transport completes as flushed; queued sends go
    /// out on the new one. Every client gets [`PortEvent::Reopened`].
    pub fn reopen(&mut self, transport: T) {
        self.flush_posted(Qp::Qp0);
        self.flush_posted(Qp::Qp1);
        self.transport = transport;
        self.dead = false;
        self.reset = None;
        self.recreate = None;
        self.stats.reopens += 1;
        self.broadcast(&PortEvent::Reopened);
        self.recover();
        self.drain_overflow();
    }
}
