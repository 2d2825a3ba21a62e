//! The fabric's state and how a packet moves through it.
//!
//! Every packet is processed whole by one [`Core::step`]: it leaves the
//! agent that sent it, crosses links (each crossing counted by the PMA
//! of both ports and offered to the link filter), is forwarded by
//! switches (directed route or LFT), and ends delivered (to an SMA, a PMA,
//! an SM hook or an endpoint's receive queue) or dropped with a reason.
//! Answers of SMAs and PMAs are queued as new packets.

use mad_core::hash::FastMap;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mad_core::transport::{
    Address, AsyncEvent, Grh, Qp, QpState, Received, SendCompletion, WcStatus, WrId, GSI_QKEY,
    PERMISSIVE_LID,
};
use mad_core::wire::attr::{PhysPortState, PortInfo, PortState};
use mad_core::wire::smp::{
    dr_check_forward, dr_fwd_port, dr_handle_recv, dr_handle_send, is_local_returning_smp,
    is_local_smp, DrForward, DrVerdict, Smp,
};
use mad_core::wire::{Mad, Method, MgmtClass, MAD_LEN};

use super::node::Node;
use super::{
    DropReason, FabricConfig, FabricStats, LinkCrossing, LinkFilter, LinkVerdict, PortAddr,
    SmHandler,
};

/// Longest path (links crossed) a packet may take before it is dropped.
pub(crate) const MAX_HOPS: usize = 256;
/// PortXmitData / PortRcvData of one MAD without a GRH, in 4-byte words:
/// LRH 8 + BTH 12 + DETH 8 + MAD 256 + ICRC 4 = 288 bytes (as ibsim).
pub(crate) const MAD_WORDS: u32 = 72;
/// Extra words for a GRH.
pub(crate) const GRH_WORDS: u32 = 10;

/// The send that produced a packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin {
    pub ep: usize,
    pub wr: WrId,
    pub qp: Qp,
}

/// A packet in flight: the MAD plus the LRH/BTH/DETH fields that matter.
#[derive(Debug, Clone)]
pub(crate) struct Packet {
    pub mad: Box<[u8; MAD_LEN]>,
    pub slid: u16,
    pub dlid: u16,
    pub sqpn: u32,
    pub dqpn: u32,
    pub sl: u8,
    pub pkey: u16,
    pub vl15: bool,
    /// GRH as the receiver will see it (source GID).
    pub grh: Option<Grh>,
    pub origin: Option<Origin>,
    /// Where it starts: node and the port its agent sits on (0 on a switch).
    pub start: (u32, u8),
}

impl Packet {
    fn words(&self) -> u32 {
        MAD_WORDS + if self.grh.is_some() { GRH_WORDS } else { 0 }
    }
    fn is_dr(&self) -> bool {
        self.mad[1] == MgmtClass::SUBN_DIRECTED_ROUTE.0
    }
    fn unicast(&self) -> bool {
        self.dlid < 0xC000 || self.dlid == PERMISSIVE_LID
    }
}

/// One attached endpoint's queues.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub qp_state: [QpState; 2],
    pub cq: VecDeque<SendCompletion>,
    pub rq: VecDeque<Received>,
    pub events: VecDeque<AsyncEvent>,
    pub outstanding: [usize; 2],
    pub next_wr: u64,
    pub is_sm: bool,
    /// A socket pair whose read end is readable while any queue has
    /// something (the endpoint's `raw_fd`), created when first asked for:
    /// an endpoint driven by polling alone makes no system calls.
    pub notify: Option<(UnixStream, UnixStream)>,
    /// A byte is in the socket pair.
    pub signaled: bool,
    /// Set while any queue may have something, shared with the
    /// [`crate::SimPort`], which looks at it before taking the fabric lock.
    pub pending: Arc<AtomicBool>,
    /// The QPs (QP0, QP1) this endpoint owns.
    pub owns: [bool; 2],
    /// A [`crate::FaultyPort`] wraps it: it takes `faults`.
    pub fault_capable: bool,
    /// Faults injected by [`crate::Fabric::inject`], not yet taken.
    pub faults: VecDeque<crate::EndpointFault>,
}

impl Endpoint {
    /// An endpoint in RTS with empty queues.
    pub fn new() -> Self {
        Self {
            qp_state: [QpState::Rts; 2],
            cq: VecDeque::new(),
            rq: VecDeque::new(),
            events: VecDeque::new(),
            outstanding: [0; 2],
            next_wr: 1,
            is_sm: false,
            notify: None,
            signaled: false,
            pending: Arc::new(AtomicBool::new(false)),
            owns: [true; 2],
            fault_capable: false,
            faults: VecDeque::new(),
        }
    }

    fn is_idle(&self) -> bool {
        self.cq.is_empty() && self.rq.is_empty() && self.events.is_empty() && self.faults.is_empty()
    }

