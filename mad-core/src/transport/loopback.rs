//! `Loopback`: an in-memory [`Transport`] for tests.
//!
//! A `Loopback` is one port with QP0 and QP1 and nothing behind it but
//! memory. What happens to a posted MAD is chosen by its *sink*:
//!
//! - [`Loopback::new`]: the MAD is discarded after it "went out";
//! - [`Loopback::pair`]: two endpoints wired back to back; a MAD sent by one
//!   arrives in the other's receive queue, on QP0 when its destination QPN
//!   is 0 and on QP1 when it is 1 (any other QPN is undeliverable: a
//!   loopback endpoint has no other QPs);
//! - [`Loopback::set_responder`]: a closure sees each sent MAD and returns
//!   the MADs this endpoint receives in answer (an SMA, an SA, ...).
//!
//! # Device model
//!
//! The send queue of each QP holds at most [`Loopback::send_queue_depth`]
//! work requests; a post beyond that fails with
//! [`TransportError::QueueFull`]. The "device" processes the send queues
//! when the consumer polls for completions: every work request of a QP in
//! RTS goes out in order and completes with `IBV_WC_SUCCESS`. While
//! [`Loopback::set_stalled`] is on, nothing is processed, so work requests
//! pile up (to get hundreds posted at once).
//!
//! QP states follow the verbs rules (see [`qp_transition_allowed`]):
//!
//! - posting to a QP in RESET, INIT or RTR fails at once with
//!   [`TransportError::QpNotReady`] (IBTA: the post verb returns an error);
//! - posting to a QP in ERR or SQE is *accepted*, and the work request
//!   completes with `IBV_WC_WR_FLUSH_ERR` without being sent (IBTA 10.3.1:
//!   work requests submitted in the Error state are completed with a flush
//!   error);
//! - a transition to ERR flushes every outstanding work request of the QP
//!   (`IBV_WC_WR_FLUSH_ERR`, in order);
//! - a transition to RESET discards the outstanding work requests without
//!   completions and removes the QP's completions still in the CQ (what the
//!   kernel drivers do when a QP is reset);
//! - [`Transport::recreate_queues`] throws away both send queues and the CQ
//!   and brings both QPs back in RTS.
//!
//! A MAD arriving at a QP that is not in RTR, RTS or SQE is dropped (counted
//! in [`LoopbackStats::rx_dropped`]).
//!
//! The loopback never fails a work request by itself and never raises an
//! asynchronous event of its own: wrap it in
//! [`FaultInjector`](super::fault::FaultInjector) for that, or push events
//! with [`Loopback::push_event`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use super::{
    Address, AsyncEvent, Grh, OutMad, PortAttrs, Posted, Qp, QpState, Received, SendCompletion,
    Transport, TransportError, WcStatus, WrId,
};

/// Whether the verbs allow moving a QP from `from` to `to`
/// (`ibv_modify_qp`): any state may go to RESET or ERR; otherwise only
/// RESET→INIT, INIT→INIT, INIT→RTR, RTR→RTS, RTS→RTS and SQE→RTS.
#[must_use]
pub fn qp_transition_allowed(from: QpState, to: QpState) -> bool {
    use QpState::{Err, Init, Reset, Rtr, Rts, Sqe};
    matches!(
        (from, to),
        (_, Reset | Err) | (Reset | Init, Init) | (Init, Rtr) | (Rtr | Rts | Sqe, Rts)
    )
}

/// `Ok` if the verbs allow moving `qp` from `from` to `to`
/// ([`qp_transition_allowed`]).
///
/// # Errors
/// [`TransportError::InvalidTransition`] when they do not.
pub fn check_qp_transition(qp: Qp, from: QpState, to: QpState) -> Result<(), TransportError> {
    if qp_transition_allowed(from, to) {
        Ok(())
    } else {
        Err(TransportError::InvalidTransition { qp, from, to })
    }
}

