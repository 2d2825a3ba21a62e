//! Operation sequences on the agent [`Engine`] over an in-memory transport
//! (a [`Loopback`] whose far side records what was sent, in a
//! [`FaultInjector`]): registrations, sends (single MADs and RMPP
//! transfers, requests and responses, with and without a response
//! expected), cancel, modify, deregistration, hostile peers answering with
//! what was actually sent (responses with the sent TIDs from the right or
//! a wrong source, RMPP ACK / STOP / ABORT for outbound transfers, DATA
//! for inbound ones, raw bytes), work-request errors, stalls, QP / CQ /
//! device faults, soft resets, and a virtual clock. After every step:
//! every send completes at most once and to the agent that made it, the
//! send table holds exactly the sends not yet completed, nothing of a
//! deregistered agent is delivered, reassemblies and queued receives stay
//! within their bounds, and no timer is left in the past. At the end,
//! with the peer silent, every send completes; once every agent has
//! deregistered the engine holds nothing.

mod check;

use crate::clock::Clock;
use crate::ops::Ops;
use arbitrary::{Arbitrary, Unstructured};
use mad_agents::{
    AgentEvent, AgentId, AgentSpec, Stack, EngineConfig, FlowLimit, Message, SendId, SendRequest,
    SendStatus,
};
use mad_core::transport::fault::FaultInjector;
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, AsyncEvent, Grh, Qp, Received, WcStatus};
use mad_core::wire::{Method, MgmtClass};
use mad_rmpp::segment::{header, write_header, FLAG_ACTIVE};
use mad_rmpp::{ReceiverConfig, RmppStatus, RmppType, Sender, SenderConfig};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The transport under the engine.
type Wire = FaultInjector<Loopback>;

/// What the far side saw: (QP, MAD, destination).
type Log = Arc<Mutex<Vec<(Qp, Vec<u8>, Address)>>>;

/// The vendor range-2 class of the RMPP request agent, and its OUI.
const VENDOR: u8 = 0x32;
const OUI: u32 = 0x00_1405;

/// Engine settings the input picks (small bounds, so that they are hit;
/// each field is taken modulo a small range).
#[derive(Arbitrary, Debug)]
struct Setup {
    recv_queue_bound: u8,
    linear_retries: u8,
    max_backoff_ms: u16,
    answer_unmatched: bool,
    per_agent: u8,
    per_port: u8,
    check_response_source: bool,
    end_unacknowledged_answers: bool,
    rx_window: u8,
    rx_max_total: u8,
    rx_max_per_source: u8,
    rx_max_lingering: u8,
    rx_max_bytes: u16,
    rx_max_message_len: u16,
}

/// The kinds of agent the input registers.
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Send-only SA client with RMPP (GetTable, long Sets).
    SaRmpp,
    /// Vendor range-2 agent with RMPP, owning Send / Get / Set requests.
    VendorRmpp,
    /// PerfMgt agent without RMPP, owning Get requests.
    Perf,
    /// Send-only SMP agent on QP0.
    Smp,
    /// SA agent without RMPP (sees raw segments), owning Report.
    SaRaw,
}

/// A peer address: two LIDs, two GIDs behind LID 0, the permissive LID.
fn peer(i: u8, qp: Qp) -> Address {
    let mut a = match i % 5 {
        0 => Address::gsi(2),
        1 => Address::gsi(3),
        2 | 3 => Address {
            grh: Some(Grh {
                gid: [0xA0 + i % 5; 16],
                hop_limit: 64,
                ..Grh::default()
            }),
            ..Address::gsi(0)
        },
        _ => Address::gsi(0xFFFF),
    };
    if qp == Qp::Qp0 {
        a.qpn = 0;
        a.qkey = 0;
    }
    a
}

/// The source address a MAD from the destination `dest` of a send arrives
/// with (`wrong`: another peer's).
fn source_of(dest: &Address, wrong: Option<u8>) -> Address {
    match wrong {
        Some(w) => {
            let mut a = peer(w, if dest.qpn == 0 { Qp::Qp0 } else { Qp::Qp1 });
            if a.lid == 0xFFFF {
                a.lid = 7;
            }
            a
        }
        None => {
            let mut a = *dest;
            if a.lid == 0xFFFF {
                a.lid = 9;
            }
            a
        }
    }
}