    /// Marks that something was queued: the pending flag is set and the
    /// notification fd (if one was asked for) made readable.
    pub fn signal(&mut self) {
        self.pending.store(true, Ordering::Release);
        if self.signaled {
            return;
        }
        if let Some((tx, _)) = &self.notify {
            let _ = (&*tx).write(&[1]);
            self.signaled = true;
        }
    }

    /// Clears the pending flag and the notification fd once every queue
    /// is empty.
    pub fn unsignal_if_idle(&mut self) {
        if !self.is_idle() {
            return;
        }
        self.pending.store(false, Ordering::Release);
        if !self.signaled {
            return;
        }
        if let Some((_, rx)) = &self.notify {
            let mut b = [0u8; 16];
            while matches!((&*rx).read(&mut b), Ok(n) if n > 0) {}
        }
        self.signaled = false;
    }

    /// The read end of the notification socket pair, created on the first
    /// call (readable at once if something is already queued); `None` if
    /// the pair cannot be created.
    pub fn notify_fd(&mut self) -> Option<RawFd> {
        if self.notify.is_none() {
            self.notify = UnixStream::pair().ok().filter(|(a, b)| {
                a.set_nonblocking(true).is_ok() && b.set_nonblocking(true).is_ok()
            });
            if !self.is_idle() {
                self.signal();
            }
        }
        self.notify.as_ref().map(|(_, rx)| rx.as_raw_fd())
    }
}

/// Where a packet is next.
#[derive(Debug, Clone, Copy)]
enum Hop {
    /// Leaving `node` out of `port` onto the link.
    Transmit { node: u32, port: u8 },
    /// Arrived at `node` on `port` from the link.
    Arrive { node: u32, port: u8 },
    /// At switch `node` (having come in on `in_port`), to be routed by LID.
    SwitchRoute { node: u32, in_port: u8 },
    /// For `node` itself, received on `port`.
    Local { node: u32, port: u8 },
}

/// The whole fabric.
pub(crate) struct Core {
    pub nodes: Vec<Node>,
    pub by_id: FastMap<String, u32>,
    pub by_guid: FastMap<u64, u32>,
    pub cfg: FabricConfig,
    pub now: Duration,
    pub queue: VecDeque<Packet>,
    pub endpoints: Vec<Option<Endpoint>>,
    /// The endpoints at a port, per QP (QP0, QP1): one endpoint may hold
    /// both, or two endpoints one each.
    pub ep_at: FastMap<(u32, u8), [Option<usize>; 2]>,
    pub link_filter: Option<LinkFilter>,
    pub sm_handlers: FastMap<u32, SmHandler>,
    pub stats: FabricStats,
    /// Held packets going back on the wire: they enter (node, port).
    pub resume: super::faults::Resume,
    pub faults: super::faults::FaultState,
    /// MAD buffers of finished packets, reused by the next packets (saves
    /// an allocation and a free per packet).
    #[allow(clippy::vec_box)] // the boxes themselves are what is reused
    pub spare: Vec<Box<[u8; MAD_LEN]>>,
}

/// Most MAD buffers [`Core::spare`] keeps.
const MAX_SPARE: usize = 64;

impl Core {
    pub fn node(&self, n: u32) -> Option<&Node> {
        self.nodes.get(n as usize)
    }

    pub fn node_mut(&mut self, n: u32) -> Option<&mut Node> {
        self.nodes.get_mut(n as usize)
    }

    /// A MAD buffer for a new packet (contents unspecified: the caller
    /// writes all 256 bytes).
    pub fn mad_buf(&mut self) -> Box<[u8; MAD_LEN]> {
        self.spare.pop().unwrap_or_else(|| Box::new([0u8; MAD_LEN]))
    }

    /// Takes back the buffer of a packet that is done.
    fn recycle(&mut self, pkt: Packet) {
        if self.spare.len() < MAX_SPARE {
            self.spare.push(pkt.mad);
        }
    }

    pub fn drop_pkt(&mut self, reason: DropReason, node: u32, port: u8) {
        self.stats.record_drop(reason, node as usize, port);
    }

    /// Processes the next queued packet; false when the queue is empty.
    pub fn step(&mut self) -> bool {
        if let Some((n, p, mut pkt)) = self.resume.pop_front() {
            if let Some(hop) = self.enter(n, p, &pkt) {
                self.run(hop, &mut pkt);
            }
            self.recycle(pkt);
            return true;
        }
        let Some(mut pkt) = self.queue.pop_front() else {
            return false;
        };
        if let Some(o) = pkt.origin.take() {
            self.complete(o, WcStatus::Success);
        }
        self.stats.packets += 1;
        let (node, port) = pkt.start;
        let first = self.leave_local(node, port, &mut pkt);
        if let Some(hop) = first {
            self.run(hop, &mut pkt);
        }
        self.recycle(pkt);
        true
    }

