//! Seed 004 in production: one port (transport, engine, loop thread)
//! shared by refcount among the services of a process — an SA client with
//! a subscription, the CM service, the exporter's reader and a user's
//! agent — on the built-in fabric. The creator's handle goes first and the
//! others go on; the last drop deregisters everything and joins the
//! thread. Every service holds the two-phase soft reset (seed 001) while
//! its work drains and resumes after it: the SA client, the CM, the
//! reader, a user's agent, and `mad sm`'s SM and SA (on a fabric without
//! an SM of its own). (Seed 002's device-fatal row on a real device is in
//! `tests/kernel_vm.rs`.)
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::VecDeque;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use mad_testkit::build::MadBuilder;
use mad_testkit::wrap::{Hooks, Wrapped};
use madstack::agents::sa::SaResponderConfig;
use madstack::agents::sa::{SaClient, SaClientConfig, SaError};
use madstack::agents::{
    AgentEvent, AgentReceiver, AgentRef, AgentSpec, EngineConfig, PortAgent, ResetHold, Runtime,
    SendRequest, SendStatus, SharedPort,
};
use madstack::cm::service::{resolve_route, CmService};
use madstack::cm::{AcceptParams, CmConfig, CmEvent, CmPath, ConnId, ConnectParams};
use madstack::core::port::PortConfig;
use madstack::core::transport::{Address, AsyncEvent, Qp, PERMISSIVE_LID};
use madstack::core::wire::attr::trap;
use madstack::core::wire::sa_records::{InformInfo, NodeRecord};
use madstack::core::wire::smp::DrPath;
use madstack::core::wire::{AttributeId, MadStatus, Method, MgmtClass};
use madstack::sim::{EndpointFault, Fabric, FaultyPort, Subnet};
use madstack::sm::{SmConfig, SmEvent};
use madstack::tools::cmd::sm::server::SmServer;
use madstack::tools::discover::agent::AgentExchange;
use madstack::tools::discover::pipeline::{Exchange, Limits, Outcome, Outgoing};

const WAIT: Duration = Duration::from_secs(20);
/// A vendor class (range 1) the user's agents speak.
const USER_CLASS: MgmtClass = MgmtClass(0x09);

/// Port events the test injects into a transport.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<VecDeque<AsyncEvent>>>);

impl Events {
    fn push(&self, e: AsyncEvent) {
        self.0.lock().unwrap().push_back(e);
    }
}

impl Hooks for Events {
    fn event(&mut self) -> Option<AsyncEvent> {
        self.0.lock().unwrap().pop_front()
    }
}

/// A shared port at `node` of `s` whose port events `events` adds to,
/// with a soft-reset acknowledgement timeout far beyond the test (a reset
/// ends only when every holder acknowledged).
fn shared_at(s: &Subnet, node: &str, events: &Events) -> SharedPort {
    let ep = s.fabric().attach(node, 1).unwrap();
    let port = PortConfig {
        reset_ack_timeout: Duration::from_secs(600),
        ..PortConfig::default()
    };
    let t = Wrapped::new(ep, events.clone());
    SharedPort::from_runtime(Runtime::start_with_port(t, port, EngineConfig::default()).unwrap())
}

/// A user's agent on `port` that holds the soft reset through its own
/// `ResetHold` and passes every event on to the returned channel.
fn holding_user(port: &SharedPort) -> (PortAgent, Arc<ResetHold>, mpsc::Receiver<AgentEvent>) {
    let hold = Arc::new(ResetHold::new());
    let (tx, user_rx) = mpsc::channel();
    let h2 = hold.clone();
    let user: PortAgent = port
        .register(user_spec("user").holding_reset(), move |ev| {
            h2.on_event(&ev);
            let _ = tx.send(ev);
        })
        .unwrap();
    hold.attach(user.handle());
    (user, hold, user_rx)
}

fn user_spec(name: &str) -> AgentSpec {
    AgentSpec::requests(name, USER_CLASS, 1, &[Method::GET])
}

