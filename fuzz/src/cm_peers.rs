//! One port's connection manager ([`mad_cm::Cm`], what `CmService` runs on
//! its driver thread) facing many peers at once, on a virtual clock: an
//! honest peer (a second `Cm`) connecting and disconnecting through it,
//! and up to eight hostile peers (source LIDs, some with a GRH) sending
//! hand-made REQs (floods, LocalCommID 0, reused QPNs and CA GUIDs, any
//! timeouts and retry counts), MRAs, REJs (Timeout with any ARI
//! included), REPs, RTUs, DREQs and DREPs whose Communication IDs are 0,
//! small guesses, or IDs really in use, replays of what was sent, raw
//! bytes; the local user listens, unlistens, accepts, rejects, MRAs,
//! establishes and disconnects; device removal. After every step: no
//! panic, every table bounded (connections within `max_connections`, each
//! index and the timers within the connections, all of them within the
//! nine peers' caps, below the table's size),
//! no deadline left in the past, and a hostile message whose LocalCommID
//! is 0 leaves every established connection established. At the end, the
//! hostile peers silent and the clock run on for weeks, only established
//! connections are left, and a new peer's REQ is taken while there is
//! room.

use crate::clock::Clock;
use arbitrary::{Arbitrary, Unstructured};
use mad_cm::{AcceptParams, Cm, CmConfig, CmEvent, CmPath, ConnId, ConnectParams, State};
use mad_core::transport::{Address, Grh};
use mad_wire::wire::cm::{
    CmDrep, CmDreq, CmMessage, CmMra, CmRej, CmRep, CmReq, CmRtu, MsgRef, RejectReason,
    TransportType,
};
use std::collections::HashSet;
use std::time::Duration;

const SERVICE: u64 = 0x10;
const MAX_CONNS: usize = 48;
const PER_PEER: usize = 4;
/// The port under test, and the honest peer.
const LID_B: u16 = 2;
const LID_A: u16 = 1;

/// An ID a hostile message names: 0, a small guess, or one in use.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub(crate) enum IdPick {
    Zero,
    Guess(u8),
    Known(u8),
    Any(u32),
}

#[derive(Arbitrary, Debug)]
pub(crate) enum Hostile {
    Req { id: IdPick, qpn: u8, guid: u8, service: bool, timeout: u8, retries: u8, ack: u8 },
    Mra { ours: IdPick, theirs: IdPick, of: u8, timeout: u8 },
    Rej { ours: IdPick, theirs: IdPick, of: u8, reason: u8, ari_guid: u8 },
    Rep { ours: IdPick, theirs: IdPick, qpn: u8 },
    Rtu { ours: IdPick, theirs: IdPick },
    Dreq { ours: IdPick, theirs: IdPick, qpn: u8 },
    Drep { ours: IdPick, theirs: IdPick },
    Replay { pick: u8 },
    Raw { bytes: Vec<u8> },
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// A hostile peer (`peer % 8`) sends one message, `times` times.
    Attack { peer: u8, times: u8, msg: Hostile },
    HonestConnect { qpn: u8 },
    Deliver { n: u8 },
    Accept { pick: u8 },
    Reject { pick: u8 },
    Delay { pick: u8, timeout: u8 },
    Establish { pick: u8 },
    Disconnect { pick: u8, honest: bool },
    Listen { on: bool },
    Advance { ms: u32 },
    RemoveDevice,
}

/// Hostile peer `i`'s source address: LIDs 0x100.., every other one
/// with a GRH.
fn hostile_src(i: u8) -> Address {
    let i = i % 8;
    let grh = (i % 2 == 1).then_some(Grh { gid: [i; 16], sgid_index: 0, flow_label: 0, hop_limit: 64, traffic_class: 0 });
    Address { grh, ..Address::gsi(0x100 + u16::from(i)) }
}

fn path(local: u16, remote: u16) -> CmPath {
    CmPath { local_lid: local, remote_lid: remote, subnet_local: true, packet_life_time: 12, mtu: 4, pkey: 0xFFFF, ..CmPath::default() }
}

struct World {
    b: Cm,
    a: Cm,
    clock: Clock,
    /// Local IDs `b` has named in events.
    known: Vec<ConnId>,
    /// IDs the honest peer's connections have on `a`.
    honest: Vec<ConnId>,
    /// What `b` sent (for replays), the latest 64.
    sent: Vec<[u8; 256]>,
    /// MADs between `a` and `b` not yet delivered: (to b?, MAD).
    wire: Vec<(bool, [u8; 256])>,
}