/// A send the input asks for.
#[derive(Arbitrary, Debug)]
struct SendSpec {
    /// Which live agent.
    agent: u8,
    /// Picks the method (request kinds and a response).
    method: u8,
    /// Data length past the class header (RMPP when it does not fit).
    len: u16,
    /// Response timeout in ms (0: none expected).
    timeout_ms: u16,
    /// Retries (modulo 4).
    retries: u8,
    /// A total timeout.
    total_ms: Option<u16>,
    /// The caller's low TID bits.
    low_tid: Option<u8>,
    /// Which peer.
    dest: u8,
    /// Set the RMPP Active flag on a one-MAD message.
    active: bool,
}

/// A segment selection of an RMPP message.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Pick {
    /// All segments in order.
    All,
    /// One segment (modulo the count).
    One(u8),
    /// Segments from `.0`, `.1` of them.
    Run(u8, u8),
}

/// One step.
#[derive(Arbitrary, Debug)]
enum Op {
    /// Registers an agent (`.1`: holding soft resets).
    Register(Kind, bool),
    /// Deregisters a live agent.
    Deregister(u8),
    /// Sends.
    Send(SendSpec),
    /// Cancels one of the latest sends.
    Cancel(u8),
    /// Modifies one of the latest sends' timeout (ms; 0 cancels).
    Modify(u8, u16),
    /// A response to the `.0`-th MAD the far side saw (from its
    /// destination, or from peer `.1`), with `.2` as status; `.3` keeps
    /// its RMPP header (a DATA segment sent back).
    Respond(u8, Option<u8>, u16, bool),
    /// An RMPP response (a real sender's segments) to the `.0`-th MAD
    /// seen, of `.1` data bytes.
    RespondRmpp(u8, u16, Pick, Option<u8>),
    /// An RMPP control MAD on the `seen`-th MAD the far side saw, with
    /// its response bit flipped: ACK (`seg`, window `seg + win`, or `win -
    /// 200` past 200), STOP, ABORT or any type; `status` `None` is the
    /// valid one for the type.
    Control {
        seen: u8,
        rtype: u8,
        status: Option<u8>,
        seg: u8,
        win: u8,
        wrong: Option<u8>,
    },
    /// An unsolicited RMPP request (a real sender's segments) to the
    /// vendor agent, from a peer: TID, method and data length pick the
    /// message.
    Inbound {
        tid: u8,
        method: u8,
        len: u16,
        pick: Pick,
        from: u8,
    },
    /// Raw bytes received on QP0 (`.0`) or QP1 from a peer.
    Raw(bool, u8, Vec<u8>),
    /// The next send that is not flushed fails with one of a few statuses.
    FailNext(u8),
    /// The device stops (or resumes) processing work requests.
    Stall(bool),
    /// A QP / CQ fault, a soft reset, a port event or (rarely) device death.
    Fault(u8),
    /// An agent acknowledges a soft reset.
    AckReset(u8),
    /// A received message goes back to its agent's pool.
    Recycle(u8),
    /// `poll` now.
    Poll,
    /// The clock moves this many ms.
    Advance(u16),
    /// The clock moves to the engine's next deadline, and `poll`.
    ToDeadline,
}

/// One send the harness made.
struct SendRec {
    agent: AgentId,
    tid: u64,
    cookie: u64,
    /// A response is expected.
    expects: bool,
    done: bool,
}

/// What the harness tracks.
struct Harness {
    e: Stack<Wire>,
    log: Log,
    cfg: EngineConfig,
    clock: Clock,
    /// MADs the far side saw (newest last, at most 64).
    seen: Vec<(Qp, Vec<u8>, Address)>,
    /// Live agents (registered, not yet reaped).
    agents: Vec<(AgentId, Kind)>,
    sends: HashMap<SendId, SendRec>,
    /// The latest sends (at most 64), for cancel and modify.
    order: Vec<SendId>,
    deregistered: HashSet<AgentId>,
    reaped: HashSet<AgentId>,
    /// Reassembled messages the peer sent, by (TID, method).
    expected: HashMap<(u64, u8), Vec<u8>>,
    /// (TID, method) pairs that something else than one message's
    /// genuine segments was received with.
    tainted: HashSet<(u64, u8)>,
    /// Received messages held, to recycle.
    held: Vec<(AgentId, Message)>,
    cookie: u64,
}

/// The (TID, method) of a MAD.
fn tid_method(mad: &[u8]) -> Option<(u64, u8)> {
    let m = mad_core::wire::Mad::new_checked(mad).ok()?;
    Some((m.tid(), m.raw_method()))
}

