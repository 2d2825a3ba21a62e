//! [`Driver`]: the one pump between a transport and a [`PortCore`] —
//! it drains the transport's completions, receives and events into the
//! core, runs the recovery the core's state asks for (QP moves, queue
//! recreation, attribute refreshes) and posts what waits, so every owner
//! of a transport drives its port with the same loop.

use std::time::Instant;

use crate::transport::{OutMad, Qp, QpState, SendCompletion, Transport, TransportError, WcStatus};

use super::state::{PortCore, Queued, Recreate};
use super::{PortError, PortEvent, Post, SendToken};

/// A transport and what its pump reuses; see the [module
/// documentation](crate::port).
#[derive(Debug)]
pub struct Driver<T: Transport> {
    transport: T,
    scratch: Vec<SendCompletion>,
}

impl<T: Transport> Driver<T> {
    /// A driver of `transport`.
    #[must_use]
    pub fn new(transport: T) -> Self {
        Self {
            transport,
            scratch: Vec::new(),
        }
    }

    /// The transport.
    #[must_use]
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Puts `transport` in place of the current one, which is returned.
    pub fn replace(&mut self, transport: T) -> T {
        std::mem::replace(&mut self.transport, transport)
    }

    /// Accepts one send of `client` on `qp` and posts it: to the
    /// transport at once when the QP has room and nothing waits before
    /// it, else on the core's overflow queue (see
    /// [`Io::post`](super::Io::post)).
    ///
    /// # Errors
    /// As [`Io::post`](super::Io::post).
    pub fn post(&mut self, core: &mut PortCore, wr: Post<'_>) -> Result<SendToken, PortError> {
        let Post {
            client,
            mad,
            dest,
            cookie,
            wait,
        } = wr;
        let meta = core.accept(client, cookie)?;
        let qp = mad.qp();
        let rts = self.transport.qp_state(qp) == QpState::Rts;
        if core.can_post_now(qp, self.transport.send_queue_depth(), rts) {
            let r = self.transport.post(mad, dest, wait);
            match r {
                Ok(wr) => {
                    core.posted_wr(qp, wr, meta);
                    return Ok(core.accepted(meta));
                }
                Err(TransportError::QueueFull { .. } | TransportError::QpNotReady { .. }) => {}
                Err(TransportError::DeviceDead(_)) => {
                    core.go_dead();
                    return Err(core.dead_error());
                }
                Err(e) => return Err(PortError::Transport(e)),
            }
        }
        core.enqueue(
            qp,
            Queued {
                meta,
                mad: crate::MadBuf::from_slice(mad.bytes()),
                dest: *dest,
                wait,
            },
        )?;
        Ok(core.accepted(meta))
    }

    /// Does everything due at `now`: drains send completions, receives and
    /// async events from the transport into `core`, runs a reset that is
    /// due, recovers from errors, forces a soft reset whose deadline has
    /// passed, and posts queued sends.
    pub fn drive(&mut self, core: &mut PortCore, now: Instant) {
        if core.dead {
            return;
        }
        self.poll_completions(core);
        if !core.dead {
            self.poll_receives(core);
        }
        if !core.dead {
            self.poll_events(core, now);
        }
        if !core.dead {
            self.run_due(core);
        }
        if !core.dead {
            self.recover(core);
        }
        if !core.dead {
            core.check_reset_deadline(now);
            self.run_due(core);
        }
        if !core.dead {
            self.flush(core);
        }
    }

