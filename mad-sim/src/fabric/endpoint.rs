//! [`SimPort`]: an endpoint attached at a port of a [`Fabric`], with the
//! [`Transport`] interface (QP0 and QP1 of that port).
//!
//! Posting a MAD injects it at the port: it is sent the way the kernel's
//! MAD layer sends it (directed-route send rules applied, the P_Key of the
//! chosen index, Q_Key 0x80010000 on QP1 whatever the address says, as
//! `ib_umad_write` does), crosses the fabric, and ends at an SMA, a PMA, an
//! SM or another endpoint's receive queue. Every send completes with
//! success once the packet has left (dropped packets too, as a UD send
//! does on hardware). Receives carry the source LID, QP, SL and the index
//! of the packet's P_Key in this port's table.
//!
//! # Refused posts
//! - a MAD shorter than 24 or longer than 256 bytes;
//! - an SMP class on QP1 or another class on QP0;
//! - a P_Key index beyond the table or naming an empty entry (QP1);
//! - a directed-route SMP the send rules refuse (what makes the kernel
//!   fail the post with `EINVAL`), or one with LID-routed parts.
//!
//! [`Transport::raw_fd`] is the read end of a socket pair that is
//! readable while a completion, a receive or an event waits, for mio; the
//! pair is made on the first call, so a port that is only polled makes no
//! system call. Polling looks at an atomic "something may be queued" flag
//! before it takes the fabric's lock. While nobody waits on the
//! descriptor ([`Transport::watch_fd`] `false`: a runtime whose callers
//! drive the port themselves) the fabric does not write to the pair, so
//! a round trip makes no system call then either (it made three: a write
//! when the answer came, two reads when it was taken); watched again, the
//! descriptor is made readable at once if anything is queued.
//!
//! QP states follow the verbs rules of
//! [`Loopback`](mad_core::transport::loopback::Loopback): posting to a QP
//! in RESET/INIT/RTR fails, posting to a QP in ERR/SQE completes with
//! `IBV_WC_WR_FLUSH_ERR`, a move to ERR flushes what is still queued, a
//! move to RESET discards it. MADs arriving while the QP cannot receive
//! are dropped.

use mad_core::transport::loopback::qp_transition_allowed;
use mad_core::transport::{
    AsyncEvent, Grh, OutMad, PortAttrs, Posted, Qp, QpState, Received, SendCompletion, Transport,
    TransportError, Unsendable, WcStatus, WrId,
};
use mad_core::wire::attr::port_cap;
use mad_core::wire::MgmtClass;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{Core, Fabric, Origin, Packet};

/// An endpoint at one port of a [`Fabric`]. Dropping it detaches it.
pub struct SimPort {
    fabric: Fabric,
    ep: usize,
    node: u32,
    port: u8,
    attrs: PortAttrs,
    /// The send queue depth of each QP (fixed at attach).
    depth: usize,
    /// The QP states. Only this port changes them (`modify_qp`,
    /// `recreate_queues`), so they are read without the fabric lock.
    qp: [QpState; 2],
    /// The endpoint's "something may be queued" flag: the poll calls
    /// return at once, without the fabric lock, while it is clear.
    pending: Arc<AtomicBool>,
    /// The notification pair, taken out of the endpoint while nobody
    /// watches it ([`Transport::watch_fd`] `false`): the fabric, finding
    /// no pair, then only sets `pending`.
    muted: Option<(UnixStream, UnixStream)>,
}

impl std::fmt::Debug for SimPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimPort")
            .field("node", &self.attrs.ca_name)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

