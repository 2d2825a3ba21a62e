//! [`CmService`] itself, on the built-in fabric, under attack: the service
//! under test (host-3) and an honest peer's service (host-4) run through
//! the whole stack (agent runtime, port layer, simulated fabric), both
//! driven by the fuzz input with [`CmService::start_driven`] on one
//! virtual clock; three hostile ports (host-5..7) send hand-made CM MADs
//! (the messages of [`crate::cm_peers`]: floods, LocalCommID 0, guessed
//! and known IDs, replays of what the service sent, raw bytes carried as
//! CM MADs); the service's user listens, accepts, rejects, MRAs,
//! establishes and disconnects through the service's own calls. After
//! every step: no panic, the service's tables within `max_connections`
//! and the per-peer caps, nothing left in the past. At the end, the
//! hostile ports silent and the clock run on for weeks: only established
//! connections are left, and the honest peer still connects.

use crate::cm_peers::{hostile_mad, id_among, pick_among, Hostile, IdPick};
use arbitrary::{Arbitrary, Unstructured};
use mad_agents::{Agent, AgentSpec, EngineConfig, Runtime, SendRequest};
use mad_cm::service::{CmClock, CmPump, CmService};
use mad_cm::{AcceptParams, CmConfig, CmEvent, CmPath, ConnId, ConnectParams, State};
use mad_core::transport::{Address, Qp};
use mad_core::wire::cm::RejectReason;
use mad_sim::Subnet;
use mad_testkit::wrap::{Tap, Way, Wrapped};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SERVICE: u64 = 0x10;
const MAX_CONNS: usize = 24;
const PER_PEER: usize = 4;
/// How long a pump waits on the real clock for a MAD in flight.
const PUMP_WAIT: Duration = Duration::from_millis(1);

#[derive(Arbitrary, Debug)]
enum Op {
    /// Hostile port `port % 3` sends one message, `times` times.
    Attack { port: u8, times: u8, msg: Hostile },
    HonestConnect { qpn: u8 },
    /// Pumps both services `n` times.
    Pump { n: u8 },
    Accept { pick: u8 },
    Reject { pick: u8 },
    Delay { pick: u8, timeout: u8 },
    Establish { pick: u8 },
    Disconnect { pick: u8, honest: bool },
    Listen,
    Advance { ms: u32 },
}

/// One virtual clock for both services.
#[derive(Clone)]
struct VClock {
    base: Instant,
    offset_ms: Arc<AtomicU64>,
}

impl VClock {
    fn clock(&self) -> CmClock {
        let c = self.clone();
        Arc::new(move || c.now())
    }
    fn now(&self) -> Instant {
        self.base + Duration::from_millis(self.offset_ms.load(Ordering::SeqCst))
    }
    fn advance(&self, d: Duration) {
        self.offset_ms
            .fetch_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 2), Ordering::SeqCst);
    }
}

struct Host {
    cm: CmService,
    pump: CmPump,
    lid: u16,
    // Dropped last: the service's agent lives on this runtime.
    _rt: Runtime,
}

struct World {
    b: Host,
    a: Host,
    hostile: Vec<(Agent, Runtime)>,
    clock: VClock,
    /// IDs the service under test has named in events.
    known: Vec<ConnId>,
    /// IDs of the honest peer's connections.
    honest: Vec<ConnId>,
    /// What the service under test sent (for replays), the latest 64.
    sent: Arc<Mutex<Vec<[u8; 256]>>>,
}

fn cfg(seed: u64) -> CmConfig {
    CmConfig {
        response_timeout: 12,
        max_connections: MAX_CONNS,
        max_per_peer: PER_PEER,
        max_user_wait: Duration::from_secs(30),
        comm_id_seed: Some(seed),
        ..CmConfig::default()
    }
}