    /// Processes packets until none is left (and returns how many).
    pub fn run_until_idle(&mut self) -> usize {
        let mut n = 0;
        while self.step() {
            n += 1;
        }
        n
    }

    /// Completes a work request on its endpoint.
    pub fn complete(&mut self, o: Origin, status: WcStatus) {
        if let Some(Some(ep)) = self.endpoints.get_mut(o.ep) {
            let i = o.qp.index();
            ep.outstanding[i] = ep.outstanding[i].saturating_sub(1);
            ep.cq.push_back(SendCompletion {
                wr_id: o.wr,
                qp: o.qp,
                status,
                vendor_err: 0,
            });
            ep.signal();
        }
    }

    fn run(&mut self, mut hop: Hop, pkt: &mut Packet) {
        for _ in 0..MAX_HOPS {
            let next = match hop {
                Hop::Transmit { node, port } => self.transmit(node, port, pkt),
                Hop::Arrive { node, port } => self.arrive(node, port, pkt),
                Hop::SwitchRoute { node, in_port } => self.switch_route(node, in_port, pkt),
                Hop::Local { node, port } => self.local(node, port, pkt),
            };
            match next {
                Some(h) => hop = h,
                None => return,
            }
        }
        let (n, p) = match hop {
            Hop::Transmit { node, port }
            | Hop::Arrive { node, port }
            | Hop::Local { node, port }
            | Hop::SwitchRoute {
                node,
                in_port: port,
            } => (node, port),
        };
        self.drop_pkt(DropReason::HopLimit, n, p);
    }

    /// The agent at `node`/`port` sends `pkt` (the kernel's send path:
    /// directed-route send rules, local loopback, or out of the port).
    fn leave_local(&mut self, node: u32, port: u8, pkt: &mut Packet) -> Option<Hop> {
        let is_switch = self.node(node)?.is_switch();
        if pkt.is_dr() {
            let mut smp = Smp::new_unchecked(&mut pkt.mad[..]);
            if smp.dr_slid() != PERMISSIVE_LID || smp.dr_dlid() != PERMISSIVE_LID {
                self.drop_pkt(DropReason::DrLidRouted, node, port);
                return None;
            }
            let cand = dr_send_port(&smp, is_switch, port);
            if dr_handle_send(&mut smp, is_switch, cand) == DrVerdict::Discard {
                self.drop_pkt(DropReason::DrPath, node, port);
                return None;
            }
            if is_local_smp(&smp) {
                self.smp_for_node(node, port, pkt);
                return None;
            }
            if is_local_returning_smp(&smp) {
                self.deliver(node, port, Qp::Qp0, 0, pkt);
                return None;
            }
            return Some(Hop::Transmit { node, port: cand });
        }
        if is_switch {
            return Some(Hop::SwitchRoute { node, in_port: 0 });
        }
        let own = self.node(node)?.port(port)?;
        if lid_match(&own.info, pkt.dlid) {
            // HCA loopback: to its own LID, never on the wire.
            return Some(Hop::Local { node, port });
        }
        Some(Hop::Transmit { node, port })
    }

    fn transmit(&mut self, node: u32, port: u8, pkt: &Packet) -> Option<Hop> {
        let n = self.node(node)?;
        let is_switch = n.is_switch();
        let Some(p) = n.port(port) else {
            self.drop_pkt(DropReason::NoSuchPort, node, port);
            return None;
        };
        let up = p.info.port_phys_state == PhysPortState::LINK_UP;
        let Some((rn, rp)) = p.remote.filter(|_| up) else {
            self.count_xmit_discard(node, port);
            self.drop_pkt(DropReason::LinkDown, node, port);
            return None;
        };
        let state_ok = if pkt.vl15 {
            p.info.port_state != PortState::DOWN
        } else {
            p.info.port_state == PortState::ACTIVE
        };
        if !state_ok {
            self.count_xmit_discard(node, port);
            self.drop_pkt(DropReason::PortNotActive, node, port);
            return None;
        }
        if is_switch
            && port != 0
            && !pkt.vl15
            && p.info.partition_enforcement_outbound
            && pkey_index(&p.pkeys, pkt.pkey).is_none()
        {
            if let Some(p) = self.port_mut(node, port) {
                p.counters.port_xmit_constraint_errors =
                    p.counters.port_xmit_constraint_errors.saturating_add(1);
                p.counters_ext.port_xmit_constraint_errors += 1;
            }
            self.drop_pkt(DropReason::PKeyEnforcement, node, port);
            return None;
        }
        let words = pkt.words();
        let unicast = pkt.unicast();
        if let Some(p) = self.port_mut(node, port) {
            count_xmit(p, words, unicast);
        }
        if let Some(f) = self.link_filter.as_mut() {
            let c = LinkCrossing {
                from: PortAddr {
                    node: node as usize,
                    port,
                },
                to: PortAddr {
                    node: rn as usize,
                    port: rp,
                },
                mad: &pkt.mad[..],
                vl15: pkt.vl15,
                now: self.now,
            };
            if f(&c) == LinkVerdict::Drop {
                self.drop_pkt(DropReason::LinkFilter, node, port);
                return None;
            }
        }
        if let super::faults::Verdict::Gone = self.link_fault(node, port, rn, rp, pkt) {
            return None;
        }
        self.enter(rn, rp, pkt)
    }