/// The attributes of `port` of `node` as a transport reports them.
pub(crate) fn port_attrs(c: &Core, node: u32, port: u8) -> PortAttrs {
    let Some(n) = c.node(node) else {
        return PortAttrs::default();
    };
    let Some(p) = n.port(port) else {
        return PortAttrs::default();
    };
    PortAttrs {
        ca_name: n.id.clone(),
        port_num: port,
        node_guid: n.info.node_guid,
        port_guid: p.guid,
        gid_prefix: p.info.gid_prefix,
        lid: p.info.lid,
        lmc: p.info.lmc,
        sm_lid: p.info.master_sm_lid,
        sm_sl: p.info.master_sm_sl,
        state: p.info.port_state.0,
        phys_state: p.info.port_phys_state.0,
        capability_mask: p.info.capability_mask,
        pkeys: p.pkeys.clone(),
        is_switch: n.is_switch(),
    }
}

impl SimPort {
    pub(crate) fn new(
        fabric: Fabric,
        ep: usize,
        node: u32,
        port: u8,
        attrs: PortAttrs,
        depth: usize,
        pending: Arc<AtomicBool>,
    ) -> Self {
        Self {
            fabric,
            ep,
            node,
            port,
            attrs,
            depth,
            qp: [QpState::Rts; 2],
            pending,
            muted: None,
        }
    }

    /// Nothing can be queued for this endpoint (a cheap look before
    /// taking the fabric lock).
    fn idle(&self) -> bool {
        !self.pending.load(Ordering::Acquire)
    }

    /// The fabric this endpoint is attached to.
    #[must_use]
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// Index of the node it is attached at.
    #[must_use]
    pub fn node(&self) -> usize {
        self.node as usize
    }

    /// The port it is attached at.
    #[must_use]
    pub fn port(&self) -> u8 {
        self.port
    }

    pub(crate) fn endpoint_index(&self) -> usize {
        self.ep
    }

    /// Declares (or stops declaring) this endpoint the SM of its port, as
    /// opening the kernel's `issm` device does: PortInfo IsSM is set, and
    /// SMInfo requests, traps and reports for the node come here.
    pub fn set_is_sm(&mut self, on: bool) {
        let mut c = self.fabric.lock();
        if let Some(Some(e)) = c.endpoints.get_mut(self.ep) {
            e.is_sm = on;
        }
        if let Some(p) = c.port_mut(self.node, self.port) {
            if on {
                p.info.capability_mask |= port_cap::IS_SM;
            } else {
                p.info.capability_mask &= !port_cap::IS_SM;
            }
        }
    }

    fn with_ep<R>(&self, f: impl FnOnce(&mut super::Endpoint) -> R) -> Option<R> {
        let mut c = self.fabric.lock();
        c.endpoints.get_mut(self.ep).and_then(Option::as_mut).map(f)
    }
}

impl Drop for SimPort {
    fn drop(&mut self) {
        let mut c = self.fabric.lock();
        let was_sm = c
            .endpoints
            .get_mut(self.ep)
            .and_then(Option::take)
            .is_some_and(|e| e.is_sm);
        let key = (self.node, self.port);
        if let Some(slot) = c.ep_at.get_mut(&key) {
            for q in slot.iter_mut() {
                if *q == Some(self.ep) {
                    *q = None;
                }
            }
            if slot.iter().all(Option::is_none) {
                c.ep_at.remove(&key);
            }
        }
        if was_sm {
            if let Some(p) = c.port_mut(self.node, self.port) {
                p.info.capability_mask &= !port_cap::IS_SM;
            }
        }
    }
}