/// A closure that answers MADs sent through a [`Loopback`]: it gets the QP
/// the MAD was sent on, the MAD and its destination, and returns the MADs
/// the same endpoint receives in reply.
pub type Responder = Box<dyn FnMut(Qp, &[u8], &Address) -> Vec<Received> + Send>;

/// A shared receive queue (the "wire" into an endpoint).
type Inbox = Arc<Mutex<VecDeque<Received>>>;

enum Sink {
    Discard,
    Peer { inbox: Inbox },
    Responder(Responder),
}

/// Counters of what a [`Loopback`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopbackStats {
    /// Work requests accepted by `post`.
    pub posted: u64,
    /// Work requests that went out and completed with success.
    pub sent: u64,
    /// Work requests completed with `IBV_WC_WR_FLUSH_ERR`.
    pub flushed: u64,
    /// Work requests discarded without completion (RESET, recreate).
    pub discarded: u64,
    /// Sent MADs that could not be delivered (destination QPN not 0 or 1).
    pub undeliverable: u64,
    /// MADs received while the receiving QP could not receive.
    pub rx_dropped: u64,
    /// Calls of `refresh_port_attrs`.
    pub refreshes: u64,
    /// Calls of `recreate_queues`.
    pub recreates: u64,
}

struct Wr {
    id: WrId,
    mad: Vec<u8>,
    dest: Address,
}

/// An in-memory transport; see the [module documentation](self).
pub struct Loopback {
    attrs: PortAttrs,
    staged: Option<PortAttrs>,
    depth: usize,
    state: [QpState; 2],
    sq: [VecDeque<Wr>; 2],
    cq: VecDeque<SendCompletion>,
    inbox: Inbox,
    events: VecDeque<AsyncEvent>,
    sink: Sink,
    stalled: bool,
    next_wr: u64,
    stats: LoopbackStats,
    on_drop: Option<Box<dyn FnOnce() + Send>>,
}

