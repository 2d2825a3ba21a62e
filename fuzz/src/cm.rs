//! Operation sequences on two connection managers ([`mad_cm::Cm`]) wired
//! to each other through a lossy, duplicating, reordering wire, on a
//! virtual clock: connects, accepts, rejects, MRAs, RTUs, disconnects from
//! either side, MADs lost / repeated / replayed late, raw bytes, device
//! removal. After every step: every MAD either side sends is a well-formed
//! CM MAD, no deadline is left in the past, and each connection's events
//! follow the rdma_cm grammar (ESTABLISHED and DISCONNECTED at most once,
//! nothing after TIMEWAIT_EXIT / UNREACHABLE / DEVICE_REMOVAL, which leave
//! nothing behind). At the end, with every MAD delivered and the clock run
//! on, no deadline is pending and every connection left is one that waits
//! for its user or is established.

use crate::clock::Clock;
use arbitrary::{Arbitrary, Unstructured};
use mad_cm::{AcceptParams, Cm, CmConfig, CmEvent, CmPath, ConnId, ConnectParams, State, Transmit};
use mad_core::transport::Address;
use mad_wire::wire::cm::{CmMessage, RejectReason};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

#[derive(Arbitrary, Debug)]
enum Op {
    Connect { side: bool, qpn: u8, auto_rtu: bool, retries: u8, private: u8 },
    Accept { side: bool, pick: u8, qpn: u8 },
    Reject { side: bool, pick: u8, reason: u8 },
    Delay { side: bool, pick: u8, timeout: u8 },
    Establish { side: bool, pick: u8 },
    Disconnect { side: bool, pick: u8 },
    /// Deliver up to `n` MADs from one side; `fate` drops / repeats some.
    Deliver { side: bool, n: u8, fate: u8 },
    /// Deliver a MAD seen earlier again.
    Replay { side: bool, pick: u8 },
    /// Raw bytes to one side.
    Raw { side: bool, bytes: Vec<u8> },
    Advance { ms: u16 },
    RemoveDevice { side: bool },
}

/// One side's bookkeeping.
struct End {
    cm: Cm,
    /// MADs sent and not yet delivered.
    wire: VecDeque<Transmit>,
    /// Every MAD this side has sent (for replays).
    sent: Vec<[u8; 256]>,
    /// Events seen per connection.
    events: HashMap<ConnId, Vec<CmEvent>>,
    /// Connections in the order they appeared.
    ids: Vec<ConnId>,
}

impl End {
    fn new(guid: u64) -> Self {
        let mut cm = Cm::new(CmConfig { ca_guid: guid, response_timeout: 14, max_connections: 32, ..CmConfig::default() });
        cm.listen(1).unwrap();
        Self { cm, wire: VecDeque::new(), sent: Vec::new(), events: HashMap::new(), ids: Vec::new() }
    }

    fn pick(&self, i: u8) -> ConnId {
        self.ids.get(usize::from(i) % self.ids.len().max(1)).copied().unwrap_or(ConnId(1))
    }

    /// Collects transmits and events, checking each.
    fn drain(&mut self) {
        while let Some(t) = self.cm.poll_transmit() {
            let m = CmMessage::parse(&t.mad).expect("the CM sends well-formed CM MADs");
            let class_version = mad_testkit::header::of(&t.mad).class_version;
            assert_eq!(class_version, 2, "class version 2: {}", m.short_name());
            self.sent.push(t.mad);
            if self.sent.len() > 64 {
                self.sent.remove(0);
            }
            self.wire.push_back(t);
        }
        while let Some((id, e)) = self.cm.poll_event() {
            if !self.ids.contains(&id) {
                self.ids.push(id);
            }
            let seen = self.events.entry(id).or_default();
            if let Some(last) = seen.last() {
                assert!(
                    !matches!(last, CmEvent::TimewaitExit | CmEvent::Unreachable | CmEvent::DeviceRemoval),
                    "{e:?} after {last:?}"
                );
            }
            let count = |f: fn(&CmEvent) -> bool| seen.iter().filter(|x| f(x)).count();
            match &e {
                CmEvent::Established { .. } => assert_eq!(count(|x| matches!(x, CmEvent::Established { .. })), 0),
                CmEvent::Disconnected { .. } => assert_eq!(count(|x| matches!(x, CmEvent::Disconnected { .. })), 0),
                CmEvent::TimewaitExit | CmEvent::Unreachable | CmEvent::DeviceRemoval => {
                    assert!(self.cm.state(id).is_none(), "{e:?} leaves nothing behind");
                }
                _ => {}
            }
            seen.push(e);
        }
    }
}