fn user_get(tid_attr: u32, to: u16) -> SendRequest {
    let mad = MadBuilder::new(USER_CLASS, 1, Method::GET, AttributeId(0xFF00))
        .attr_mod(tid_attr)
        .to_vec();
    SendRequest::new(mad, Address::gsi(to)).expect_response(Duration::from_secs(5), 2)
}

/// The next event of `rx` that is not a port event.
fn next_mad(rx: &AgentReceiver) -> AgentEvent {
    let until = Instant::now() + WAIT;
    while Instant::now() < until {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Some(e) if e.is_port_event() => {}
            Some(e) => return e,
            None => {}
        }
    }
    panic!("no MAD within {WAIT:?}")
}

/// The next request `rx` receives (completions of its own answers are
/// passed over).
fn next_request(rx: &AgentReceiver) -> AgentEvent {
    loop {
        let e = next_mad(rx);
        if matches!(e, AgentEvent::Received(_)) {
            return e;
        }
    }
}

/// Answers the Get `ev` from `agent` with a GetResp.
fn answer(agent: &AgentRef, ev: &AgentEvent) {
    let AgentEvent::Received(m) = ev else {
        panic!("not a request: {ev:?}")
    };
    let resp = MadBuilder::parse(m.bytes())
        .unwrap()
        .response(MadStatus::SUCCESS)
        .to_vec();
    agent
        .send(SendRequest::new(resp, m.reply_address()))
        .unwrap();
}

/// Waits (bounded) until `cond` holds.
fn until(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A second host `node` on its own runtime: a CM, an SA client without
/// Reports, and a user agent (channel).
struct Peer {
    cm: CmService,
    sa: SaClient,
    user: madstack::agents::Agent,
    user_rx: AgentReceiver,
    rt: Runtime,
}

fn peer(s: &Subnet, node: &str) -> Peer {
    let rt = Runtime::start(s.fabric().attach(node, 1).unwrap(), EngineConfig::default()).unwrap();
    let cm = CmService::start(&rt, CmConfig::default()).unwrap();
    let sa = SaClient::new(
        &rt,
        SaClientConfig {
            receive_reports: false,
            ..SaClientConfig::default()
        },
    )
    .unwrap();
    let (user, user_rx) = rt.register_channel(user_spec("peer-user")).unwrap();
    Peer {
        cm,
        sa,
        user,
        user_rx,
        rt,
    }
}

fn route(sa: &SaClient, from: u16, to: u16) -> CmPath {
    let mut p = resolve_route(sa, from, to).unwrap();
    p.packet_life_time = p.packet_life_time.min(12);
    p
}

fn expect_cm(cm: &CmService, what: &str) -> (ConnId, CmEvent) {
    let (id, e) = cm
        .next_event(WAIT)
        .unwrap_or_else(|| panic!("no {what} event"));
    assert!(
        format!("{e:?}").starts_with(what),
        "wanted {what}, got {e:?}"
    );
    (id, e)
}

/// One CM connection from the peer to `cm`'s listener on `service`:
/// REQ, REP, RTU through the shared port.
fn connect(peer: &Peer, cm: &CmService, service: u64, from: u16, to: u16, qpn: u32) {
    let path = route(&peer.sa, from, to);
    peer.cm
        .connect(ConnectParams::new(service, qpn, 7, path))
        .unwrap();
    let (conn, _) = expect_cm(cm, "ConnectRequest");
    cm.accept(
        conn,
        AcceptParams {
            qpn: qpn + 0x100,
            starting_psn: 9,
            ..AcceptParams::default()
        },
    )
    .unwrap();
    expect_cm(&peer.cm, "Established");
    expect_cm(cm, "Established");
}

/// One SMP through the exporter's reader: NodeInfo of the local node.
fn read_node_info(ex: &mut AgentExchange<'_>, id: u64) {
    let mad = DrPath::from_hops(&[])
        .map(|r| r.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0, 0))
        .unwrap();
    let dest = Address::smi(PERMISSIVE_LID);
    let limits = Limits::default();
    ex.start(
        id,
        Outgoing {
            qp: Qp::Qp0,
            mad: &mad,
            dest: &dest,
            limits: &limits,
        },
    )
    .unwrap();
    ex.flush().unwrap();
    let mut out = Vec::new();
    let end = Instant::now() + WAIT;
    while out.is_empty() && Instant::now() < end {
        ex.poll(Duration::from_millis(100), &mut out).unwrap();
    }
    assert!(
        matches!(out.as_slice(), [(i, Outcome::Answer(_))] if *i == id),
        "{out:?}"
    );
}