impl World {
    fn new(s: &Subnet) -> Option<Self> {
        let clock = VClock { base: Instant::now(), offset_ms: Arc::default() };
        let sent: Arc<Mutex<Vec<[u8; 256]>>> = Arc::default();
        let tap_sent = sent.clone();
        let tap = Tap(Box::new(move |way, mad: &[u8]| {
            if way == Way::Sent
                && mad.len() == 256
                && mad_testkit::header::of(mad).mgmt_class == mad_core::wire::MgmtClass::COM_MGT
            {
                let mut m = [0u8; 256];
                m.copy_from_slice(mad);
                let mut v = tap_sent.lock().unwrap();
                v.push(m);
                if v.len() > 64 {
                    v.remove(0);
                }
            }
        }));
        let ep = s.fabric().attach("host-3", 1).ok()?;
        let rt = Runtime::start(Wrapped::new(ep, tap), EngineConfig::default()).ok()?;
        let lid = rt.port_attrs().lid;
        let (cm, pump) = CmService::start_driven(&rt, cfg(2), clock.clock()).ok()?;
        let b = Host { cm, pump, lid, _rt: rt };
        let ep = s.fabric().attach("host-4", 1).ok()?;
        let rt = Runtime::start(ep, EngineConfig::default()).ok()?;
        let lid = rt.port_attrs().lid;
        let (cm, pump) = CmService::start_driven(&rt, cfg(1), clock.clock()).ok()?;
        let a = Host { cm, pump, lid, _rt: rt };
        let mut hostile = Vec::new();
        for name in ["host-5", "host-6", "host-7"] {
            let ep = s.fabric().attach(name, 1).ok()?;
            let rt = Runtime::start(ep, EngineConfig::default()).ok()?;
            let (agent, _rx) = rt.register_channel(AgentSpec::send_only("hostile", Qp::Qp1)).ok()?;
            hostile.push((agent, rt));
        }
        b.cm.listen(SERVICE).unwrap();
        Some(Self { b, a, hostile, clock, known: Vec::new(), honest: Vec::new(), sent })
    }

    fn id(&self, p: IdPick) -> u32 {
        id_among(&self.known, p)
    }

    fn pick(&self, i: u8) -> ConnId {
        pick_among(&self.known, i)
    }

    /// Pumps both services once and notes their events.
    fn pump(&mut self) {
        self.b.pump.pump(PUMP_WAIT);
        self.a.pump.pump(Duration::ZERO);
        while let Some((id, _)) = self.b.cm.next_event(Duration::ZERO) {
            if id != ConnId::NONE && !self.known.contains(&id) {
                self.known.push(id);
            }
        }
        while let Some((id, e)) = self.a.cm.next_event(Duration::ZERO) {
            if matches!(e, CmEvent::TimewaitExit | CmEvent::Unreachable | CmEvent::DeviceRemoval) {
                self.honest.retain(|h| *h != id);
            }
        }
    }

    fn check(&self) {
        let t = self.b.cm.tables();
        assert!(t.connections <= MAX_CONNS, "{t:?}");
        // Four peers (three hostile ports, one honest), each within its cap.
        assert!(t.connections <= 4 * PER_PEER, "{t:?}");
        assert!(t.by_remote_id <= t.connections && t.by_remote_qpn <= t.connections, "{t:?}");
        assert!(t.timers <= t.connections && t.peers <= t.connections, "{t:?}");
        assert!(
            self.b.pump.poll_timeout().is_none_or(|d| d > self.clock.now()),
            "a deadline left in the past"
        );
    }
}