/// The Communication ID `p` names among the `known` local IDs.
pub(crate) fn id_among(known: &[ConnId], p: IdPick) -> u32 {
    match p {
        IdPick::Zero => 0,
        IdPick::Guess(g) => u32::from(g),
        IdPick::Known(k) => known.get(usize::from(k) % known.len().max(1)).map_or(1, |c| c.0),
        IdPick::Any(v) => v,
    }
}

/// The `i`-th (modulo) of the `known` local IDs (1 when none).
pub(crate) fn pick_among(known: &[ConnId], i: u8) -> ConnId {
    known.get(usize::from(i) % known.len().max(1)).copied().unwrap_or(ConnId(1))
}

impl World {
    fn id(&self, p: IdPick) -> u32 {
        id_among(&self.known, p)
    }

    fn pick(&self, i: u8) -> ConnId {
        pick_among(&self.known, i)
    }

    /// Takes `b`'s and `a`'s output: MADs to the wire (those for hostile
    /// peers dropped after checking), events noted.
    fn drain(&mut self) {
        while let Some(t) = self.b.poll_transmit() {
            CmMessage::parse(&t.mad).expect("the CM sends well-formed CM MADs");
            self.sent.push(t.mad);
            if self.sent.len() > 64 {
                self.sent.remove(0);
            }
            if t.to.lid == LID_A {
                self.wire.push((false, t.mad));
            }
        }
        while let Some(t) = self.a.poll_transmit() {
            self.wire.push((true, t.mad));
        }
        while let Some((id, _)) = self.b.poll_event() {
            if id != ConnId::NONE && !self.known.contains(&id) {
                self.known.push(id);
            }
        }
        while let Some((id, e)) = self.a.poll_event() {
            if matches!(e, CmEvent::TimewaitExit | CmEvent::Unreachable | CmEvent::DeviceRemoval) {
                self.honest.retain(|h| *h != id);
            }
        }
    }

    fn check(&mut self) {
        let now = self.clock.now();
        self.b.handle_timeout(now);
        self.a.handle_timeout(now);
        self.drain();
        let t = self.b.tables();
        assert!(t.connections <= MAX_CONNS, "{t:?}");
        // Nine peers (eight hostile, one honest), each within its cap:
        // below the table's size, so that no peer can fill it.
        assert!(t.connections <= 9 * PER_PEER, "{t:?}");
        assert_eq!(t.connections, self.b.len());
        assert!(t.by_remote_id <= t.connections && t.by_remote_qpn <= t.connections, "{t:?}");
        assert!(t.timers <= t.connections && t.peers <= t.connections, "{t:?}");
        assert!(self.b.poll_timeout().is_none_or(|d| d > now), "a deadline left in the past");
    }

    fn hostile(&self, msg: &Hostile) -> Option<Vec<u8>> {
        hostile_mad(msg, |p| self.id(p), &self.sent)
    }

    /// The LocalCommID of a well-formed CM message (REQ, MRA, REJ, REP,
    /// RTU, DREQ, DREP), if `mad` is one.
    fn sender_id(mad: &[u8]) -> Option<u32> {
        match CmMessage::parse(mad).ok()? {
            CmMessage::Req(m) => Some(m.local_comm_id),
            CmMessage::Mra(m) => Some(m.local_comm_id),
            CmMessage::Rej(m) => Some(m.local_comm_id),
            CmMessage::Rep(m) => Some(m.local_comm_id),
            CmMessage::Rtu(m) => Some(m.local_comm_id),
            CmMessage::Dreq(m) => Some(m.local_comm_id),
            CmMessage::Drep(m) => Some(m.local_comm_id),
            _ => None,
        }
    }
}