    /// A packet comes off the wire into `rn`/`rp`: lost if that port is
    /// not physically up, else counted as received there.
    fn enter(&mut self, rn: u32, rp: u8, pkt: &Packet) -> Option<Hop> {
        let words = pkt.words();
        let unicast = pkt.unicast();
        if let Some(p) = self.port_mut(rn, rp) {
            if p.info.port_phys_state != PhysPortState::LINK_UP {
                p.counters.port_rcv_errors = p.counters.port_rcv_errors.saturating_add(1);
                p.counters_ext.port_rcv_errors += 1;
                self.drop_pkt(DropReason::LinkDown, rn, rp);
                return None;
            }
            count_rcv(p, words, unicast);
        }
        Some(Hop::Arrive { node: rn, port: rp })
    }

    fn arrive(&mut self, node: u32, port: u8, pkt: &Packet) -> Option<Hop> {
        let n = self.node(node)?;
        let p = n.port(port)?;
        if !pkt.vl15 && p.info.port_state.0 < PortState::ARMED.0 {
            self.drop_pkt(DropReason::PortNotActive, node, port);
            return None;
        }
        if n.is_switch() {
            if port != 0
                && !pkt.vl15
                && p.info.partition_enforcement_inbound
                && pkey_index(&p.pkeys, pkt.pkey).is_none()
            {
                if let Some(p) = self.port_mut(node, port) {
                    p.counters.port_rcv_constraint_errors =
                        p.counters.port_rcv_constraint_errors.saturating_add(1);
                    p.counters_ext.port_rcv_constraint_errors += 1;
                }
                self.drop_pkt(DropReason::PKeyEnforcement, node, port);
                return None;
            }
            return Some(Hop::SwitchRoute {
                node,
                in_port: port,
            });
        }
        let accept = if pkt.dlid == PERMISSIVE_LID {
            pkt.vl15
        } else {
            lid_match(&p.info, pkt.dlid)
        };
        if !accept {
            if let Some(p) = self.port_mut(node, port) {
                p.counters.port_rcv_errors = p.counters.port_rcv_errors.saturating_add(1);
                p.counters_ext.port_rcv_errors += 1;
            }
            self.drop_pkt(DropReason::NotForThisPort, node, port);
            return None;
        }
        Some(Hop::Local { node, port })
    }

    /// A switch routes a LID-addressed packet: to itself (its LID or the
    /// permissive LID), or out of the port its LFT names.
    fn switch_route(&mut self, node: u32, in_port: u8, pkt: &Packet) -> Option<Hop> {
        let n = self.node(node)?;
        let p0 = n.port(0)?;
        if pkt.dlid == PERMISSIVE_LID || lid_match(&p0.info, pkt.dlid) {
            return Some(Hop::Local {
                node,
                port: in_port,
            });
        }
        let reason = if pkt.dlid == 0 {
            DropReason::InvalidLid
        } else if pkt.dlid >= 0xC000 {
            DropReason::Multicast
        } else {
            let sw = n.sw.as_ref()?;
            let out = if pkt.dlid > sw.info.linear_fdb_top {
                0xFF
            } else {
                sw.lft.get(usize::from(pkt.dlid)).copied().unwrap_or(0xFF)
            };
            if out != 0 && out != 0xFF && out <= n.num_ports() {
                return Some(Hop::Transmit { node, port: out });
            }
            DropReason::NoRoute
        };
        if in_port != 0 && reason == DropReason::NoRoute {
            if let Some(p) = self.port_mut(node, in_port) {
                p.counters.port_rcv_switch_relay_errors =
                    p.counters.port_rcv_switch_relay_errors.saturating_add(1);
                p.counters_ext.port_rcv_switch_relay_errors += 1;
            }
        }
        self.drop_pkt(reason, node, in_port);
        None
    }