impl std::fmt::Debug for Loopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loopback")
            .field("ca", &self.attrs.ca_name)
            .field("port", &self.attrs.port_num)
            .field("depth", &self.depth)
            .field("state", &self.state)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Loopback {
    /// Port attributes for a test endpoint: an active CA port with `lid`,
    /// GUIDs derived from it, and the default P_Key.
    #[must_use]
    pub fn attrs(ca_name: &str, port_num: u8, lid: u16) -> PortAttrs {
        PortAttrs {
            ca_name: ca_name.to_owned(),
            port_num,
            node_guid: 0x0002_c903_0000_0000 | u64::from(lid) << 8,
            port_guid: 0x0002_c903_0000_0000 | u64::from(lid) << 8 | u64::from(port_num),
            gid_prefix: 0xfe80_0000_0000_0000,
            lid,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            state: 4,
            phys_state: 5,
            capability_mask: 0,
            pkeys: vec![0xffff],
            is_switch: false,
        }
    }

    /// A single endpoint whose sends are discarded once they went out.
    /// Both QPs start in RTS. `depth` is clamped to at least 1.
    #[must_use]
    pub fn new(attrs: PortAttrs, depth: usize) -> Self {
        Self::with_inbox(
            attrs,
            depth,
            Arc::new(Mutex::new(VecDeque::new())),
            Sink::Discard,
        )
    }

    /// Two endpoints wired back to back: what one sends, the other receives.
    #[must_use]
    pub fn pair(a: PortAttrs, b: PortAttrs, depth: usize) -> (Self, Self) {
        let inbox_a: Inbox = Arc::new(Mutex::new(VecDeque::new()));
        let inbox_b: Inbox = Arc::new(Mutex::new(VecDeque::new()));
        let ea = Self::with_inbox(
            a,
            depth,
            inbox_a.clone(),
            Sink::Peer {
                inbox: inbox_b.clone(),
            },
        );
        let eb = Self::with_inbox(b, depth, inbox_b, Sink::Peer { inbox: inbox_a });
        (ea, eb)
    }

    fn with_inbox(attrs: PortAttrs, depth: usize, inbox: Inbox, sink: Sink) -> Self {
        Self {
            attrs,
            staged: None,
            depth: depth.max(1),
            state: [QpState::Rts; 2],
            sq: [VecDeque::new(), VecDeque::new()],
            cq: VecDeque::new(),
            inbox,
            events: VecDeque::new(),
            sink,
            stalled: false,
            next_wr: 1,
            stats: LoopbackStats::default(),
            on_drop: None,
        }
    }

    /// Answers every sent MAD with `responder` (replaces a peer or discard
    /// sink).
    pub fn set_responder(&mut self, responder: Responder) {
        self.sink = Sink::Responder(responder);
    }

    /// Builder form of [`Loopback::set_responder`].
    #[must_use]
    pub fn with_responder(mut self, responder: Responder) -> Self {
        self.set_responder(responder);
        self
    }

    /// While stalled, posted work requests stay on the send queue and no
    /// completion is produced.
    pub fn set_stalled(&mut self, stalled: bool) {
        self.stalled = stalled;
    }

    /// Queues an asynchronous event for `poll_event`.
    pub fn push_event(&mut self, event: AsyncEvent) {
        self.events.push_back(event);
    }

    /// Puts a MAD on this endpoint's receive queue, as if it had arrived.
    pub fn push_recv(&mut self, received: Received) {
        lock(&self.inbox).push_back(received);
    }

    /// The next `refresh_port_attrs` installs `attrs` (as if the SM had
    /// changed the port, e.g. its LID).
    pub fn stage_attrs(&mut self, attrs: PortAttrs) {
        self.staged = Some(attrs);
    }

    /// Runs `f` when this transport is dropped (to count releases in tests).
    pub fn on_drop(&mut self, f: Box<dyn FnOnce() + Send>) {
        self.on_drop = Some(f);
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> LoopbackStats {
        self.stats
    }

    /// Work requests currently on `qp`'s send queue (not yet processed).
    #[must_use]
    pub fn queued(&self, qp: Qp) -> usize {
        self.sq[qp.index()].len()
    }

    fn alloc_wr(&mut self) -> WrId {
        let id = WrId(self.next_wr);
        self.next_wr += 1;
        id
    }

    fn flush_qp(&mut self, qp: Qp) {
        let sq = std::mem::take(&mut self.sq[qp.index()]);
        for wr in sq {
            self.stats.flushed += 1;
            self.cq
                .push_back(completion(wr.id, qp, WcStatus::WrFlushErr));
        }
    }

    /// Processes every work request of the QPs in RTS (unless stalled).
    fn process(&mut self) {
        if self.stalled {
            return;
        }
        for qp in [Qp::Qp0, Qp::Qp1] {
            if self.state[qp.index()] != QpState::Rts {
                continue;
            }
            while let Some(wr) = self.sq[qp.index()].pop_front() {
                self.deliver(qp, &wr);
                self.stats.sent += 1;
                self.cq.push_back(completion(wr.id, qp, WcStatus::Success));
            }
        }
    }

    fn deliver(&mut self, qp: Qp, wr: &Wr) {
        match &mut self.sink {
            Sink::Discard => {}
            Sink::Responder(f) => {
                let replies = f(qp, &wr.mad, &wr.dest);
                lock(&self.inbox).extend(replies);
            }
            Sink::Peer { inbox } => {
                let to = match wr.dest.qpn {
                    0 => Qp::Qp0,
                    1 => Qp::Qp1,
                    _ => {
                        self.stats.undeliverable += 1;
                        return;
                    }
                };
                let src = Address {
                    lid: self.attrs.lid,
                    qpn: qp.qpn(),
                    qkey: wr.dest.qkey,
                    sl: wr.dest.sl,
                    pkey_index: wr.dest.pkey_index,
                    path_bits: wr.dest.path_bits,
                    grh: wr.dest.grh.map(|g| Grh {
                        gid: own_gid(&self.attrs),
                        sgid_index: 0,
                        ..g
                    }),
                };
                lock(inbox).push_back(Received {
                    qp: to,
                    src,
                    mad: crate::MadBuf::from_slice(&wr.mad),
                });
            }
        }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        if let Some(f) = self.on_drop.take() {
            f();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn completion(wr_id: WrId, qp: Qp, status: WcStatus) -> SendCompletion {
    SendCompletion {
        wr_id,
        qp,
        status,
        vendor_err: 0,
    }
}

fn own_gid(attrs: &PortAttrs) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[..8].copy_from_slice(&attrs.gid_prefix.to_be_bytes());
    gid[8..].copy_from_slice(&attrs.port_guid.to_be_bytes());
    gid
}

impl Transport for Loopback {
    fn port_attrs(&self) -> &PortAttrs {
        &self.attrs
    }

    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        self.stats.refreshes += 1;
        if let Some(a) = self.staged.take() {
            self.attrs = a;
        }
        Ok(())
    }

    fn send_queue_depth(&self) -> usize {
        self.depth
    }

    fn post(&mut self, out: OutMad<'_>, dest: &Address, _wait: std::time::Duration) -> Posted {
        let (qp, mad) = (out.qp(), out.bytes());
        let state = self.state[qp.index()];
        match state {
            QpState::Reset | QpState::Init | QpState::Rtr => {
                return Err(TransportError::QpNotReady { qp, state });
            }
            QpState::Err | QpState::Sqe => {
                // Accepted and flushed: the verbs semantics of a QP in error.
                let id = self.alloc_wr();
                self.stats.posted += 1;
                self.stats.flushed += 1;
                self.cq.push_back(completion(id, qp, WcStatus::WrFlushErr));
                return Ok(id);
            }
            QpState::Rts => {}
        }
        if self.sq[qp.index()].len() >= self.depth {
            return Err(TransportError::QueueFull {
                qp,
                depth: self.depth,
            });
        }
        let id = self.alloc_wr();
        self.stats.posted += 1;
        self.sq[qp.index()].push_back(Wr {
            id,
            mad: mad.to_vec(),
            dest: *dest,
        });
        Ok(id)
    }

    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        self.process();
        let n = self.cq.len();
        out.extend(self.cq.drain(..));
        Ok(n)
    }

    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        loop {
            let Some(r) = lock(&self.inbox).pop_front() else {
                return Ok(None);
            };
            match self.state[r.qp.index()] {
                QpState::Rtr | QpState::Rts | QpState::Sqe => return Ok(Some(r)),
                _ => self.stats.rx_dropped += 1,
            }
        }
    }

    fn poll_event(&mut self) -> Option<AsyncEvent> {
        self.events.pop_front()
    }

    fn qp_state(&self, qp: Qp) -> QpState {
        self.state[qp.index()]
    }

    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        check_qp_transition(qp, self.state[qp.index()], to)?;
        match to {
            QpState::Reset => {
                let n = self.sq[qp.index()].len() as u64;
                self.stats.discarded += n;
                self.sq[qp.index()].clear();
                self.cq.retain(|c| c.qp != qp);
            }
            QpState::Err => self.flush_qp(qp),
            _ => {}
        }
        self.state[qp.index()] = to;
        Ok(())
    }

    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        self.stats.recreates += 1;
        for sq in &mut self.sq {
            self.stats.discarded += sq.len() as u64;
            sq.clear();
        }
        self.cq.clear();
        self.state = [QpState::Rts; 2];
        Ok(())
    }

    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::wire::{AttributeId, Method, MgmtClass};
    use mad_testkit_wire::{header, MadBuilder};

    /// A Get of `class` with TID `tid`.
    fn mad(class: u8, tid: u8) -> Vec<u8> {
        MadBuilder::new(MgmtClass(class), 1, Method::GET, AttributeId(0))
            .tid(u64::from(tid))
            .to_vec()
    }

    /// The TID of a MAD `mad` made.
    fn tid(m: &[u8]) -> u8 {
        u8::try_from(header::of(m).tid).expect("a TID mad() made")
    }

    fn drain(t: &mut Loopback) -> Vec<SendCompletion> {
        let mut v = Vec::new();
        t.poll_send_completions(&mut v).unwrap();
        v
    }

    #[test]
    fn sends_complete_with_success_in_post_order() {
        let mut t = Loopback::new(Loopback::attrs("lo", 1, 5), 8);
        let ids: Vec<WrId> = (0..5)
            .map(|i| t.post_send(Qp::Qp1, &mad(3, i), &Address::gsi(7)).unwrap())
            .collect();
        let c = drain(&mut t);
        assert_eq!(c.iter().map(|c| c.wr_id).collect::<Vec<_>>(), ids);
        assert!(c
            .iter()
            .all(|c| c.status == WcStatus::Success && c.qp == Qp::Qp1));
    }

    #[test]
    fn send_queue_depth_is_enforced_until_completions_are_polled() {
        let mut t = Loopback::new(Loopback::attrs("lo", 1, 5), 3);
        t.set_stalled(true);
        for i in 0..3 {
            t.post_send(Qp::Qp1, &mad(3, i), &Address::gsi(7)).unwrap();
        }
        assert!(matches!(
            t.post_send(Qp::Qp1, &mad(3, 9), &Address::gsi(7)),
            Err(TransportError::QueueFull { depth: 3, .. })
        ));
        // QP0 has its own queue.
        t.post_send(Qp::Qp0, &mad(0x81, 1), &Address::smi(0xffff))
            .unwrap();
        assert!(drain(&mut t).is_empty(), "stalled device completes nothing");
        t.set_stalled(false);
        assert_eq!(drain(&mut t).len(), 4);
        t.post_send(Qp::Qp1, &mad(3, 9), &Address::gsi(7)).unwrap();
    }

    #[test]
    fn pair_delivers_to_the_peer_on_the_destination_qp() {
        let (mut a, mut b) =
            Loopback::pair(Loopback::attrs("a", 1, 5), Loopback::attrs("b", 1, 9), 4);
        a.post_send(Qp::Qp1, &mad(3, 1), &Address::gsi(9)).unwrap();
        a.post_send(Qp::Qp0, &mad(0x81, 2), &Address::smi(0xffff))
            .unwrap();
        let mut bad = Address::gsi(9);
        bad.qpn = 77;
        a.post_send(Qp::Qp1, &mad(3, 3), &bad).unwrap();
        assert!(
            b.poll_recv().unwrap().is_none(),
            "nothing before the sender's device ran"
        );
        assert_eq!(drain(&mut a).len(), 3);
        let mut got = Vec::new();
        while let Some(r) = b.poll_recv().unwrap() {
            got.push(r);
        }
        assert_eq!(got.len(), 2);
        // QP0 is processed before QP1 by the device.
        assert_eq!(
            (got[0].qp, tid(&got[0].mad), got[0].src.qpn),
            (Qp::Qp0, 2, 0)
        );
        assert_eq!(
            (got[1].qp, tid(&got[1].mad), got[1].src.lid),
            (Qp::Qp1, 1, 5)
        );
        assert_eq!(a.stats().undeliverable, 1);
        assert!(a.poll_recv().unwrap().is_none());
    }

    #[test]
    fn responder_answers_land_in_the_own_receive_queue() {
        let mut t = Loopback::new(Loopback::attrs("lo", 1, 5), 4).with_responder(Box::new(
            |qp, m: &[u8], dest: &Address| {
                let mut r = m.to_vec();
                header::edit(&mut r, |h| h.response = true);
                vec![Received {
                    qp,
                    src: *dest,
                    mad: r.into(),
                }]
            },
        ));
        t.post_send(Qp::Qp1, &mad(3, 4), &Address::gsi(7)).unwrap();
        drain(&mut t);
        let r = t.poll_recv().unwrap().unwrap();
        let h = header::of(&r.mad);
        assert_eq!(
            (h.method, h.response, h.tid, r.src.lid),
            (Method::GET, true, 4, 7)
        );
    }

    #[test]
    fn posting_outside_rts_follows_the_verbs_rules() {
        let mut t = Loopback::new(Loopback::attrs("lo", 1, 5), 4);
        t.set_stalled(true);
        let queued = t.post_send(Qp::Qp1, &mad(3, 1), &Address::gsi(7)).unwrap();
        // To ERR: the outstanding request is flushed.
        t.modify_qp(Qp::Qp1, QpState::Err).unwrap();
        // In ERR a post is accepted and flushed.
        let late = t.post_send(Qp::Qp1, &mad(3, 2), &Address::gsi(7)).unwrap();
        let c = drain(&mut t);
        assert_eq!(
            c.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
            vec![(queued, WcStatus::WrFlushErr), (late, WcStatus::WrFlushErr)]
        );
        // ERR -> INIT is illegal; the way back is RESET, INIT, RTR, RTS.
        assert!(matches!(
            t.modify_qp(Qp::Qp1, QpState::Init),
            Err(TransportError::InvalidTransition { .. })
        ));
        t.modify_qp(Qp::Qp1, QpState::Reset).unwrap();
        assert!(matches!(
            t.post_send(Qp::Qp1, &mad(3, 3), &Address::gsi(7)),
            Err(TransportError::QpNotReady {
                state: QpState::Reset,
                ..
            })
        ));
        for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
            t.modify_qp(Qp::Qp1, s).unwrap();
        }
        t.set_stalled(false);
        t.post_send(Qp::Qp1, &mad(3, 4), &Address::gsi(7)).unwrap();
        assert_eq!(drain(&mut t)[0].status, WcStatus::Success);
    }

    #[test]
    fn reset_discards_without_completions_and_recreate_restores_rts() {
        let mut t = Loopback::new(Loopback::attrs("lo", 1, 5), 4);
        t.set_stalled(true);
        t.post_send(Qp::Qp1, &mad(3, 1), &Address::gsi(7)).unwrap();
        t.modify_qp(Qp::Qp1, QpState::Reset).unwrap();
        t.post_send(Qp::Qp0, &mad(0x81, 1), &Address::smi(0xffff))
            .unwrap();
        t.modify_qp(Qp::Qp0, QpState::Err).unwrap();
        t.recreate_queues().unwrap();
        assert!(drain(&mut t).is_empty(), "recreate throws away the CQ");
        assert_eq!(t.qp_state(Qp::Qp0), QpState::Rts);
        assert_eq!(t.qp_state(Qp::Qp1), QpState::Rts);
        assert_eq!(t.stats().discarded, 1);
    }

    #[test]
    fn transition_table_matches_verbs() {
        use QpState::*;
        let all = [Reset, Init, Rtr, Rts, Sqe, Err];
        let allowed: Vec<(QpState, QpState)> = all
            .iter()
            .flat_map(|&f| all.iter().map(move |&t| (f, t)))
            .filter(|&(f, t)| qp_transition_allowed(f, t))
            .filter(|&(_, t)| t != Reset && t != Err)
            .collect();
        assert_eq!(
            allowed,
            vec![
                (Reset, Init),
                (Init, Init),
                (Init, Rtr),
                (Rtr, Rts),
                (Rts, Rts),
                (Sqe, Rts)
            ]
        );
    }

    #[test]
    fn staged_attrs_appear_on_refresh_and_drop_hook_runs() {
        let hit = Arc::new(Mutex::new(false));
        {
            let mut t = Loopback::new(Loopback::attrs("lo", 1, 5), 4);
            let h = hit.clone();
            t.on_drop(Box::new(move || *h.lock().unwrap() = true));
            t.stage_attrs(Loopback::attrs("lo", 1, 42));
            assert_eq!(t.port_attrs().lid, 5);
            t.refresh_port_attrs().unwrap();
            assert_eq!(t.port_attrs().lid, 42);
        }
        assert!(*hit.lock().unwrap());
    }
}