/// The MAD a hostile peer sends for `msg`: IDs picked by `id`, replays
/// taken from `sent` (what the CM under test sent).
pub(crate) fn hostile_mad(msg: &Hostile, pick_id: impl Fn(IdPick) -> u32, sent: &[[u8; 256]]) -> Option<Vec<u8>> {
    let m = match *msg {
        Hostile::Req { id, qpn, guid, service, timeout, retries, ack } => CmMessage::Req(Box::new(CmReq {
            local_comm_id: pick_id(id),
            service_id: if service { SERVICE } else { 0x99 },
            local_ca_guid: 0xBAD0 + u64::from(guid % 4),
            local_qpn: u32::from(qpn),
            transport_type: TransportType::RC,
            remote_cm_response_timeout: timeout % 32,
            local_cm_response_timeout: timeout % 32,
            max_cm_retries: retries % 16,
            primary_local_ack_timeout: ack % 32,
            path_mtu: 4,
            ..CmReq::default()
        })),
        Hostile::Mra { ours, theirs, of, timeout } => CmMessage::Mra(Box::new(CmMra {
            local_comm_id: pick_id(theirs),
            remote_comm_id: pick_id(ours),
            message_mraed: MsgRef(of % 3),
            service_timeout: timeout % 32,
            ..CmMra::default()
        })),
        Hostile::Rej { ours, theirs, of, reason, ari_guid } => {
            let mut ari = [0u8; 72];
            let guid = if ari_guid % 2 == 0 { 0xA } else { 0xBAD0 + u64::from(ari_guid % 4) };
            ari[..8].copy_from_slice(&guid.to_be_bytes());
            CmMessage::Rej(Box::new(CmRej {
                local_comm_id: pick_id(theirs),
                remote_comm_id: pick_id(ours),
                message_rejected: MsgRef(of % 3),
                reason: RejectReason(u16::from(reason % 36)),
                reject_info_length: 8,
                ari,
                ..CmRej::default()
            }))
        }
        Hostile::Rep { ours, theirs, qpn } => CmMessage::Rep(Box::new(CmRep {
            local_comm_id: pick_id(theirs),
            remote_comm_id: pick_id(ours),
            local_qpn: u32::from(qpn),
            local_ca_guid: 0xBAD0,
            ..CmRep::default()
        })),
        Hostile::Rtu { ours, theirs } => {
            CmMessage::Rtu(Box::new(CmRtu { local_comm_id: pick_id(theirs), remote_comm_id: pick_id(ours), ..CmRtu::default() }))
        }
        Hostile::Dreq { ours, theirs, qpn } => CmMessage::Dreq(Box::new(CmDreq {
            local_comm_id: pick_id(theirs),
            remote_comm_id: pick_id(ours),
            remote_qpn_eecn: if qpn == 0 { 0x500 } else { u32::from(qpn) },
            ..CmDreq::default()
        })),
        Hostile::Drep { ours, theirs } => {
            CmMessage::Drep(Box::new(CmDrep { local_comm_id: pick_id(theirs), remote_comm_id: pick_id(ours), ..CmDrep::default() }))
        }
        Hostile::Replay { pick } => return sent.get(usize::from(pick) % sent.len().max(1)).map(|m| m.to_vec()),
        Hostile::Raw { ref bytes } => return Some(bytes.clone()),
    };
    m.to_mad(0x1234).ok().map(|m| m.to_vec())
}