fn link_state_change() -> InformInfo {
    InformInfo {
        lid_range_begin: InformInfo::LID_RANGE_ALL,
        is_generic: 1,
        trap_type: InformInfo::TYPE_ALL,
        trap_number_or_device_id: trap::LINK_STATE_CHANGE,
        producer_type_or_vendor_id: InformInfo::PRODUCER_TYPE_ALL,
        ..InformInfo::default()
    }
}

#[test]
fn the_creator_drops_first_and_the_services_go_on_until_the_last_drop_joins_the_thread() {
    let s = Subnet::builtin().unwrap();
    let events = Events::default();
    let creator = shared_at(&s, "host-6", &events);
    let watch = creator.watch();
    let lid = creator.port_attrs().lid;
    let p = peer(&s, "host-7");
    let peer_lid = p.rt.port_attrs().lid;

    // The services, each opened on the shared port.
    let sa = SaClient::open(&creator, SaClientConfig::default()).unwrap();
    sa.subscribe(&link_state_change()).unwrap();
    let cm = CmService::open(&creator, CmConfig::default()).unwrap();
    cm.listen(0x1000).unwrap();
    let (user, user_rx) = creator.register_channel(user_spec("user")).unwrap();
    let mut reader = AgentExchange::open(&creator).unwrap();
    // A plain agent of the runtime, holding no handle: the last drop
    // deregisters it.
    let (plain, _plain_rx) = creator
        .runtime()
        .register_channel(AgentSpec::send_only("plain", Qp::Qp1))
        .unwrap();
    assert_eq!(watch.holders(), 5);

    drop(creator);
    assert_eq!(watch.holders(), 4);
    assert!(!watch.joined());

    // The SA client: queries, and the Report of its subscription.
    assert_eq!(sa.all::<NodeRecord>().unwrap().records.len(), 12);
    s.fabric().link_down("host-3", 1).unwrap();
    let r = sa
        .next_report(WAIT)
        .expect("a Report after the creator went");
    assert_eq!(r.notice.trap_number(), Some(trap::LINK_STATE_CHANGE));
    s.fabric().link_up("host-3", 1).unwrap();
    // The CM: a connection from the peer, accepted.
    connect(&p, &cm, 0x1000, peer_lid, lid, 0x40);
    // The user's agent: a request to the peer answered, and one from it.
    user.send(user_get(1, peer_lid)).unwrap();
    let req = next_request(&p.user_rx);
    answer(&p.user, &req);
    let AgentEvent::SendDone(c) = next_mad(&user_rx) else {
        panic!("no completion")
    };
    assert_eq!(c.status, SendStatus::Success);
    assert!(c.response.is_some());
    p.user.send(user_get(2, lid)).unwrap();
    assert!(matches!(next_mad(&user_rx), AgentEvent::Received(_)));
    // The exporter's reader.
    read_node_info(&mut reader, 7);

    // Three of four go: the port still runs for the last.
    drop(reader);
    drop(cm);
    drop(user);
    assert_eq!(watch.holders(), 1);
    assert!(plain.state().is_some(), "the plain agent is still there");
    assert_eq!(sa.all::<NodeRecord>().unwrap().records.len(), 12);
    // The last: everything deregistered, the loop thread joined.
    drop(sa);
    assert_eq!(watch.holders(), 0);
    assert!(
        watch.joined(),
        "the loop thread was joined by the last drop"
    );
    assert_eq!(
        plain.state(),
        None,
        "the last drop deregistered every agent"
    );
    assert!(!watch.is_gone(), "the plain agent's handle keeps its state");
    drop(plain);
    assert!(watch.is_gone(), "nothing of the runtime is left");
}