/// The segments a real sender makes of `message` (`hdr` header bytes).
fn segments(message: Vec<u8>, hdr: usize, clock: &Clock) -> Vec<Vec<u8>> {
    let cfg = SenderConfig {
        initial_window: u32::MAX,
        ..SenderConfig::default()
    };
    let mut tx = Sender::from_message(message, hdr, cfg, clock.now()).unwrap();
    std::iter::from_fn(|| tx.poll_transmit(clock.now())).collect()
}

fn picked(segs: &[Vec<u8>], pick: Pick) -> Vec<Vec<u8>> {
    let n = segs.len();
    match pick {
        Pick::All => segs.to_vec(),
        Pick::One(i) => vec![segs[usize::from(i) % n].clone()],
        Pick::Run(from, len) => segs
            .iter()
            .skip(usize::from(from) % n)
            .take(usize::from(len))
            .cloned()
            .collect(),
    }
}

impl Harness {
    fn wire(&mut self) -> &mut Wire {
        self.e.transport_mut()
    }

    /// A MAD arrives (at the next poll) on `qp` from `src`; `genuine`: a
    /// segment of the one message generated with its (TID, method).
    fn recv(&mut self, qp: Qp, src: Address, mad: Vec<u8>, genuine: bool) {
        if !genuine {
            if let Some(k) = tid_method(&mad) {
                self.tainted.insert(k);
            }
        }
        self.wire().inner_mut().push_recv(Received {
            qp,
            src,
            mad: mad.into(),
        });
    }

    /// Records a message the peer sends reassembled; a different one
    /// with the same (TID, method) taints the pair.
    fn expect(&mut self, message: &[u8]) {
        let k = tid_method(message).unwrap();
        match self.expected.get(&k) {
            Some(m) if m != message => {
                self.tainted.insert(k);
            }
            Some(_) => {}
            None => {
                self.expected.insert(k, message.to_vec());
            }
        }
    }

    fn agent(&self, i: u8) -> Option<(AgentId, Kind)> {
        (!self.agents.is_empty()).then(|| self.agents[usize::from(i) % self.agents.len()])
    }

    fn send_id(&self, i: u8) -> Option<SendId> {
        (!self.order.is_empty()).then(|| self.order[usize::from(i) % self.order.len()])
    }

    fn seen(&self, i: u8) -> Option<(Qp, Vec<u8>, Address)> {
        (!self.seen.is_empty()).then(|| self.seen[usize::from(i) % self.seen.len()].clone())
    }

    fn register(&mut self, kind: Kind, hold: bool) {
        let mut spec = match kind {
            Kind::SaRmpp => AgentSpec::send_only("sa", Qp::Qp1).with_rmpp(),
            Kind::VendorRmpp => AgentSpec::requests(
                "vendor",
                MgmtClass(VENDOR),
                1,
                &[Method::SEND, Method::GET, Method::SET],
            )
            .with_oui(OUI)
            .with_rmpp(),
            Kind::Perf => AgentSpec::requests("perf", MgmtClass::PERF_MGT, 1, &[Method::GET]),
            Kind::Smp => AgentSpec::send_only("smp", Qp::Qp0),
            Kind::SaRaw => AgentSpec::requests("sa-raw", MgmtClass::SUBN_ADM, 2, &[Method::REPORT]),
        };
        if hold {
            spec = spec.holding_reset();
        }
        if let Ok(id) = self.e.register(spec) {
            assert!(
                !self.agents.iter().any(|(a, _)| *a == id) && !self.reaped.contains(&id),
                "an agent id reused"
            );
            self.agents.push((id, kind));
        }
    }