/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let cfg = |guid, seed| CmConfig {
        ca_guid: guid,
        response_timeout: 12,
        max_connections: MAX_CONNS,
        max_per_peer: PER_PEER,
        max_user_wait: Duration::from_secs(30),
        comm_id_seed: Some(seed),
    };
    let mut b = Cm::new(cfg(0xB, 2));
    b.listen(SERVICE).unwrap();
    let mut w = World {
        b,
        a: Cm::new(cfg(0xA, 1)),
        clock: Clock::new(),
        known: Vec::new(),
        honest: Vec::new(),
        sent: Vec::new(),
        wire: Vec::new(),
    };
    let mut steps = 0;
    while !u.is_empty() && steps < 256 {
        steps += 1;
        let Ok(op) = Op::arbitrary(&mut u) else { break };
        let now = w.clock.now();
        match op {
            Op::Attack { peer, times, msg } => {
                let Some(mad) = w.hostile(&msg) else { continue };
                let zero_sender = World::sender_id(&mad) == Some(0);
                let established: Vec<ConnId> =
                    w.known.iter().copied().filter(|id| w.b.state(*id) == Some(State::Established)).collect();
                for _ in 0..=times % 16 {
                    let _ = w.b.handle_recv(now, &hostile_src(peer), &mad);
                }
                if zero_sender {
                    for id in established {
                        assert_eq!(w.b.state(id), Some(State::Established), "LocalCommID 0 ended {id:?}");
                    }
                }
            }
            Op::HonestConnect { qpn } => {
                let p = ConnectParams {
                    max_cm_retries: 2,
                    remote_cm_response_timeout: 12,
                    ..ConnectParams::new(SERVICE, 0x40 + u32::from(qpn % 8), 1, path(LID_A, LID_B))
                };
                if let Ok(id) = w.a.connect(now, p) {
                    w.honest.push(id);
                }
            }
            Op::Deliver { n } => {
                for _ in 0..n % 16 {
                    if w.wire.is_empty() {
                        break;
                    }
                    let (to_b, mad) = w.wire.remove(0);
                    if to_b {
                        let _ = w.b.handle_recv(now, &Address::gsi(LID_A), &mad);
                    } else {
                        let _ = w.a.handle_recv(now, &Address::gsi(LID_B), &mad);
                    }
                    w.drain();
                }
            }
            Op::Accept { pick } => {
                let p = AcceptParams { qpn: 0x500 + u32::from(pick), ..AcceptParams::default() };
                let id = w.pick(pick);
                let _ = w.b.accept(now, id, p);
            }
            Op::Reject { pick } => {
                let id = w.pick(pick);
                let _ = w.b.reject(now, id, RejectReason::CONSUMER_DEFINED, &[]);
            }
            Op::Delay { pick, timeout } => {
                let id = w.pick(pick);
                let _ = w.b.delay(now, id, timeout);
            }
            Op::Establish { pick } => {
                let id = w.pick(pick);
                let _ = w.b.establish(now, id);
            }
            Op::Disconnect { pick, honest } => {
                if honest {
                    if let Some(id) = w.honest.get(usize::from(pick) % w.honest.len().max(1)).copied() {
                        let _ = w.a.disconnect(now, id, &[]);
                    }
                } else {
                    let id = w.pick(pick);
                    let _ = w.b.disconnect(now, id, &[]);
                }
            }
            Op::Listen { on } => {
                if on {
                    let _ = w.b.listen(SERVICE);
                } else {
                    w.b.unlisten(mad_cm::ListenId(SERVICE));
                }
            }
            Op::Advance { ms } => w.clock.advance(Duration::from_millis(u64::from(ms % 200_000))),
            Op::RemoveDevice => {
                w.b.device_removed();
                let _ = w.b.listen(SERVICE);
            }
        }
        w.check();
    }
    // The hostile peers fall silent; the honest traffic is delivered and
    // the clock runs on: only established connections are left.
    for _ in 0..32 {
        while !w.wire.is_empty() {
            let (to_b, mad) = w.wire.remove(0);
            let now = w.clock.now();
            if to_b {
                let _ = w.b.handle_recv(now, &Address::gsi(LID_A), &mad);
            } else {
                let _ = w.a.handle_recv(now, &Address::gsi(LID_B), &mad);
            }
            w.drain();
        }
        // A week: the longest chain of waits a REQ's own timeouts allow
        // (16 REP resends of up to 4.9 h each) is over in one.
        w.clock.advance(Duration::from_secs(7 * 24 * 3600));
        w.check();
    }
    let left: HashSet<ConnId> = w.known.iter().copied().filter(|id| w.b.state(*id).is_some()).collect();
    for id in &left {
        assert_eq!(w.b.state(*id), Some(State::Established), "{id:?} left behind");
    }
    assert_eq!(w.b.len(), left.len(), "connections no event named");
    assert!(w.b.poll_timeout().is_none(), "a deadline never fires");
    // A new peer is not locked out while there is room.
    if w.b.len() < MAX_CONNS {
        let _ = w.b.listen(SERVICE);
        let req = CmMessage::Req(Box::new(CmReq {
            local_comm_id: 0x7777,
            service_id: SERVICE,
            local_ca_guid: 0xC0FFEE,
            local_qpn: 0x77,
            transport_type: TransportType::RC,
            remote_cm_response_timeout: 12,
            primary_local_ack_timeout: 12,
            path_mtu: 4,
            ..CmReq::default()
        }));
        let mad = req.to_mad(1).unwrap();
        w.b.handle_recv(w.clock.now(), &Address::gsi(0x300), &mad).unwrap();
        let got = std::iter::from_fn(|| w.b.poll_event()).any(|(_, e)| matches!(e, CmEvent::ConnectRequest { .. }));
        assert!(got, "a new peer's REQ was not taken: {:?}", w.b.tables());
    }
}