    fn poll_completions(&mut self, core: &mut PortCore) {
        loop {
            self.scratch.clear();
            let r = self.transport.poll_send_completions(&mut self.scratch);
            for c in self.scratch.drain(..) {
                core.handle_completion(c);
            }
            match r {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    core.failed(&e);
                    break;
                }
            }
        }
    }

    fn poll_receives(&mut self, core: &mut PortCore) {
        loop {
            match self.transport.poll_recv() {
                Ok(Some(r)) => core.handle_recv(r),
                Ok(None) => break,
                Err(e) => {
                    core.failed(&e);
                    break;
                }
            }
        }
    }

    fn poll_events(&mut self, core: &mut PortCore, now: Instant) {
        while !core.dead {
            let Some(ev) = self.transport.poll_event() else {
                break;
            };
            if ev.changes_attrs() {
                match self.transport.refresh_port_attrs() {
                    Ok(()) => core.stats.refreshes += 1,
                    Err(e) => {
                        if core.failed(&e) {
                            return;
                        }
                    }
                }
            }
            core.handle_event(now, ev);
        }
    }

    /// Runs a soft reset the core has made due (every client acknowledged,
    /// or the deadline passed): sends the device already finished keep
    /// their status, then the queues are recreated and the queued sends go
    /// out.
    pub fn run_due(&mut self, core: &mut PortCore) {
        if core.take_reset_due().is_none() {
            return;
        }
        // Sends the device finished before the reset keep their real status.
        self.poll_completions(core);
        if core.dead {
            return;
        }
        core.recreate = Some(Recreate::SoftReset);
        self.recover(core);
        self.flush(core);
    }

    /// Recreates the queues if a CQ error or a reset asked for it, and
    /// brings every QP that is not in RTS back.
    fn recover(&mut self, core: &mut PortCore) {
        if let Some(reason) = core.recreate {
            core.flush_posted(Qp::Qp0);
            core.flush_posted(Qp::Qp1);
            match self.transport.recreate_queues() {
                Ok(()) => {
                    core.recreate = None;
                    core.stats.recreates += 1;
                    if reason == Recreate::SoftReset {
                        core.stats.soft_resets += 1;
                        core.broadcast(&PortEvent::ResetEnd);
                    }
                }
                Err(e) => {
                    core.failed(&e);
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
            core.flush_posted(qp);
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
                    if core.failed(&e) {
                        return;
                    }
                    ok = false;
                    break;
                }
            }
            if ok {
                core.stats.qp_recoveries += 1;
            }
        }
    }

    /// Posts queued sends while the QPs have room. One the transport
    /// refuses for a reason other than room completes with
    /// `IBV_WC_LOC_QP_OP_ERR`, as the kernel does.
    pub fn flush(&mut self, core: &mut PortCore) {
        if core.dead
            || core.reset.is_some()
            || core.reset_due.is_some()
            || core.recreate.is_some()
            || core.qps.iter().all(|q| q.overflow.is_empty())
        {
            return;
        }
        let depth = self.transport.send_queue_depth();
        for qp in [Qp::Qp0, Qp::Qp1] {
            if self.transport.qp_state(qp) != QpState::Rts {
                continue;
            }
            while core.qps[qp.index()].posted.len() < depth {
                let Some(r) = core.qps[qp.index()].overflow.pop_front() else {
                    break;
                };
                // Checked when the port accepted it, not again.
                let mad = OutMad::requeued(&r.mad, qp);
                let posted = self.transport.post(mad, &r.dest, r.wait);
                match posted {
                    Ok(wr) => core.posted_wr(qp, wr, r.meta),
                    Err(TransportError::QueueFull { .. } | TransportError::QpNotReady { .. }) => {
                        core.qps[qp.index()].overflow.push_front(r);
                        break;
                    }
                    Err(e @ TransportError::DeviceDead(_)) => {
                        core.qps[qp.index()].overflow.push_front(r);
                        core.failed(&e);
                        return;
                    }
                    Err(e) => {
                        core.transport_error(&e);
                        core.stats.post_failures += 1;
                        core.complete(r.meta, qp, WcStatus::LocQpOpErr, 0);
                    }
                }
            }
        }
    }

    /// Puts a new transport under `core` (after a device-fatal error, or
    /// to replace a working one) and drops the old one. Anything still
    /// posted on the old transport completes as flushed; queued sends go
    /// out on the new one. Every client gets [`PortEvent::Reopened`].
    pub fn reopen(&mut self, core: &mut PortCore, transport: T) {
        core.flush_posted(Qp::Qp0);
        core.flush_posted(Qp::Qp1);
        let a = transport.port_attrs();
        core.ca.clone_from(&a.ca_name);
        core.port_num = a.port_num;
        drop(self.replace(transport));
        core.new_life(false);
        core.stats.reopens += 1;
        core.broadcast(&PortEvent::Reopened);
        self.recover(core);
        self.flush(core);
    }
}