    /// A packet for `node` itself (its QP0 or QP1), received on `port`.
    fn local(&mut self, node: u32, port: u8, pkt: &mut Packet) -> Option<Hop> {
        if pkt.mad[0] != 1 {
            self.drop_pkt(DropReason::BadBaseVersion, node, port);
            return None;
        }
        let class = MgmtClass(pkt.mad[1]);
        match pkt.dqpn {
            0 => {
                if !pkt.vl15 {
                    self.drop_pkt(DropReason::Qp0NotVl15, node, port);
                    return None;
                }
                if !class.is_smp() {
                    self.drop_pkt(DropReason::WrongQp, node, port);
                    return None;
                }
                if pkt.is_dr() {
                    return self.dr_arrived(node, port, pkt);
                }
                self.smp_for_node(node, port, pkt);
                None
            }
            1 => {
                if pkt.vl15 {
                    if let Some(p) = self.port_mut(node, port) {
                        p.counters.vl15_dropped = p.counters.vl15_dropped.saturating_add(1);
                        p.counters_ext.vl15_dropped += 1;
                    }
                    self.drop_pkt(DropReason::Vl15NotQp0, node, port);
                    return None;
                }
                if class.is_smp() {
                    self.drop_pkt(DropReason::WrongQp, node, port);
                    return None;
                }
                let mgmt = self.node(node)?.mgmt_port(port);
                let idx = self
                    .node(node)
                    .and_then(|n| n.port(mgmt))
                    .and_then(|p| pkey_index(&p.pkeys, pkt.pkey));
                let Some(idx) = idx else {
                    if let Some(p) = self.port_mut(node, mgmt) {
                        p.info.p_key_violations = p.info.p_key_violations.saturating_add(1);
                    }
                    self.drop_pkt(DropReason::PKey, node, port);
                    return None;
                };
                self.gsi_for_node(node, port, idx, pkt);
                None
            }
            _ => {
                self.drop_pkt(DropReason::NoReceiver, node, port);
                None
            }
        }
    }

    /// A directed-route SMP arrived at `node` on `port`: the receive
    /// rules, then forward, hand to the SMA, or deliver to the requester.
    fn dr_arrived(&mut self, node: u32, port: u8, pkt: &mut Packet) -> Option<Hop> {
        let n = self.node(node)?;
        let is_switch = n.is_switch();
        let nports = n.num_ports();
        let mut smp = Smp::new_unchecked(&mut pkt.mad[..]);
        if smp.dr_slid() != PERMISSIVE_LID || smp.dr_dlid() != PERMISSIVE_LID {
            self.drop_pkt(DropReason::DrLidRouted, node, port);
            return None;
        }
        if dr_handle_recv(&mut smp, is_switch, port, nports) == DrVerdict::Discard {
            self.drop_pkt(DropReason::DrPath, node, port);
            return None;
        }
        match dr_check_forward(&smp) {
            DrForward::Forward => {
                let out = dr_fwd_port(&smp);
                if !is_switch || out == 0 || out > nports {
                    if let Some(p) = self.port_mut(node, port) {
                        p.counters.port_rcv_switch_relay_errors =
                            p.counters.port_rcv_switch_relay_errors.saturating_add(1);
                        p.counters_ext.port_rcv_switch_relay_errors += 1;
                    }
                    self.drop_pkt(DropReason::DrPath, node, port);
                    return None;
                }
                if dr_handle_send(&mut smp, true, out) == DrVerdict::Discard {
                    self.drop_pkt(DropReason::DrPath, node, port);
                    return None;
                }
                Some(Hop::Transmit { node, port: out })
            }
            DrForward::Send => {
                if dr_handle_send(&mut smp, is_switch, port) == DrVerdict::Discard
                    || !is_local_smp(&smp)
                {
                    self.drop_pkt(DropReason::DrPath, node, port);
                    return None;
                }
                self.smp_for_node(node, port, pkt);
                None
            }
            DrForward::Local => {
                if !is_local_returning_smp(&smp) {
                    self.drop_pkt(DropReason::DrPath, node, port);
                    return None;
                }
                let mgmt = self.node(node)?.mgmt_port(port);
                self.deliver(node, mgmt, Qp::Qp0, 0, pkt);
                None
            }
        }
    }

    /// An SMP (request or response) for `node`'s QP0, received on `port`.
    fn smp_for_node(&mut self, node: u32, port: u8, pkt: &Packet) {
        let Some(n) = self.node(node) else { return };
        let mgmt = n.mgmt_port(port);
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        let method = mad.method();
        if mad.response_bit() {
            self.deliver(node, mgmt, Qp::Qp0, 0, pkt);
            return;
        }
        if method == Method::TRAP_REPRESS {
            // For whoever sent the trap: an endpoint there, else the
            // node's SMA (a switch's Trap 128).
            if self.ep_for(node, mgmt, Qp::Qp0).is_some() {
                self.deliver(node, mgmt, Qp::Qp0, 0, pkt);
            } else {
                self.sma(node, port, pkt);
            }
            return;
        }
        let to_sm = method == Method::TRAP
            || method == Method::REPORT
            || mad.attr_id() == mad_core::wire::AttributeId::SM_INFO;
        if to_sm && self.give_to_sm(node, port, pkt) {
            return;
        }
        if method == Method::TRAP || method == Method::REPORT {
            self.drop_pkt(DropReason::NoReceiver, node, port);
            return;
        }
        self.sma(node, port, pkt);
    }