    fn send(&mut self, s: &SendSpec) {
        let Some((agent, kind)) = self.agent(s.agent) else {
            return;
        };
        let (class, version, qp) = match kind {
            Kind::SaRmpp | Kind::SaRaw => (MgmtClass::SUBN_ADM.0, 2, Qp::Qp1),
            Kind::VendorRmpp => (VENDOR, 1, Qp::Qp1),
            Kind::Perf => (MgmtClass::PERF_MGT.0, 1, Qp::Qp1),
            Kind::Smp => (MgmtClass::SUBN_LID_ROUTED.0, 1, Qp::Qp0),
        };
        let method = [0x01, 0x02, 0x03, 0x12, 0x06, 0x81, 0x92][usize::from(s.method) % 7];
        let hdr = MgmtClass(class).data_offset();
        let len = hdr + usize::from(s.len) % 2000;
        let mut mad = vec![0u8; len.max(256)];
        mad_testkit::header::edit(&mut mad, |h| {
            h.base_version = 1;
            h.mgmt_class = MgmtClass(class);
            h.class_version = version;
            mad_testkit::header::set_method_byte(h, method);
            if h.response {
                // A response carries its own TID (it answers some request).
                h.tid = 0xABCD_0000_0000 | u64::from(s.len);
            }
            h.attr_id = mad_core::wire::AttributeId(0x0011);
        });
        if class == VENDOR {
            mad[37..40].copy_from_slice(&OUI.to_be_bytes()[1..]);
        }
        for (i, b) in mad.iter_mut().enumerate().skip(hdr) {
            *b = (i as u8).wrapping_mul(13) ^ s.method;
        }
        if s.active {
            mad[24] = 1;
            mad[26] = FLAG_ACTIVE;
        }
        let mut req = SendRequest::new(mad, peer(s.dest, qp));
        if s.timeout_ms != 0 {
            req = req.expect_response(
                Duration::from_millis(u64::from(s.timeout_ms % 3000) + 1),
                u32::from(s.retries % 4),
            );
        }
        if let Some(t) = s.total_ms {
            req = req.total_timeout(Duration::from_millis(u64::from(t)));
        }
        if let Some(l) = s.low_tid {
            req = req.low_tid(u32::from(l));
        }
        self.cookie += 1;
        let cookie = self.cookie;
        req = req.cookie(cookie);
        if let Ok(id) = self.e.send(agent, req, self.clock.now()) {
            assert!(
                !self.deregistered.contains(&agent),
                "a send after deregister"
            );
            assert_eq!(self.e.send_agent(id), Some(agent));
            let tid = self.e.send_tid(id).unwrap();
            let rec = SendRec {
                agent,
                tid,
                cookie,
                expects: s.timeout_ms != 0,
                done: false,
            };
            assert!(self.sends.insert(id, rec).is_none(), "a send id reused");
            self.order.push(id);
            if self.order.len() > 64 {
                self.order.remove(0);
            }
        }
    }

    fn control(
        &mut self,
        seen: u8,
        rtype: u8,
        status: Option<u8>,
        seg: u8,
        win: u8,
        w: Option<u8>,
    ) {
        let Some((qp, mut m, dest)) = self.seen(seen) else {
            return;
        };
        mad_testkit::header::edit(&mut m, |h| h.response = !h.response);
        let t = match rtype % 4 {
            0 => RmppType::ACK,
            1 => RmppType::STOP,
            2 => RmppType::ABORT,
            _ => RmppType(rtype),
        };
        let st = status.map_or(
            match t {
                RmppType::STOP => RmppStatus::RESX,
                RmppType::ABORT => RmppStatus::T2L,
                _ => RmppStatus::SUCCESS,
            },
            RmppStatus,
        );
        let d1 = u32::from(seg);
        let d2 = if win >= 200 {
            u32::from(win - 200)
        } else {
            d1 + u32::from(win)
        };
        write_header(&header(t, 0x1F, FLAG_ACTIVE, st, d1, d2), &mut m);
        let genuine = t != RmppType::DATA;
        self.recv(qp, source_of(&dest, w), m, genuine);
    }

    fn respond(&mut self, seen: u8, wrong: Option<u8>, status: u16, keep_rmpp: bool) {
        let Some((qp, mut m, dest)) = self.seen(seen) else {
            return;
        };
        mad_testkit::header::edit(&mut m, |h| {
            h.response = true;
            h.status = mad_core::wire::MadStatus(status);
        });
        if !keep_rmpp {
            m[24..36].iter_mut().for_each(|b| *b = 0);
        }
        let genuine = !keep_rmpp;
        self.recv(qp, source_of(&dest, wrong), m, genuine);
    }

    fn respond_rmpp(&mut self, seen: u8, len: u16, pick: Pick, wrong: Option<u8>) {
        let Some((qp, m, dest)) = self.seen(seen) else {
            return;
        };
        let class = mad_testkit::header::of(&m).mgmt_class;
        if !class.is_rmpp_class() {
            return;
        }
        let hdr = class.data_offset();
        let mut message = m[..hdr].to_vec();
        // The answer to a GetTable is a GetTableResp; to anything else,
        // the same method with the response bit.
        mad_testkit::header::edit(&mut message, |h| h.response = true);
        message[24..36].iter_mut().for_each(|b| *b = 0);
        message.extend((0..usize::from(len) % 3000).map(|i| (i as u8) ^ (len as u8)));
        self.expect(&message);
        let segs = segments(message, hdr, &self.clock);
        let src = source_of(&dest, wrong);
        for s in picked(&segs, pick) {
            self.recv(qp, src, s, true);
        }
    }