#[test]
fn the_facade_port_closes_first_and_its_services_keep_the_port_and_the_fabric() {
    let port = madstack::open(&madstack::Options::sim()).unwrap();
    let watch = port.shared_port().watch();
    let sa = port
        .open_sa(SaClientConfig {
            receive_reports: false,
            ..SaClientConfig::default()
        })
        .unwrap();
    let mut reader = port.open_reader().unwrap();
    let (agent, _rx) = port
        .register_channel(AgentSpec::send_only("mine", Qp::Qp1))
        .unwrap();
    let nodes = sa.all::<NodeRecord>().unwrap().records.len();
    port.close().unwrap();
    // The built-in fabric's SM and SA went with the port, not with the
    // facade's `Port`.
    assert_eq!(sa.all::<NodeRecord>().unwrap().records.len(), nodes);
    read_node_info(&mut reader, 1);
    drop((reader, agent));
    assert_eq!(watch.holders(), 1);
    drop(sa);
    assert!(watch.joined() && watch.is_gone());
}

#[test]
fn every_service_on_the_port_holds_the_soft_reset_while_it_drains_and_resumes_after() {
    let s = Subnet::builtin().unwrap();
    let events = Events::default();
    let port = shared_at(&s, "host-6", &events);
    let p = peer(&s, "host-7");
    let peer_lid = p.rt.port_attrs().lid;
    let sa = Arc::new(SaClient::open(&port, SaClientConfig::default()).unwrap());
    sa.subscribe(&link_state_change()).unwrap();
    let cm = CmService::open(&port, CmConfig::default()).unwrap();
    let mut reader = AgentExchange::open(&port).unwrap();
    // The user's agent holds resets too, through its own ResetHold.
    let (user, hold, user_rx) = holding_user(&port);
    let stats = |p: &SharedPort| p.with_engine(|e| e.port().stats());

    // The user's agent has a request in flight that the peer holds.
    user.send(user_get(1, peer_lid)).unwrap();
    let held = next_request(&p.user_rx);

    events.push(AsyncEvent::SoftResetRequest);
    port.with_engine(|_| ());
    until("every service heard ResetPending", || {
        sa.reset_stats().holds == 1 && cm.reset_stats().holds == 1 && hold.stats().holds == 1
    });
    // The SA client and the CM had nothing in flight: drained at once.
    until("the SA client and the CM acknowledged", || {
        sa.reset_stats().acks == 1 && cm.reset_stats().acks == 1
    });
    // A request begun now waits for the reset to end.
    let sa2 = sa.clone();
    let waiting = std::thread::spawn(move || sa2.all::<NodeRecord>().map(|t| t.records.len()));
    until("the SA request waits", || sa.reset_stats().waited == 1);
    // The user's agent still drains: the port has not reset.
    assert_eq!(hold.stats().acks, 0);
    assert_eq!(
        stats(&port).soft_resets,
        0,
        "reset before every holder let go"
    );
    assert_eq!(stats(&port).forced_resets, 0);

    // The peer answers: the user's agent has drained and acknowledges;
    // the port resets and every service resumes.
    answer(&p.user, &held);
    until("the user's agent acknowledged", || hold.stats().acks == 1);
    until("every service resumed", || {
        sa.reset_stats().resumes == 1 && cm.reset_stats().resumes == 1 && hold.stats().resumes == 1
    });
    let done = std::iter::from_fn(|| user_rx.recv_timeout(WAIT).ok())
        .find_map(|e| match e {
            AgentEvent::SendDone(c) => Some(c),
            _ => None,
        })
        .expect("the drained send's completion");
    assert_eq!(done.status, SendStatus::Success, "drained, not flushed");
    assert_eq!(
        (stats(&port).soft_resets, stats(&port).forced_resets),
        (1, 0)
    );
    assert_eq!(
        waiting.join().unwrap().unwrap(),
        12,
        "the waiting request went on"
    );

    // Work after the reset: every service sends and receives.
    assert_eq!(sa.subscriptions()[0].accepted, 1);
    cm.listen(0x2000).unwrap();
    connect(&p, &cm, 0x2000, peer_lid, port.port_attrs().lid, 0x50);
    read_node_info(&mut reader, 3);
    user.send(user_get(3, peer_lid)).unwrap();
    answer(&p.user, &next_request(&p.user_rx));

    // A device-fatal error: every service hears of it and the SA client
    // fails fast from then on.
    events.push(AsyncEvent::DeviceFatal);
    port.with_engine(|_| ());
    until("every service heard DeviceFatal", || {
        sa.is_port_dead() && hold.stats().device_fatal == 1 && cm.reset_stats().device_fatal == 1
    });
    assert!(matches!(sa.all::<NodeRecord>(), Err(SaError::PortDead)));
    assert!(
        user.send(user_get(4, peer_lid)).is_err(),
        "a post on a dead port fails"
    );
}