fn path(local: u16, remote: u16) -> CmPath {
    CmPath { local_lid: local, remote_lid: remote, subnet_local: true, packet_life_time: 10, mtu: 4, ..CmPath::default() }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut clock = Clock::new();
    let mut ends = [End::new(0xA), End::new(0xB)];
    let lids = [1u16, 2];
    for _ in 0..200 {
        let Ok(op) = Op::arbitrary(&mut u) else { break };
        let now = clock.now();
        match op {
            Op::Connect { side, qpn, auto_rtu, retries, private } => {
                let s = usize::from(side);
                let p = ConnectParams {
                    auto_rtu,
                    max_cm_retries: retries % 4,
                    remote_cm_response_timeout: 12,
                    private_data: vec![0xAB; usize::from(private % 100)],
                    ..ConnectParams::new(1, u32::from(qpn % 8) + 1, 7, path(lids[s], lids[1 - s]))
                };
                if let Ok(id) = ends[s].cm.connect(now, p) {
                    ends[s].ids.push(id);
                }
            }
            Op::Accept { side, pick, qpn } => {
                let e = &mut ends[usize::from(side)];
                let p = AcceptParams { qpn: u32::from(qpn) + 0x100, ..AcceptParams::default() };
                let _ = e.cm.accept(now, e.pick(pick), p);
            }
            Op::Reject { side, pick, reason } => {
                let e = &mut ends[usize::from(side)];
                let _ = e.cm.reject(now, e.pick(pick), RejectReason(u16::from(reason)), b"no");
            }
            Op::Delay { side, pick, timeout } => {
                let e = &mut ends[usize::from(side)];
                let _ = e.cm.delay(now, e.pick(pick), timeout % 20);
            }
            Op::Establish { side, pick } => {
                let e = &mut ends[usize::from(side)];
                let _ = e.cm.establish(now, e.pick(pick));
            }
            Op::Disconnect { side, pick } => {
                let e = &mut ends[usize::from(side)];
                let _ = e.cm.disconnect(now, e.pick(pick), &[]);
            }
            Op::Deliver { side, n, fate } => {
                let s = usize::from(side);
                for i in 0..n % 8 {
                    let Some(t) = ends[s].wire.pop_front() else { break };
                    let f = fate.rotate_left(u32::from(i));
                    if f & 3 == 0 {
                        continue; // lost
                    }
                    let src = Address::gsi(lids[s]);
                    let _ = ends[1 - s].cm.handle_recv(now, &src, &t.mad);
                    if f & 3 == 1 {
                        let _ = ends[1 - s].cm.handle_recv(now, &src, &t.mad);
                    }
                }
            }
            Op::Replay { side, pick } => {
                let s = usize::from(side);
                if let Some(m) = ends[s].sent.get(usize::from(pick) % ends[s].sent.len().max(1)).copied() {
                    let _ = ends[1 - s].cm.handle_recv(now, &Address::gsi(lids[s]), &m);
                }
            }
            Op::Raw { side, bytes } => {
                let s = usize::from(side);
                let _ = ends[s].cm.handle_recv(now, &Address::gsi(lids[1 - s]), &bytes);
            }
            Op::Advance { ms } => {
                clock.advance(Duration::from_millis(u64::from(ms)));
                for e in &mut ends {
                    e.cm.handle_timeout(clock.now());
                }
            }
            Op::RemoveDevice { side } => ends[usize::from(side)].cm.device_removed(),
        }
        for e in &mut ends {
            e.drain();
            if let Some(t) = e.cm.poll_timeout() {
                let due = t <= clock.now();
                if due {
                    e.cm.handle_timeout(clock.now());
                    e.drain();
                }
                assert!(e.cm.poll_timeout().is_none_or(|t| t > clock.now()), "a deadline left in the past");
            }
        }
    }
    // Everything delivered, the clock run on: nothing is left pending.
    for _ in 0..64 {
        for s in 0..2 {
            while let Some(t) = ends[s].wire.pop_front() {
                let _ = ends[1 - s].cm.handle_recv(clock.now(), &Address::gsi(lids[s]), &t.mad);
            }
        }
        clock.advance(Duration::from_secs(60));
        for e in &mut ends {
            e.cm.handle_timeout(clock.now());
            e.drain();
        }
    }
    for e in &ends {
        assert!(e.cm.poll_timeout().is_none(), "a deadline never fires");
        for id in &e.ids {
            if let Some(st) = e.cm.state(*id) {
                assert!(
                    matches!(st, State::ReqRcvd | State::MraReqSent | State::RepRcvd | State::MraRepSent | State::Established),
                    "{id:?} stuck in {st:?}"
                );
            }
        }
    }
}
