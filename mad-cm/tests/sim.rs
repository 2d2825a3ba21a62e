//! madstack ↔ madstack on the built-in fabric (mad-sim): two ports with a
//! [`CmService`] each, the route from the SA's PathRecord, and every event
//! where rdma_cm delivers it: connect, reject, an unanswered REQ,
//! disconnect from either side, timewait.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mad_agents::sa::{SaClient, SaClientConfig};
use mad_agents::{EngineConfig, Runtime};
use mad_cm::service::{resolve_route, CmService};
use mad_cm::{AcceptParams, CmConfig, CmEvent, CmPath, ConnId, ConnectParams};
use mad_core::transport::{Transport, TransportError};
use mad_core::wire::cm::cma::{self, CmaHeader, PortSpace};
use mad_core::wire::cm::RejectReason;
use mad_core::wire::Repr;
use mad_sim::Subnet;
use mad_testkit::wrap::{Hooks, Wrapped};

const WAIT: Duration = Duration::from_secs(10);

struct Host {
    cm: CmService,
    lid: u16,
    rt: Runtime,
}

fn host(s: &Subnet, name: &str) -> Host {
    host_with(s, name, |ep| ep)
}

/// A host whose port's transport is `wrap(its endpoint)`.
fn host_with<T: Transport + 'static>(
    s: &Subnet,
    name: &str,
    wrap: impl FnOnce(mad_sim::SimPort) -> T,
) -> Host {
    let ep = s.fabric().attach(name, 1).unwrap();
    let rt = Runtime::start(wrap(ep), EngineConfig::default()).unwrap();
    let lid = rt.port_attrs().lid;
    let cm = CmService::start(&rt, CmConfig::default()).unwrap();
    Host { cm, lid, rt }
}

/// The next event of `h`, which must be `what`.
fn expect(h: &Host, what: &str) -> (ConnId, CmEvent) {
    let (id, e) =
        h.cm.next_event(WAIT)
            .unwrap_or_else(|| panic!("no {what} event"));
    let name = format!("{e:?}");
    assert!(name.starts_with(what), "wanted {what}, got {name}");
    (id, e)
}

fn route(client: &Host, server: &Host) -> CmPath {
    let sa = SaClient::new(&client.rt, SaClientConfig::default()).unwrap();
    let mut p = resolve_route(&sa, client.lid, server.lid).unwrap();
    assert_eq!((p.local_lid, p.remote_lid), (client.lid, server.lid));
    assert!(p.mtu >= 1, "the SA gives an MTU");
    p.packet_life_time = p.packet_life_time.min(12); // keep timewait short
    p
}

fn rdma_cm_req(path: CmPath, qpn: u32) -> ConnectParams {
    let mut hdr = vec![0u8; CmaHeader::LEN];
    CmaHeader::ipv4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 50000)
        .emit(&mut hdr)
        .unwrap();
    ConnectParams {
        private_data: hdr,
        remote_cm_response_timeout: 14,
        ..ConnectParams::new(cma::service_id(PortSpace::Tcp, 7471), qpn, 0x0A0B0C, path)
    }
}

#[test]
fn connect_then_disconnect_from_either_side_on_the_built_in_fabric() {
    let s = Subnet::builtin().unwrap();
    let (client, server) = (host(&s, "host-6"), host(&s, "host-7"));
    let path = route(&client, &server);
    server
        .cm
        .listen(cma::service_id(PortSpace::Tcp, 7471))
        .unwrap();

    for round in 0..2 {
        let qpn = 0x40 + round;
        let ca = client.cm.connect(rdma_cm_req(path, qpn)).unwrap();
        let (sb, req) = expect(&server, "ConnectRequest");
        let CmEvent::ConnectRequest { info, .. } = req else {
            unreachable!()
        };
        assert_eq!(
            (info.remote_qpn, info.remote_psn, info.path.remote_lid),
            (qpn, 0x0A0B0C, client.lid)
        );
        let h = CmaHeader::parse(&info.private_data).unwrap();
        assert_eq!(h.addrs().unwrap().1, std::net::IpAddr::from([10, 0, 0, 2]));
        server
            .cm
            .accept(
                sb,
                AcceptParams {
                    qpn: 0x80 + round,
                    starting_psn: 9,
                    ..AcceptParams::default()
                },
            )
            .unwrap();
        let (id, est) = expect(&client, "Established");
        assert_eq!(id, ca);
        let CmEvent::Established { info } = est else {
            unreachable!()
        };
        assert_eq!((info.remote_qpn, info.remote_psn), (0x80 + round, 9));
        expect(&server, "Established");

        // Round 0: the client disconnects; round 1: the server does.
        if round == 0 {
            client.cm.disconnect(ca, b"bye").unwrap();
        } else {
            server.cm.disconnect(sb, &[]).unwrap();
        }
        expect(&client, "Disconnected");
        expect(&server, "Disconnected");
        expect(&client, "TimewaitExit");
        expect(&server, "TimewaitExit");
    }
    assert_eq!(client.cm.send_errors() + server.cm.send_errors(), 0);
}