/// Starts (and hands to the port thread) a Get of the user's class from
/// the exporter's reader to `to`'s QP1, one try with a timeout far
/// beyond the test: it ends when `to` answers it.
fn reader_get(ex: &mut AgentExchange<'_>, id: u64, to: u16) {
    let mut mad = [0u8; madstack::core::wire::MAD_LEN];
    let bytes = MadBuilder::new(USER_CLASS, 1, Method::GET, AttributeId(0xFF00))
        .attr_mod(u32::try_from(id).unwrap())
        .to_vec();
    mad[..bytes.len()].copy_from_slice(&bytes);
    let limits = Limits {
        timeout: Duration::from_secs(60),
        retries: 0,
        ..Limits::default()
    };
    ex.start(
        id,
        Outgoing {
            qp: Qp::Qp1,
            mad: &mad,
            dest: &Address::gsi(to),
            limits: &limits,
        },
    )
    .unwrap();
    ex.flush().unwrap();
}

/// The outcomes the reader has now (waiting at most `max` for the first).
fn reader_outcomes(ex: &mut AgentExchange<'_>, max: Duration) -> Vec<(u64, Outcome)> {
    let mut out = Vec::new();
    ex.poll(max, &mut out).unwrap();
    out
}

/// Waits (bounded) for the reader's answer to request `id`.
fn reader_answer(ex: &mut AgentExchange<'_>, id: u64) {
    let end = Instant::now() + WAIT;
    let mut out = Vec::new();
    while out.is_empty() && Instant::now() < end {
        out = reader_outcomes(ex, Duration::from_millis(100));
    }
    assert!(
        matches!(out.as_slice(), [(i, Outcome::Answer(_))] if *i == id),
        "{out:?}"
    );
}

/// No request reaches `rx` within `d` (port events and completions of
/// its own answers are passed over).
fn no_request_within(rx: &AgentReceiver, d: Duration, what: &str) {
    let end = Instant::now() + d;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        if let Some(e @ AgentEvent::Received(_)) = rx.recv_timeout(left) {
            panic!("{what}: {e:?}");
        }
    }
}