    fn inbound(&mut self, tid: u8, method: u8, len: u16, pick: Pick, from: u8) {
        let mut message = vec![0u8; 40];
        let method = [Method::SEND.0, Method::SET.0, Method::GET.0, 0x05][usize::from(method) % 4];
        mad_testkit::header::edit(&mut message, |h| {
            h.base_version = 1;
            h.mgmt_class = MgmtClass(VENDOR);
            h.class_version = 1;
            mad_testkit::header::set_method_byte(h, method);
            h.tid = 0x7700_0000_0000 | u64::from(tid);
        });
        message[37..40].copy_from_slice(&OUI.to_be_bytes()[1..]);
        message.extend((0..usize::from(len) % 3000).map(|i| (i as u8).wrapping_add(tid)));
        self.expect(&message);
        let segs = segments(message, 40, &self.clock);
        for s in picked(&segs, pick) {
            self.recv(Qp::Qp1, peer(from, Qp::Qp1), s, true);
        }
    }

    fn fault(&mut self, k: u8) {
        let w = self.wire();
        match k % 8 {
            0 => w.inject_event(AsyncEvent::QpFatal(Qp::Qp1)),
            1 => w.inject_event(AsyncEvent::QpFatal(Qp::Qp0)),
            2 => w.inject_cq_error(),
            3 => w.request_soft_reset(),
            4 => w.inject_event(AsyncEvent::LidChange),
            5 => w.inject_event(AsyncEvent::ClientReregister),
            6 => w.inject_event(AsyncEvent::PortActive),
            _ if k == 255 => w.inject_device_fatal(),
            _ => {}
        }
    }

    fn poll(&mut self) {
        let now = self.clock.now();
        self.e.poll(now);
        if let Some(d) = self.e.poll_timeout() {
            assert!(
                d > now,
                "a timer due at {d:?} is still set after poll({now:?})"
            );
        }
    }
}