fn path(local: u16, remote: u16) -> CmPath {
    CmPath { local_lid: local, remote_lid: remote, subnet_local: true, packet_life_time: 12, mtu: 4, pkey: 0xFFFF, ..CmPath::default() }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(s) = Subnet::builtin() else { return };
    let Some(mut w) = World::new(&s) else { panic!("the built-in fabric's hosts did not start") };
    let mut steps = 0;
    while !u.is_empty() && steps < 64 {
        steps += 1;
        let Ok(op) = Op::arbitrary(&mut u) else { break };
        match op {
            Op::Attack { port, times, msg } => {
                let sent = w.sent.lock().unwrap().clone();
                let Some(mut mad) = hostile_mad(&msg, |p| w.id(p), &sent) else { continue };
                // Raw bytes go out as CM MADs (the stack posts nothing else
                // on a CM agent's behalf); short ones are padded.
                mad.resize(256, 0);
                mad_testkit::header::edit(&mut mad, |h| {
                    h.base_version = 1;
                    h.mgmt_class = mad_core::wire::MgmtClass::COM_MGT;
                    h.class_version = 2;
                });
                let (agent, _) = &w.hostile[usize::from(port) % 3];
                for _ in 0..=times % 8 {
                    let _ = agent.send(SendRequest::new(mad.clone(), Address::gsi(w.b.lid)));
                }
                w.pump();
            }
            Op::HonestConnect { qpn } => {
                let p = ConnectParams {
                    max_cm_retries: 2,
                    remote_cm_response_timeout: 12,
                    ..ConnectParams::new(SERVICE, 0x40 + u32::from(qpn % 8), 1, path(w.a.lid, w.b.lid))
                };
                if let Ok(id) = w.a.cm.connect(p) {
                    w.honest.push(id);
                }
            }
            Op::Pump { n } => {
                for _ in 0..=n % 4 {
                    w.pump();
                }
            }
            Op::Accept { pick } => {
                let p = AcceptParams { qpn: 0x500 + u32::from(pick), ..AcceptParams::default() };
                let _ = w.b.cm.accept(w.pick(pick), p);
            }
            Op::Reject { pick } => {
                let _ = w.b.cm.reject(w.pick(pick), RejectReason::CONSUMER_DEFINED, &[]);
            }
            Op::Delay { pick, timeout } => {
                let _ = w.b.cm.delay(w.pick(pick), timeout);
            }
            Op::Establish { pick } => {
                let _ = w.b.cm.establish(w.pick(pick));
            }
            Op::Disconnect { pick, honest } => {
                if honest {
                    if let Some(id) = w.honest.get(usize::from(pick) % w.honest.len().max(1)).copied() {
                        let _ = w.a.cm.disconnect(id, &[]);
                    }
                } else {
                    let _ = w.b.cm.disconnect(w.pick(pick), &[]);
                }
            }
            Op::Listen => {
                let _ = w.b.cm.listen(SERVICE);
            }
            Op::Advance { ms } => {
                w.clock.advance(Duration::from_millis(u64::from(ms % 200_000)));
                w.pump();
            }
        }
        w.check();
    }
    // The hostile ports fall silent (their agents go away) and the honest
    // peer disconnects; the clock runs on, a week at a time: only
    // established connections are left.
    w.hostile.clear();
    for id in w.honest.clone() {
        let _ = w.a.cm.disconnect(id, &[]);
    }
    // Each pump fires what is due once; a REP resent 16 times needs as
    // many rounds (what cm_peers_ops does in 32).
    for _ in 0..48 {
        if w.b.pump.poll_timeout().is_none() && w.a.pump.poll_timeout().is_none() {
            break;
        }
        w.clock.advance(Duration::from_secs(7 * 24 * 3600));
        for _ in 0..2 {
            w.pump();
        }
        w.check();
    }
    for id in w.known.clone() {
        if let Some(st) = w.b.cm.state(id) {
            assert_eq!(st, State::Established, "{id:?} left behind");
        }
    }
    assert!(w.b.pump.poll_timeout().is_none(), "a deadline never fires");
    // The honest peer is not locked out: what is left belongs to the
    // three hostile ports, within their caps, below the table's size.
    {
        let p = ConnectParams {
            remote_cm_response_timeout: 12,
            ..ConnectParams::new(SERVICE, 0x99, 1, path(w.a.lid, w.b.lid))
        };
        let _ = w.b.cm.listen(SERVICE);
        if w.a.cm.connect(p).is_ok() {
            let mut got = false;
            for _ in 0..500 {
                w.b.pump.pump(PUMP_WAIT);
                w.a.pump.pump(Duration::ZERO);
                if let Some((_, e)) = w.b.cm.next_event(Duration::ZERO) {
                    if matches!(e, CmEvent::ConnectRequest { .. }) {
                        got = true;
                        break;
                    }
                }
            }
            assert!(got, "the honest peer's REQ was not taken: {:?}", w.b.cm.tables());
        }
    }
}