#[test]
fn the_readers_hold_acknowledges_at_once_when_idle_and_only_after_its_request_in_flight_ends() {
    let s = Subnet::builtin().unwrap();
    let events = Events::default();
    let port = shared_at(&s, "host-6", &events);
    let p = peer(&s, "host-7");
    let peer_lid = p.rt.port_attrs().lid;
    let mut reader = AgentExchange::open(&port).unwrap();
    let stats = |p: &SharedPort| p.with_engine(|e| e.port().stats());

    // Idle: its port thread sleeps on the request channel, and the
    // reset goes through at once.
    events.push(AsyncEvent::SoftResetRequest);
    port.with_engine(|_| ());
    until("the idle reader acknowledged and the port reset", || {
        reader.reset_stats().acks == 1 && stats(&port).soft_resets == 1
    });
    until("the reader resumed", || reader.reset_stats().resumes == 1);

    // A request in flight, held by the peer: the reset waits for it.
    reader_get(&mut reader, 1, peer_lid);
    let held = next_request(&p.user_rx);
    events.push(AsyncEvent::SoftResetRequest);
    port.with_engine(|_| ());
    until("the reader heard ResetPending", || {
        reader.reset_stats().holds == 2
    });
    // A request started now does not go out.
    reader_get(&mut reader, 2, peer_lid);
    no_request_within(
        &p.user_rx,
        Duration::from_millis(200),
        "a request went out during the reset",
    );
    assert!(reader_outcomes(&mut reader, Duration::ZERO).is_empty());
    assert_eq!(
        reader.reset_stats().acks,
        1,
        "acknowledged with a request in flight"
    );
    assert_eq!(
        stats(&port).soft_resets,
        1,
        "reset with a request in flight"
    );

    // The answer ends the request: the reader acknowledges, the port
    // resets, and the waiting request goes out after the reset.
    answer(&p.user, &held);
    reader_answer(&mut reader, 1);
    until(
        "the reader acknowledged, the port reset, the reader resumed",
        || {
            reader.reset_stats().acks == 2
                && stats(&port).soft_resets == 2
                && reader.reset_stats().resumes == 2
        },
    );
    answer(&p.user, &next_request(&p.user_rx));
    reader_answer(&mut reader, 2);
    assert_eq!(stats(&port).forced_resets, 0);
}

#[test]
fn all_services_on_one_port_each_hold_the_reset_while_their_work_is_in_flight_and_work_after() {
    let s = Subnet::builtin().unwrap();
    let events = Events::default();
    let port = shared_at(&s, "host-6", &events);
    let lid = port.port_attrs().lid;
    let p = peer(&s, "host-7");
    let peer_lid = p.rt.port_attrs().lid;
    p.cm.listen(0x4000).unwrap();
    let sa = Arc::new(SaClient::open(&port, SaClientConfig::default()).unwrap());
    sa.subscribe(&link_state_change()).unwrap();
    let cm = CmService::open(&port, CmConfig::default()).unwrap();
    let path = route(&sa, lid, peer_lid);
    let mut reader = AgentExchange::open(&port).unwrap();
    let (user, hold, user_rx) = holding_user(&port);
    let stats = |p: &SharedPort| p.with_engine(|e| e.port().stats());

    // Work in flight: a request of the user's agent and one of the
    // reader, each held by the peer.
    user.send(user_get(1, peer_lid)).unwrap();
    let held_user = next_request(&p.user_rx);
    reader_get(&mut reader, 10, peer_lid);
    let held_reader = next_request(&p.user_rx);

    events.push(AsyncEvent::SoftResetRequest);
    port.with_engine(|_| ());
    until("every service heard ResetPending", || {
        [
            sa.reset_stats(),
            cm.reset_stats(),
            hold.stats(),
            reader.reset_stats(),
        ]
        .iter()
        .all(|s| s.holds == 1)
    });
    // The SA client and the CM have nothing in flight: drained at once.
    until("the SA client and the CM acknowledged", || {
        sa.reset_stats().acks == 1 && cm.reset_stats().acks == 1
    });
    // New work of each waits for the reset's end: an SA query, a CM
    // connection, a request of the reader.
    let sa2 = sa.clone();
    let waiting = std::thread::spawn(move || sa2.all::<NodeRecord>().map(|t| t.records.len()));
    until("the SA request waits", || sa.reset_stats().waited == 1);
    cm.connect(ConnectParams::new(0x4000, 0x60, 7, path))
        .unwrap();
    reader_get(&mut reader, 11, peer_lid);
    no_request_within(
        &p.user_rx,
        Duration::from_millis(200),
        "the reader sent during the reset",
    );
    assert!(
        p.cm.next_event(Duration::from_millis(100)).is_none(),
        "the CM's REQ went out during the reset"
    );
    assert_eq!(
        (hold.stats().acks, reader.reset_stats().acks),
        (0, 0),
        "acknowledged with work in flight"
    );

    // The user's request ends: its agent acknowledges; the reader still
    // holds the reset.
    answer(&p.user, &held_user);
    until("the user's agent acknowledged", || hold.stats().acks == 1);
    assert_eq!(reader.reset_stats().acks, 0);
    assert_eq!(
        stats(&port).soft_resets,
        0,
        "reset before the reader let go"
    );
    // The reader's request ends: the last holder lets go, the port
    // resets, every service resumes.
    answer(&p.user, &held_reader);
    reader_answer(&mut reader, 10);
    until("every service resumed", || {
        [
            sa.reset_stats(),
            cm.reset_stats(),
            hold.stats(),
            reader.reset_stats(),
        ]
        .iter()
        .all(|s| s.acks == 1 && s.resumes == 1)
    });
    assert_eq!(
        (stats(&port).soft_resets, stats(&port).forced_resets),
        (1, 0)
    );

    // Each keeps working after ResetEnd: the work that waited goes on,
    // and new work succeeds.
    assert_eq!(waiting.join().unwrap().unwrap(), 12, "the waiting SA query");
    answer(&p.user, &next_request(&p.user_rx));
    reader_answer(&mut reader, 11);
    let (conn, _) = expect_cm(&p.cm, "ConnectRequest");
    p.cm.accept(
        conn,
        AcceptParams {
            qpn: 0x160,
            starting_psn: 9,
            ..AcceptParams::default()
        },
    )
    .unwrap();
    expect_cm(&cm, "Established");
    assert_eq!(sa.all::<NodeRecord>().unwrap().records.len(), 12);
    user.send(user_get(2, peer_lid)).unwrap();
    answer(&p.user, &next_request(&p.user_rx));
    let done = std::iter::from_fn(|| user_rx.recv_timeout(WAIT).ok())
        .filter_map(|e| match e {
            AgentEvent::SendDone(c) => Some(c),
            _ => None,
        })
        .nth(1)
        .expect("the completions of both user requests");
    assert_eq!(done.status, SendStatus::Success);
    read_node_info(&mut reader, 12);
    s.fabric().link_down("host-3", 1).unwrap();
    let r = sa.next_report(WAIT).expect("a Report after the reset");
    assert_eq!(r.notice.trap_number(), Some(trap::LINK_STATE_CHANGE));
    s.fabric().link_up("host-3", 1).unwrap();
}