    /// Gives an SMInfo request, trap or report to the SM at this node: an
    /// installed handler, else an attached endpoint that declared itself
    /// SM. False when neither is there.
    fn give_to_sm(&mut self, node: u32, port: u8, pkt: &Packet) -> bool {
        let mgmt = self.node(node).map_or(port, |n| n.mgmt_port(port));
        if let Some(mut h) = self.sm_handlers.remove(&node) {
            let req = super::SmRequest {
                node: node as usize,
                port,
                mad: &pkt.mad[..],
            };
            let reply = h(&req);
            self.sm_handlers.insert(node, h);
            self.stats.to_sm += 1;
            if let super::SmReply::Respond { status, data } = reply {
                self.respond_smp(node, port, pkt, status, &data);
            }
            return true;
        }
        let is_sm = self
            .ep_for(node, mgmt, Qp::Qp0)
            .and_then(|e| self.endpoints.get(e))
            .and_then(Option::as_ref)
            .is_some_and(|e| e.is_sm);
        if is_sm {
            self.deliver(node, mgmt, Qp::Qp0, 0, pkt);
            return true;
        }
        false
    }

    /// A GSI MAD for `node` (P_Key already checked; `pkey_index` is its
    /// index in the receiving port's table).
    fn gsi_for_node(&mut self, node: u32, port: u8, pkey_index: u16, pkt: &Packet) {
        let Some(n) = self.node(node) else { return };
        let mgmt = n.mgmt_port(port);
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        if mad.is_response() {
            self.deliver(node, mgmt, Qp::Qp1, pkey_index, pkt);
            return;
        }
        if mad.mgmt_class() == MgmtClass::PERF_MGT {
            self.pma(node, port, pkt);
            return;
        }
        if self.ep_for(node, mgmt, Qp::Qp1).is_some() {
            self.deliver(node, mgmt, Qp::Qp1, pkey_index, pkt);
            return;
        }
        let m = mad.method();
        if m == Method::GET || m == Method::SET {
            // No agent: the kernel answers "unsupported" (MAD.md §3).
            self.stats.unmatched += 1;
            let data = pkt.mad[24..].to_vec();
            self.respond_gsi(
                node,
                port,
                pkt,
                mad_core::wire::MadStatus::METHOD_ATTR_UNSUPPORTED.0,
                &data,
                24,
            );
            return;
        }
        self.drop_pkt(DropReason::NoReceiver, node, port);
    }

    /// Puts `pkt` on the receive queue of the endpoint at `node`/`port`.
    pub(crate) fn deliver(&mut self, node: u32, port: u8, qp: Qp, pkey_index: u16, pkt: &Packet) {
        let Some(e) = self.ep_for(node, port, qp) else {
            self.drop_pkt(DropReason::NoReceiver, node, port);
            return;
        };
        let path_bits = self
            .node(node)
            .and_then(|n| n.port(port))
            .filter(|p| lid_match(&p.info, pkt.dlid))
            .map_or(0, |p| (pkt.dlid - p.info.lid) as u8);
        let Some(Some(ep)) = self.endpoints.get_mut(e) else {
            self.drop_pkt(DropReason::NoReceiver, node, port);
            return;
        };
        if !matches!(
            ep.qp_state[qp.index()],
            QpState::Rtr | QpState::Rts | QpState::Sqe
        ) {
            self.drop_pkt(DropReason::QpNotReady, node, port);
            return;
        }
        ep.rq.push_back(Received {
            qp,
            src: Address {
                lid: pkt.slid,
                qpn: pkt.sqpn,
                qkey: if qp == Qp::Qp0 { 0 } else { GSI_QKEY },
                sl: pkt.sl,
                pkey_index,
                path_bits,
                grh: pkt.grh,
            },
            mad: mad_core::MadBuf::from_slice(&pkt.mad[..]),
        });
        ep.signal();
        self.stats.to_endpoints += 1;
    }