#[test]
fn reject_and_unreachable_on_the_built_in_fabric() {
    let s = Subnet::builtin().unwrap();
    let (client, server) = (host(&s, "host-3"), host(&s, "host-4"));
    let path = route(&client, &server);
    server.cm.listen(0x1000).unwrap();

    // Nobody listens on the service: REJ InvalidServiceID.
    client
        .cm
        .connect(ConnectParams::new(0x2000, 5, 1, path))
        .unwrap();
    let (_, e) = expect(&client, "Rejected");
    assert!(matches!(
        e,
        CmEvent::Rejected {
            reason: RejectReason::INVALID_SERVICE_ID,
            ..
        }
    ));

    // The server's user rejects, with its reason and private data.
    client
        .cm
        .connect(ConnectParams::new(0x1000, 6, 1, path))
        .unwrap();
    let (sb, _) = expect(&server, "ConnectRequest");
    server
        .cm
        .reject(sb, RejectReason::CONSUMER_DEFINED, b"full")
        .unwrap();
    let (_, e) = expect(&client, "Rejected");
    let CmEvent::Rejected {
        reason,
        private_data,
        ..
    } = e
    else {
        unreachable!()
    };
    assert_eq!(reason, RejectReason::CONSUMER_DEFINED);
    assert!(private_data.starts_with(b"full"));

    // A port with no CM at all: the REQ goes unanswered.
    let silent = s.fabric().attach("host-5", 1).unwrap();
    let silent_rt = Runtime::start(silent, EngineConfig::default()).unwrap();
    let to_silent = CmPath {
        remote_lid: silent_rt.port_attrs().lid,
        ..path
    };
    let p = ConnectParams {
        max_cm_retries: 1,
        remote_cm_response_timeout: 14,
        ..ConnectParams::new(0x1000, 7, 1, to_silent)
    };
    client.cm.connect(p).unwrap();
    expect(&client, "Unreachable");
}

/// A device that goes away when `gone` is set: from then on every receive
/// fails as ib_umad's read does on a removed device (EIO, which the umad
/// transport reports as `DeviceDead`).
struct Removable {
    gone: Arc<AtomicBool>,
}

impl Hooks for Removable {
    fn recv_error(&mut self) -> Option<TransportError> {
        self.gone
            .load(Ordering::SeqCst)
            .then(|| TransportError::DeviceDead("host-5".into()))
    }
}

#[test]
fn a_removed_device_gives_every_connection_and_listener_device_removal() {
    let s = Subnet::builtin().unwrap();
    let gone = Arc::new(AtomicBool::new(false));
    let client = host(&s, "host-4");
    let hooks = Removable { gone: gone.clone() };
    let server = host_with(&s, "host-5", |ep| Wrapped::new(ep, hooks));
    let path = route(&client, &server);
    let service = cma::service_id(PortSpace::Tcp, 7471);
    let listener = server.cm.listen(service).unwrap();
    let ca = client.cm.connect(rdma_cm_req(path, 0x50)).unwrap();
    let (sb, _) = expect(&server, "ConnectRequest");
    server.cm.accept(sb, AcceptParams::default()).unwrap();
    expect(&client, "Established");
    expect(&server, "Established");
    // A second connection still waiting for its REP.
    client.cm.connect(rdma_cm_req(path, 0x51)).unwrap();
    let (sc, _) = expect(&server, "ConnectRequest");

    // The device goes; the client's DREQ is what the server's port next
    // tries to read.
    gone.store(true, Ordering::SeqCst);
    client.cm.disconnect(ca, &[]).unwrap();
    let mut got = [
        server.cm.next_event(WAIT),
        server.cm.next_event(WAIT),
        server.cm.next_event(WAIT),
    ];
    got.sort_by_key(|e| e.as_ref().map(|(id, _)| *id));
    let mut want = [
        Some((ConnId::NONE, CmEvent::ListenerRemoved { listener })),
        Some((sb, CmEvent::DeviceRemoval)),
        Some((sc, CmEvent::DeviceRemoval)),
    ];
    want.sort_by_key(|e| e.as_ref().map(|(id, _)| *id));
    assert_eq!(got, want);
    // Nothing after DEVICE_REMOVAL: the connections and the listener are
    // gone, and nothing more is read from the dead device.
    assert_eq!(server.cm.state(sb), None);
    assert_eq!(server.cm.next_event(Duration::from_millis(300)), None);
}