/// Pumps `mad sm`'s server (its SM loop, on this thread) until `cond`,
/// collecting the SM's events into `seen`.
fn pump_sm<T: madstack::tools::cmd::sm::split::Waitable>(
    srv: &mut SmServer<T>,
    seen: &mut Vec<SmEvent>,
    what: &str,
    mut cond: impl FnMut(&SmServer<T>, &[SmEvent]) -> bool,
) {
    let end = Instant::now() + WAIT;
    while !cond(srv, seen) {
        assert!(Instant::now() < end, "never: {what}");
        if !srv.pump(Instant::now()).unwrap() {
            srv.wait();
        }
        seen.extend(std::iter::from_fn(|| srv.poll_event()));
    }
}

#[test]
fn mad_sm_and_its_sa_hold_the_reset_while_smps_await_answers_and_sweep_and_answer_after() {
    let fabric = Fabric::builtin();
    let mut t = fabric.attach("host-1", 1).unwrap();
    t.set_is_sm(true);
    let t = FaultyPort::new(t, 1);
    let port_cfg = PortConfig {
        reset_ack_timeout: Duration::from_secs(600),
        ..PortConfig::default()
    };
    let sm_cfg = SmConfig {
        // No SMP times out during the test: only answers end them.
        timeout: Duration::from_secs(60),
        ..SmConfig::default()
    };
    let mut srv = SmServer::start(
        t,
        (port_cfg, EngineConfig::default()),
        sm_cfg,
        SaResponderConfig::default(),
        Instant::now(),
    )
    .unwrap();
    let mut seen = Vec::new();
    pump_sm(&mut srv, &mut seen, "SUBNET UP", |_, ev| {
        ev.contains(&SmEvent::SubnetUp)
    });
    let sm_node = fabric.find("host-1").unwrap();
    let sm_lid = fabric.port_info(sm_node, 1).unwrap().lid;
    let stats = |p: &SharedPort| p.with_engine(|e| e.port().stats());
    // A client of the SA on another host.
    let rt = Runtime::start(fabric.attach("host-7", 1).unwrap(), EngineConfig::default()).unwrap();
    let client = Arc::new(
        SaClient::new(
            &rt,
            SaClientConfig {
                receive_reports: false,
                sa_address: Some(Address::gsi(sm_lid)),
                timeout: Duration::from_secs(30),
                ..SaClientConfig::default()
            },
        )
        .unwrap(),
    );
    let nodes = client.all::<NodeRecord>().unwrap().records.len();
    assert_eq!(nodes, fabric.node_count());

    // A re-sweep with its first SMP held on the wire.
    fabric.set_auto_deliver(false);
    srv.sm_mut().resweep(Instant::now());
    pump_sm(&mut srv, &mut seen, "an SMP on the wire", |s, _| {
        s.sm().awaiting_answers() > 0
    });
    fabric
        .inject("host-1", 1, EndpointFault::SoftReset)
        .unwrap();
    pump_sm(
        &mut srv,
        &mut seen,
        "the SM and the SA heard ResetPending",
        |s, _| s.reset_stats().holds == 1 && s.sa_reset_stats().holds == 1,
    );
    // The SA has nothing in flight: it acknowledges; the SM waits for
    // its answer.
    pump_sm(&mut srv, &mut seen, "the SA acknowledged", |s, _| {
        s.sa_reset_stats().acks == 1
    });
    assert_eq!(
        srv.reset_stats().acks,
        0,
        "acknowledged with an SMP on the wire"
    );
    assert_eq!(stats(srv.port()).soft_resets, 0);
    let sent = srv.driver().sent();
    // An SA query reaches the SA during the reset: it waits there.
    let c2 = client.clone();
    let query = std::thread::spawn(move || c2.all::<NodeRecord>().map(|t| t.records.len()));
    let end = Instant::now() + WAIT;
    while srv.sa_stats().deferred == 0 {
        assert!(Instant::now() < end, "the query never reached the SA");
        fabric.run_until_idle();
        std::thread::sleep(Duration::from_millis(2));
    }
    // (run_until_idle above delivered the SMA's answer too.) The answer
    // ends the SM's SMP: the SM acknowledges — sending nothing, though
    // the answer gave it more to read — and the port resets.
    pump_sm(&mut srv, &mut seen, "the SM acknowledged", |s, _| {
        s.reset_stats().acks == 1
    });
    assert_eq!(srv.driver().sent(), sent, "the SM sent during the reset");
    fabric.set_auto_deliver(true);
    pump_sm(&mut srv, &mut seen, "the SM and the SA resumed", |s, _| {
        s.reset_stats().resumes == 1 && s.sa_reset_stats().resumes == 1
    });
    assert_eq!(
        (
            stats(srv.port()).soft_resets,
            stats(srv.port()).forced_resets
        ),
        (1, 0)
    );
    // After the reset: the query that waited is answered, the sweep goes
    // on to its end, and a new query is answered.
    let sweeps = seen
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepDone { .. }))
        .count();
    pump_sm(&mut srv, &mut seen, "the re-sweep's end", |_, ev| {
        ev.iter()
            .filter(|e| matches!(e, SmEvent::SweepDone { .. }))
            .count()
            > sweeps
    });
    assert!(srv.driver().sent() > sent, "the SM sweeps again");
    assert_eq!(
        query.join().unwrap().unwrap(),
        nodes,
        "the query that waited"
    );
    assert_eq!(client.all::<NodeRecord>().unwrap().records.len(), nodes);
    drop(client);
    rt.shutdown();
    srv.shutdown();
}