    /// Queues the answer to an SMP received on `port` of `node`: GetResp
    /// with `status` and `data`, directed-route or LID-routed like the
    /// request.
    pub(crate) fn respond_smp(
        &mut self,
        node: u32,
        port: u8,
        req: &Packet,
        status: u16,
        data: &[u8],
    ) {
        let Some(n) = self.node(node) else { return };
        let mgmt = n.mgmt_port(port);
        let lid = n.port(mgmt).map_or(0, |p| p.info.lid);
        let mut mad = self.mad_buf();
        *mad = *req.mad;
        let dr = req.is_dr();
        {
            let mut m = Mad::new_unchecked(&mut mad[..]);
            m.set_method(Method::GET, true);
        }
        if dr {
            let mut s = Smp::new_unchecked(&mut mad[..]);
            let hc = s.hop_cnt();
            s.set_direction(true);
            s.set_hop_ptr(hc.saturating_add(1));
            s.set_dr_status(status);
        } else {
            Mad::new_unchecked(&mut mad[..]).set_status(mad_core::wire::MadStatus(status));
        }
        let n = data.len().min(64);
        mad[64..64 + n].copy_from_slice(&data[..n]);
        self.queue.push_back(Packet {
            mad,
            slid: lid,
            dlid: if dr { PERMISSIVE_LID } else { req.slid },
            sqpn: 0,
            dqpn: req.sqpn,
            sl: req.sl,
            pkey: req.pkey,
            vl15: true,
            grh: None,
            origin: None,
            start: (node, mgmt),
        });
    }

    /// Queues a GSI answer (GetResp, `status`, `data` written at
    /// `data_offset`) to a QP1 request received on `port` of `node`.
    pub(crate) fn respond_gsi(
        &mut self,
        node: u32,
        port: u8,
        req: &Packet,
        status: u16,
        data: &[u8],
        data_offset: usize,
    ) {
        let Some(n) = self.node(node) else { return };
        let mgmt = n.mgmt_port(port);
        let Some(p) = n.port(mgmt) else { return };
        let lid = p.info.lid;
        let gid = gid_of(p);
        let mut mad = self.mad_buf();
        *mad = *req.mad;
        {
            let mut m = Mad::new_unchecked(&mut mad[..]);
            m.set_method(Method::GET, true);
            m.set_status(mad_core::wire::MadStatus(status));
        }
        let end = (data_offset + data.len()).min(MAD_LEN);
        if data_offset < end {
            mad[data_offset..end].copy_from_slice(&data[..end - data_offset]);
        }
        self.queue.push_back(Packet {
            mad,
            slid: lid,
            dlid: req.slid,
            sqpn: 1,
            dqpn: req.sqpn,
            sl: req.sl,
            pkey: req.pkey,
            vl15: false,
            grh: req.grh.map(|g| Grh { gid, ..g }),
            origin: None,
            start: (node, mgmt),
        });
    }

    pub(crate) fn port_mut(&mut self, node: u32, port: u8) -> Option<&mut super::node::Port> {
        self.node_mut(node)?.port_mut(port)
    }

    fn count_xmit_discard(&mut self, node: u32, port: u8) {
        if let Some(p) = self.port_mut(node, port) {
            p.counters.port_xmit_discards = p.counters.port_xmit_discards.saturating_add(1);
            p.counters_ext.port_xmit_discards += 1;
        }
    }

    /// Tells the endpoint at `node`/`port` (if any) what changed between
    /// `old` and `new` PortInfo.
    pub(crate) fn port_events(&mut self, node: u32, port: u8, old: &PortInfo, new: &PortInfo) {
        let mut evs = Vec::new();
        if old.lid != new.lid || old.lmc != new.lmc {
            evs.push(AsyncEvent::LidChange);
        }
        if old.gid_prefix != new.gid_prefix {
            evs.push(AsyncEvent::GidChange);
        }
        if old.master_sm_lid != new.master_sm_lid || old.master_sm_sl != new.master_sm_sl {
            evs.push(AsyncEvent::SmChange);
        }
        let was = old.port_state == PortState::ACTIVE;
        let is = new.port_state == PortState::ACTIVE;
        if is && !was {
            evs.push(AsyncEvent::PortActive);
        } else if was && !is {
            evs.push(AsyncEvent::PortError);
        }
        for ev in evs {
            self.port_event(node, port, ev);
        }
    }

    /// Pushes `ev` to the endpoints at `node`/`port` (each once), if any.
    pub(crate) fn port_event(&mut self, node: u32, port: u8, ev: AsyncEvent) {
        for e in self.eps_at(node, port) {
            if let Some(Some(ep)) = self.endpoints.get_mut(e) {
                ep.events.push_back(ev);
                ep.signal();
            }
        }
    }

    /// The endpoint that owns `qp` at `node`/`port`.
    pub(crate) fn ep_for(&self, node: u32, port: u8, qp: Qp) -> Option<usize> {
        self.ep_at.get(&(node, port)).and_then(|e| e[qp.index()])
    }

    /// The distinct endpoints at `node`/`port`.
    pub(crate) fn eps_at(&self, node: u32, port: u8) -> Vec<usize> {
        match self.ep_at.get(&(node, port)) {
            Some([Some(a), Some(b)]) if a == b => vec![*a],
            Some([a, b]) => a.iter().chain(b.iter()).copied().collect(),
            None => Vec::new(),
        }
    }
}

