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
    Address, AsyncEvent, Grh, Qp, QpState, Received, SendCompletion, Unsendable, WcStatus, WrId,
    GSI_QKEY, PERMISSIVE_LID,
};
use mad_core::wire::attr::{PhysPortState, PortInfo, PortState};
use mad_core::wire::smp::{
    dr_arrive, dr_check_send, dr_fwd_port, dr_handle_send, is_local_returning_smp, is_local_smp,
    DrArrival, DrVerdict, Smp,
};
use mad_core::wire::{Mad, Method, MgmtClass, MAD_LEN};

pub(super) mod faults;
mod forward;
mod local;

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
    /// The common header of the packet's MAD.
    fn head(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(&self.mad[..])
    }
    fn is_dr(&self) -> bool {
        self.head().mgmt_class() == MgmtClass::SUBN_DIRECTED_ROUTE
    }
    fn unicast(&self) -> bool {
        !self.multicast()
    }
    /// True for a multicast DLID ([`MCAST_LID_BASE`] up to but not
    /// including the permissive LID).
    fn multicast(&self) -> bool {
        (MCAST_LID_BASE..PERMISSIVE_LID).contains(&self.dlid)
    }
}

/// The first multicast LID.
const MCAST_LID_BASE: u16 = 0xC000;

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
    pub resume: faults::Resume,
    pub faults: faults::FaultState,
    /// MAD buffers of finished packets, reused by the next packets (saves
    /// an allocation and a free per packet).
    #[allow(clippy::vec_box)] // the boxes themselves are what is reused
    pub spare: Vec<Box<[u8; MAD_LEN]>>,
    /// The switches' LFT blocks, each distinct block once.
    pub lft_blocks: mad_sm::lft::BlockInterner,
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
            if let Some(hop) = self.enter(n, p, &mut pkt) {
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

    pub(crate) fn port_mut(&mut self, node: u32, port: u8) -> Option<&mut super::node::Port> {
        self.node_mut(node)?.port_mut(port)
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
/// will check (InitialPath[hp + 1] outbound, ReturnPath[hp − 1] back,
/// 0 when there is none: [`dr_fwd_port`]).
fn dr_send_port<T: AsRef<[u8]>>(smp: &Smp<T>, is_switch: bool, port: u8) -> u8 {
    if is_switch {
        dr_fwd_port(smp)
    } else {
        port
    }
}

/// Applies the send rules, without changing it, to a DR SMP an endpoint
/// at `port` of a node posts: `Err` with the reason when the kernel would
/// refuse the post (`-EINVAL`). A MAD shorter than 256 bytes reads as if
/// padded with zeros.
pub(crate) fn check_dr_post(mad: &[u8], is_switch: bool, port: u8) -> Result<(), Unsendable> {
    if mad.len() < MAD_LEN {
        let mut padded = [0u8; MAD_LEN];
        padded[..mad.len()].copy_from_slice(mad);
        return check_dr_post(&padded, is_switch, port);
    }
    let smp = Smp::new_unchecked(mad);
    if smp.dr_slid() != PERMISSIVE_LID || smp.dr_dlid() != PERMISSIVE_LID {
        return Err(Unsendable::DrLidRouted);
    }
    let cand = dr_send_port(&smp, is_switch, port);
    if dr_check_send(&smp, is_switch, cand) == DrVerdict::Discard {
        return Err(Unsendable::InvalidRoute {
            port,
            hop_ptr: smp.hop_ptr(),
            hop_cnt: smp.hop_cnt(),
            direction: u8::from(smp.direction()),
        });
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

/// Which way a packet crosses a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Received by the port.
    Inbound,
    /// Sent out of the port.
    Outbound,
}

/// Counts a packet port `p` received and dropped for `why`: in
/// PortRcvErrors of PortCounters and PortCountersExtended, and in the
/// detail counter that breaks it down.
fn count_rcv_error(p: &mut super::node::Port, why: super::pma_ext::Discard) {
    p.counters.port_rcv_errors = p.counters.port_rcv_errors.saturating_add(1);
    p.counters_ext.port_rcv_errors += 1;
    p.perf.discard(why);
}

/// Counts a packet crossing port `p` in direction `dir` in PortCounters,
/// PortCountersExtended and the per-SL / per-VL counters (in a run of
/// packets of its kind: [`super::traffic`]).
#[inline]
fn count_packet(p: &mut super::node::Port, dir: Direction, pkt: &Packet) {
    let vl = if pkt.vl15 {
        15
    } else {
        let e = p.sl2vl[usize::from(pkt.sl & 0xF) / 2];
        if pkt.sl.is_multiple_of(2) {
            e >> 4
        } else {
            e & 0xF
        }
    };
    let way = match dir {
        Direction::Inbound => super::pma_ext::Way::Rcv,
        Direction::Outbound => super::pma_ext::Way::Xmit,
    };
    let kind = super::traffic::kind(pkt.sl, vl, pkt.words(), pkt.unicast());
    p.count_crossing(way, kind);
}