/// Runs one operation sequence against an [`Engine`].
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(setup) = Setup::arbitrary(&mut u) else {
        return;
    };
    let limit = |n: u8| match n % 5 {
        0 => FlowLimit::Unlimited,
        k => FlowLimit::Max(usize::from(k)),
    };
    let cfg = EngineConfig {
        recv_queue_bound: usize::from(setup.recv_queue_bound % 6) + 1,
        linear_retries: u32::from(setup.linear_retries % 4),
        max_backoff: Duration::from_millis(u64::from(setup.max_backoff_ms % 10_000) + 1),
        answer_unmatched: setup.answer_unmatched,
        rmpp_receiver: ReceiverConfig {
            window: u32::from(setup.rx_window % 8) + 1,
            max_total: usize::from(setup.rx_max_total % 4) + 1,
            max_per_source: usize::from(setup.rx_max_per_source % 3) + 1,
            max_lingering: usize::from(setup.rx_max_lingering % 4),
            max_lingering_per_source: 2,
            max_bytes: usize::from(setup.rx_max_bytes) % 20_000 + 256,
            max_bytes_per_source: 8192,
            max_message_len: usize::from(setup.rx_max_message_len) % 8192 + 256,
            ..ReceiverConfig::default()
        },
        max_unanswered_per_agent: limit(setup.per_agent),
        max_unanswered_per_port: limit(setup.per_port),
        check_response_source: setup.check_response_source,
        end_unacknowledged_answers: setup.end_unacknowledged_answers,
        ..EngineConfig::default()
    };
    let log: Log = Arc::default();
    let l2 = log.clone();
    let lb = Loopback::new(Loopback::attrs("fz0", 1, 1), 8).with_responder(Box::new(
        move |qp, mad: &[u8], dest: &Address| {
            l2.lock().unwrap().push((qp, mad.to_vec(), *dest));
            Vec::new()
        },
    ));
    let mut h = Harness {
        e: Stack::new(FaultInjector::new(lb, 1), cfg.clone()),
        log,
        cfg,
        clock: Clock::new(),
        seen: Vec::new(),
        agents: Vec::new(),
        sends: HashMap::new(),
        order: Vec::new(),
        deregistered: HashSet::new(),
        reaped: HashSet::new(),
        expected: HashMap::new(),
        tainted: HashSet::new(),
        held: Vec::new(),
        cookie: 0,
    };
    let mut ops = Ops::<Op>::new(&mut u, 300);
    for op in ops.by_ref() {
        let now = h.clock.now();
        match op {
            Op::Register(kind, hold) => h.register(kind, hold),
            Op::Deregister(i) => {
                if let Some((a, _)) = h.agent(i) {
                    h.e.deregister(a).unwrap();
                    h.deregistered.insert(a);
                }
            }
            Op::Send(s) => h.send(&s),
            Op::Cancel(i) => {
                if let Some(id) = h.send_id(i) {
                    let r = h.e.cancel(id);
                    if h.sends[&id].done {
                        assert!(r.is_err(), "canceled a completed send");
                    }
                }
            }
            Op::Modify(i, ms) => {
                if let Some(id) = h.send_id(i) {
                    let _ = h.e.modify(id, Duration::from_millis(u64::from(ms)), now);
                }
            }
            Op::Respond(seen, wrong, status, keep) => h.respond(seen, wrong, status, keep),
            Op::RespondRmpp(seen, len, pick, wrong) => h.respond_rmpp(seen, len, pick, wrong),
            Op::Control {
                seen,
                rtype,
                status,
                seg,
                win,
                wrong,
            } => h.control(seen, rtype, status, seg, win, wrong),
            Op::Inbound {
                tid,
                method,
                len,
                pick,
                from,
            } => h.inbound(tid, method, len, pick, from),
            Op::Raw(qp0, from, bytes) => {
                let qp = if qp0 { Qp::Qp0 } else { Qp::Qp1 };
                h.recv(qp, peer(from, qp), bytes, false);
            }
            Op::FailNext(k) => {
                let st = [
                    WcStatus::LocLenErr,
                    WcStatus::LocQpOpErr,
                    WcStatus::WrFlushErr,
                    WcStatus::GeneralErr,
                    WcStatus::RemAbortErr,
                ][usize::from(k) % 5];
                h.wire().fail_next_send(st);
            }
            Op::Stall(on) => h.wire().inner_mut().set_stalled(on),
            Op::Fault(k) => h.fault(k),
            Op::AckReset(i) => {
                if let Some((a, _)) = h.agent(i) {
                    h.e.ack_reset(a).unwrap();
                }
            }
            Op::Recycle(i) => {
                if !h.held.is_empty() {
                    let (a, m) = h.held.swap_remove(usize::from(i) % h.held.len());
                    h.e.recycle(a, m);
                }
            }
            Op::Poll => h.poll(),
            Op::Advance(ms) => h.clock.advance(Duration::from_millis(u64::from(ms))),
            Op::ToDeadline => {
                if let Some(d) = h.e.poll_timeout() {
                    h.clock.advance_to(d);
                }
                h.poll();
            }
        }
        h.check();
    }
    // The peer goes silent and the device runs: every send completes.
    h.wire().inner_mut().set_stalled(false);
    h.held.clear();
    let all_done = h.settle(20_000, |h| h.e.outstanding() == 0);
    assert!(
        all_done,
        "{} sends never completed (next timer {:?})",
        h.e.outstanding(),
        h.e.poll_timeout()
    );
    // Past every reassembly's deadline, nothing is held.
    h.clock.advance(Duration::from_secs(3600));
    h.poll();
    h.check();
    for &(a, _) in &h.agents {
        assert_eq!(h.e.rmpp_reassemblies(a), 0, "reassemblies left when idle");
    }
    // Every agent deregisters: the engine ends empty.
    let ids: Vec<AgentId> = h.agents.iter().map(|(a, _)| *a).collect();
    for a in ids {
        h.e.deregister(a).unwrap();
        h.deregistered.insert(a);
    }
    let gone = h.settle(20_000, |h| h.e.agent_count() == 0);
    assert!(gone, "{} agents never went", h.e.agent_count());
    assert_eq!(h.e.outstanding(), 0);
    assert!(h.sends.values().all(|s| s.done));
    assert_eq!(h.e.poll_timeout(), None, "a timer with nothing registered");
    if std::env::var_os("MADSTACK_FUZZ_VERBOSE").is_some() {
        // To see how deep an input (or a corpus) gets.
        eprintln!(
            "{} steps, {} sends, {:?}",
            ops.taken(),
            h.sends.len(),
            h.e.stats()
        );
    }
}