/// The port a directed-route SMP leaves through when its agent at `port`
/// sends it: a CA's own port; on a switch the path entry the send rules
/// will check (InitialPath[hp + 1] outbound, ReturnPath[hp − 1] back).
fn dr_send_port<T: AsRef<[u8]>>(smp: &Smp<T>, is_switch: bool, port: u8) -> u8 {
    if !is_switch {
        return port;
    }
    let hp = usize::from(smp.hop_ptr());
    let e = if smp.direction() {
        hp.checked_sub(1).and_then(|i| smp.return_path().get(i))
    } else {
        smp.initial_path().get(hp + 1)
    };
    e.copied().unwrap_or(0)
}

/// Applies the send rules to a copy of a DR SMP an endpoint at `port` of
/// a node posts: `Err` with the reason when the kernel would refuse the
/// post (`-EINVAL`).
pub(crate) fn check_dr_post(mad: &[u8], is_switch: bool, port: u8) -> Result<(), String> {
    let mut copy = [0u8; MAD_LEN];
    let n = mad.len().min(MAD_LEN);
    copy[..n].copy_from_slice(&mad[..n]);
    let mut smp = Smp::new_unchecked(&mut copy[..]);
    if smp.dr_slid() != PERMISSIVE_LID || smp.dr_dlid() != PERMISSIVE_LID {
        return Err(
            "directed-route SMPs with LID-routed parts (DrSLID/DrDLID not 0xFFFF) are not \
             supported by the simulated fabric"
                .into(),
        );
    }
    let cand = dr_send_port(&smp, is_switch, port);
    if dr_handle_send(&mut smp, is_switch, cand) == DrVerdict::Discard {
        return Err(format!(
            "invalid directed route for a send from port {port} (hop pointer {}, hop count {}, \
             direction {})",
            mad.get(6).copied().unwrap_or(0),
            mad.get(7).copied().unwrap_or(0),
            u8::from(mad.get(4).is_some_and(|b| b & 0x80 != 0)),
        ));
    }
    Ok(())
}

/// True when `dlid` is one of the port's LIDs (base LID .. + 2^LMC − 1).
pub(crate) fn lid_match(info: &PortInfo, dlid: u16) -> bool {
    let base = u32::from(info.lid);
    let d = u32::from(dlid);
    base != 0 && d >= base && d < base + (1u32 << info.lmc.min(7))
}

/// Index of a table entry that admits `pkey`: same low 15 bits, and not
/// both limited members.
pub(crate) fn pkey_index(table: &[u16], pkey: u16) -> Option<u16> {
    let key = pkey & 0x7FFF;
    if key == 0 {
        return None;
    }
    table
        .iter()
        .position(|&e| e & 0x7FFF == key && (e & 0x8000 != 0 || pkey & 0x8000 != 0))
        .map(|i| i as u16)
}

/// A port's GID (subnet prefix + port GUID).
pub(crate) fn gid_of(p: &super::node::Port) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[..8].copy_from_slice(&p.info.gid_prefix.to_be_bytes());
    gid[8..].copy_from_slice(&p.guid.to_be_bytes());
    gid
}

fn count_xmit(p: &mut super::node::Port, words: u32, unicast: bool) {
    let c = &mut p.counters;
    c.port_xmit_data = c.port_xmit_data.saturating_add(words);
    c.port_xmit_pkts = c.port_xmit_pkts.saturating_add(1);
    let e = &mut p.counters_ext;
    e.port_xmit_data = e.port_xmit_data.saturating_add(u64::from(words));
    e.port_xmit_pkts = e.port_xmit_pkts.saturating_add(1);
    if unicast {
        e.port_unicast_xmit_pkts = e.port_unicast_xmit_pkts.saturating_add(1);
    } else {
        e.port_multicast_xmit_pkts = e.port_multicast_xmit_pkts.saturating_add(1);
    }
}

fn count_rcv(p: &mut super::node::Port, words: u32, unicast: bool) {
    let c = &mut p.counters;
    c.port_rcv_data = c.port_rcv_data.saturating_add(words);
    c.port_rcv_pkts = c.port_rcv_pkts.saturating_add(1);
    let e = &mut p.counters_ext;
    e.port_rcv_data = e.port_rcv_data.saturating_add(u64::from(words));
    e.port_rcv_pkts = e.port_rcv_pkts.saturating_add(1);
    if unicast {
        e.port_unicast_rcv_pkts = e.port_unicast_rcv_pkts.saturating_add(1);
    } else {
        e.port_multicast_rcv_pkts = e.port_multicast_rcv_pkts.saturating_add(1);
    }
}