impl Transport for SimPort {
    fn port_attrs(&self) -> &PortAttrs {
        &self.attrs
    }

    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        self.attrs = port_attrs(&self.fabric.lock(), self.node, self.port);
        Ok(())
    }

    fn send_queue_depth(&self) -> usize {
        self.depth
    }

    fn post(
        &mut self,
        out: OutMad<'_>,
        dest: &mad_core::transport::Address,
        _wait: std::time::Duration,
    ) -> Posted {
        let (qp, mad, class) = (out.qp(), out.bytes(), out.class());
        let mut c = self.fabric.lock();
        // Only what the packet needs, copied out of the node (no clone of
        // the P_Key table or PortInfo per send).
        let (is_switch, lid, lmc, gid_prefix, guid, pkey_at_index, first_pkey) = {
            let n = c
                .node(self.node)
                .ok_or_else(|| TransportError::DeviceDead(self.attrs.ca_name.clone()))?;
            let p = n
                .port(self.port)
                .ok_or_else(|| TransportError::DeviceDead(self.attrs.ca_name.clone()))?;
            (
                n.is_switch(),
                p.info.lid,
                p.info.lmc,
                p.info.gid_prefix,
                p.guid,
                p.pkeys.get(usize::from(dest.pkey_index)).copied(),
                p.pkeys.first().copied(),
            )
        };
        let auto = c.cfg.auto_deliver;
        // Taken before `ep` borrows the core (a reused buffer if any).
        let mut buf = c.mad_buf();
        let ep = c
            .endpoints
            .get_mut(self.ep)
            .and_then(Option::as_mut)
            .ok_or_else(|| TransportError::DeviceDead(self.attrs.ca_name.clone()))?;
        if !ep.owns[qp.index()] {
            return Err(Unsendable::QpNotOwned { qp }.into());
        }
        let state = ep.qp_state[qp.index()];
        match state {
            QpState::Reset | QpState::Init | QpState::Rtr => {
                return Err(TransportError::QpNotReady { qp, state });
            }
            QpState::Err | QpState::Sqe => {
                let wr = WrId(ep.next_wr);
                ep.next_wr += 1;
                ep.cq.push_back(SendCompletion {
                    wr_id: wr,
                    qp,
                    status: WcStatus::WrFlushErr,
                    vendor_err: 0,
                });
                ep.signal();
                return Ok(wr);
            }
            QpState::Rts => {}
        }
        if ep.outstanding[qp.index()] >= self.depth {
            return Err(TransportError::QueueFull {
                qp,
                depth: self.depth,
            });
        }
        let pkey = if qp == Qp::Qp1 {
            match pkey_at_index {
                Some(k) if k & 0x7FFF != 0 => k,
                _ => {
                    return Err(Unsendable::NoPKey {
                        index: dest.pkey_index,
                    }
                    .into())
                }
            }
        } else {
            first_pkey.unwrap_or(0xFFFF)
        };
        if class == MgmtClass::SUBN_DIRECTED_ROUTE {
            super::check_dr_post(mad, is_switch, self.port)?;
        }
        buf[..mad.len()].copy_from_slice(mad);
        buf[mad.len()..].fill(0);
        let lmc_mask = (1u16 << lmc.min(7)) - 1;
        let slid = lid | (u16::from(dest.path_bits) & lmc_mask);
        let mut gid = [0u8; 16];
        gid[..8].copy_from_slice(&gid_prefix.to_be_bytes());
        gid[8..].copy_from_slice(&guid.to_be_bytes());
        let wr = WrId(ep.next_wr);
        ep.next_wr += 1;
        ep.outstanding[qp.index()] += 1;
        c.queue.push_back(Packet {
            mad: buf,
            slid,
            dlid: dest.lid,
            sqpn: qp.qpn(),
            dqpn: dest.qpn,
            sl: dest.sl,
            pkey,
            vl15: qp == Qp::Qp0,
            grh: dest.grh.map(|g| Grh { gid, ..g }),
            origin: Some(Origin {
                ep: self.ep,
                wr,
                qp,
            }),
            start: (self.node, self.port),
        });
        if auto {
            c.run_until_idle();
        }
        drop(c);
        self.fabric.pump();
        Ok(wr)
    }

    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        if self.idle() {
            return Ok(0);
        }
        Ok(self
            .with_ep(|e| {
                let n = e.cq.len();
                out.extend(e.cq.drain(..));
                e.unsignal_if_idle();
                n
            })
            .unwrap_or(0))
    }

    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        if self.idle() {
            return Ok(None);
        }
        Ok(self
            .with_ep(|e| {
                let r = e.rq.pop_front();
                e.unsignal_if_idle();
                r
            })
            .flatten())
    }

    fn poll_event(&mut self) -> Option<AsyncEvent> {
        if self.idle() {
            return None;
        }
        self.with_ep(|e| {
            let ev = e.events.pop_front();
            e.unsignal_if_idle();
            ev
        })
        .flatten()
    }

    fn qp_state(&self, qp: Qp) -> QpState {
        self.qp[qp.index()]
    }

    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        let mut c = self.fabric.lock();
        let from = c
            .endpoints
            .get(self.ep)
            .and_then(Option::as_ref)
            .map_or(QpState::Err, |e| e.qp_state[qp.index()]);
        if !qp_transition_allowed(from, to) {
            return Err(TransportError::InvalidTransition { qp, from, to });
        }
        let ep = self.ep;
        let mine = |p: &Packet| p.origin.is_some_and(|o| o.ep == ep && o.qp == qp);
        match to {
            QpState::Err => {
                let (flush, keep): (Vec<Packet>, Vec<Packet>) = c.queue.drain(..).partition(mine);
                c.queue.extend(keep);
                for p in flush {
                    if let Some(o) = p.origin {
                        c.complete(o, WcStatus::WrFlushErr);
                    }
                }
            }
            QpState::Reset => {
                c.queue.retain(|p| !mine(p));
                if let Some(Some(e)) = c.endpoints.get_mut(ep) {
                    e.outstanding[qp.index()] = 0;
                    e.cq.retain(|x| x.qp != qp);
                    e.unsignal_if_idle();
                }
            }
            _ => {}
        }
        if let Some(Some(e)) = c.endpoints.get_mut(ep) {
            e.qp_state[qp.index()] = to;
        }
        self.qp[qp.index()] = to;
        Ok(())
    }

    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        let mut c = self.fabric.lock();
        let ep = self.ep;
        c.queue.retain(|p| match p.origin {
            Some(o) => o.ep != ep,
            None => true,
        });
        if let Some(Some(e)) = c.endpoints.get_mut(ep) {
            e.cq.clear();
            e.outstanding = [0; 2];
            e.qp_state = [QpState::Rts; 2];
            e.unsignal_if_idle();
        }
        self.qp = [QpState::Rts; 2];
        Ok(())
    }

    /// A descriptor that is readable while a completion, receive or event
    /// waits (the read end of a socket pair the fabric writes a byte to),
    /// so a mio loop on another thread wakes when another endpoint sends
    /// here. The pair is made on the first call: a port only polled never
    /// pays for it.
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        if let Some((_, rx)) = &self.muted {
            return Some(rx.as_raw_fd());
        }
        self.with_ep(super::Endpoint::notify_fd).flatten()
    }

    /// Unwatched, the notification pair made so far (by
    /// [`Transport::raw_fd`]) is emptied and set aside: nothing is
    /// written to it, and polling reads nothing from it. Watched again, it
    /// is put back and made readable at once if anything may be queued.
    fn watch_fd(&mut self, watched: bool) {
        let mut c = self.fabric.lock();
        let Some(Some(ep)) = c.endpoints.get_mut(self.ep) else {
            return;
        };
        if watched {
            if let Some(pair) = self.muted.take() {
                ep.notify = Some(pair);
                if ep.pending.load(Ordering::Acquire) {
                    ep.signal();
                }
            }
        } else if let Some(pair) = ep.notify.take() {
            if ep.signaled {
                let mut b = [0u8; 16];
                while matches!((&pair.1).read(&mut b), Ok(n) if n > 0) {}
                ep.signaled = false;
            }
            self.muted = Some(pair);
        }
    }

    /// Yes: the fabric's queues are finite. Asking makes no descriptor.
    fn bounded_far_side(&self) -> bool {
        true
    }
}

// A SimPort moves to the thread that runs its stack; the fabric is shared.
const _: () = {
    const fn send<T: Send>() {}
    const fn send_sync<T: Send + Sync>() {}
    send::<SimPort>();
    send_sync::<Fabric>();
};