/// A virtual clock shared by the services of one test: a base instant
/// plus an offset the test moves.
#[derive(Clone)]
struct VirtualClock {
    base: std::time::Instant,
    offset_ms: Arc<std::sync::atomic::AtomicU64>,
}

impl VirtualClock {
    fn new() -> Self {
        Self {
            base: std::time::Instant::now(),
            offset_ms: Arc::default(),
        }
    }
    fn clock(&self) -> mad_cm::service::CmClock {
        let c = self.clone();
        Arc::new(move || c.base + Duration::from_millis(c.offset_ms.load(Ordering::SeqCst)))
    }
    fn advance(&self, d: Duration) {
        self.offset_ms
            .fetch_add(u64::try_from(d.as_millis()).unwrap(), Ordering::SeqCst);
    }
}

/// Pumps `pumps` (without waiting on the real clock for a deadline) until
/// `h` has an event, which must be `what`.
fn pump_until(
    pumps: &[&mad_cm::service::CmPump],
    h: &mad_cm::service::CmService,
    what: &str,
) -> (ConnId, CmEvent) {
    for _ in 0..2000 {
        for p in pumps {
            p.pump(Duration::from_millis(1));
        }
        if let Some((id, e)) = h.next_event(Duration::ZERO) {
            let name = format!("{e:?}");
            assert!(name.starts_with(what), "wanted {what}, got {name}");
            return (id, e);
        }
    }
    panic!("no {what} event");
}

/// `CmService::start_driven`: no thread, the caller pumps, and every
/// deadline follows the caller's clock. A REQ the server's user never
/// answers is given up when the virtual clock passes what the peer waits
/// (at most `max_user_wait`, 120 s), not while real time passes: the server's user gets
/// a `ConnectError`, the peer a REJ(ConsumerReject), and the server keeps
/// nothing of it.
#[test]
fn a_driven_service_follows_the_callers_clock_for_an_unanswered_req() {
    let s = Subnet::builtin().unwrap();
    let vc = VirtualClock::new();
    let start = |name: &str| {
        let ep = s.fabric().attach(name, 1).unwrap();
        let rt = Runtime::start(ep, EngineConfig::default()).unwrap();
        let lid = rt.port_attrs().lid;
        let (cm, pump) = CmService::start_driven(&rt, CmConfig::default(), vc.clock()).unwrap();
        (rt, lid, cm, pump)
    };
    let (crt, clid, client, cpump) = start("host-3");
    let (_srt, slid, server, spump) = start("host-4");
    let sa = SaClient::new(&crt, SaClientConfig::default()).unwrap();
    let path = resolve_route(&sa, clid, slid).unwrap();
    server.listen(0x1000).unwrap();
    let p = ConnectParams {
        remote_cm_response_timeout: 20,
        ..ConnectParams::new(0x1000, 9, 1, path)
    };
    client.connect(p).unwrap();
    let (id, _) = pump_until(&[&cpump, &spump], &server, "ConnectRequest");
    assert_eq!(server.tables().connections, 1);
    // Real time passes, virtual time does not: nothing happens.
    for _ in 0..20 {
        spump.pump(Duration::from_millis(5));
        cpump.pump(Duration::ZERO);
    }
    assert!(server.state(id).is_some(), "no deadline on the real clock");
    assert!(client.next_event(Duration::ZERO).is_none());
    // The virtual clock passes the peer's wait (2 x the path's packet
    // life + 4.096 us x 2^20), which is capped at `max_user_wait`.
    vc.advance(CmConfig::default().max_user_wait + Duration::from_secs(1));
    let (sid, _) = pump_until(&[&spump], &server, "ConnectError");
    assert_eq!(sid, id);
    assert!(server.state(id).is_none(), "the abandoned REQ is gone");
    assert_eq!(server.tables().connections, 0);
    let (_, e) = pump_until(&[&cpump], &client, "Rejected");
    assert!(
        matches!(e, CmEvent::Rejected { reason, .. } if reason == RejectReason::CONSUMER_DEFINED),
        "{e:?}"
    );
}
