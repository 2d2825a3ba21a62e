//! Helpers for mad-sim's integration tests: the shared topology files,
//! SMP round trips through any `Transport`, and the workspace's shared
//! directed-route sweep (`tests/support`, included by path).
#![allow(dead_code, reason = "not every test uses every helper")]
#![allow(clippy::unwrap_used, reason = "test helpers")]

// The workspace's shared test support (not this crate's code: its lints
// are its owner's business).
#[allow(clippy::all)]
#[path = "../../../tests/support/mod.rs"]
pub mod support;

use std::path::PathBuf;

use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Method, MgmtClass, SMP_DATA_OFFSET};
use mad_testkit::fabric as kit;
pub use mad_testkit::MadBuilder;

/// tests/fixtures/topologies, from this crate.
pub fn topo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/topologies")
}

/// Every topology file (all but the README), sorted.
pub fn topo_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(topo_dir())
        .expect("tests/fixtures/topologies")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("net"))
        })
        .collect();
    v.sort();
    v
}

/// The topology file called `name`.
pub fn topo(name: &str) -> PathBuf {
    topo_dir().join(name)
}

/// A directed-route SMP request.
#[derive(Debug, Clone, Copy)]
pub struct Req<'a> {
    /// Egress ports of hops 1.. (empty: the local port).
    pub hops: &'a [u8],
    /// Get or Set.
    pub method: Method,
    /// Attribute.
    pub attr: AttributeId,
    /// Attribute modifier.
    pub amod: u32,
    /// M_Key.
    pub m_key: u64,
    /// Attribute data (Set).
    pub data: &'a [u8],
}

impl<'a> Req<'a> {
    /// Get `attr` / `amod` at `hops`.
    pub fn get(hops: &'a [u8], attr: AttributeId, amod: u32) -> Self {
        Self {
            hops,
            method: Method::GET,
            attr,
            amod,
            m_key: 0,
            data: &[],
        }
    }
    /// Set `attr` / `amod` at `hops` to `data`.
    pub fn set(hops: &'a [u8], attr: AttributeId, amod: u32, data: &'a [u8]) -> Self {
        Self {
            hops,
            method: Method::SET,
            attr,
            amod,
            m_key: 0,
            data,
        }
    }
    /// With this M_Key.
    pub fn key(mut self, m_key: u64) -> Self {
        self.m_key = m_key;
        self
    }
    /// The SMP bytes with this TID.
    pub fn build(&self, tid: u64) -> [u8; 256] {
        self.builder().tid(tid).build()
    }
    /// The SMP under construction (to vary it before building).
    pub fn builder(&self) -> MadBuilder {
        MadBuilder::dr(self.hops, self.method, self.attr)
            .attr_mod(self.amod)
            .m_key(self.m_key)
            .bytes_at(SMP_DATA_OFFSET, self.data)
    }
}

static TID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0x4242_0000);

/// A fresh TID (below bit 48).
pub fn next_tid() -> u64 {
    TID.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0xFFFF_FFFF_FFFF
}

/// Sends `req` and returns (status, data) of the answer, or `None` when
/// none came (after `idle` said there is nothing more to wait for).
pub fn dr_rpc<T: Transport + ?Sized>(
    t: &mut T,
    req: &Req<'_>,
    mut idle: impl FnMut(&mut T) -> bool,
) -> Option<(u16, [u8; 64])> {
    let tid = next_tid();
    t.post_send(Qp::Qp0, &req.build(tid), &Address::smi(PERMISSIVE_LID))
        .unwrap();
    loop {
        while let Some(r) = t.poll_recv().unwrap() {
            let s = Smp::new_checked(&r.mad[..]).unwrap();
            if s.tid() & 0xFFFF_FFFF_FFFF == tid {
                let mut d = [0u8; 64];
                d.copy_from_slice(s.data());
                return Some((s.dr_status(), d));
            }
        }
        if !idle(t) {
            return None;
        }
    }
}

/// `dr_rpc` on the simulated fabric (answers arrive at once).
pub fn sim_rpc<T: Transport + ?Sized>(t: &mut T, req: &Req<'_>) -> Option<(u16, [u8; 64])> {
    dr_rpc(t, req, |_| false)
}

/// A directed-route Get on the simulated fabric: (status, data); panics
/// if nothing answers.
pub fn sim_get<T: Transport + ?Sized>(
    t: &mut T,
    path: &[u8],
    attr: AttributeId,
    amod: u32,
) -> (u16, [u8; 64]) {
    sim_rpc(t, &Req::get(path, attr, amod)).unwrap()
}

/// A directed-route Set of `data` on the simulated fabric: (status,
/// data); panics if nothing answers.
pub fn sim_set<T: Transport + ?Sized>(
    t: &mut T,
    path: &[u8],
    attr: AttributeId,
    amod: u32,
    data: &[u8],
) -> (u16, [u8; 64]) {
    sim_rpc(t, &Req::set(path, attr, amod, data)).unwrap()
}

/// [`sim_set`] of `r`, encoded.
pub fn sim_set_repr<T: Transport + ?Sized>(
    t: &mut T,
    path: &[u8],
    attr: AttributeId,
    amod: u32,
    r: &impl Repr,
) -> (u16, [u8; 64]) {
    sim_set(t, path, attr, amod, &r.to_vec().unwrap())
}

/// The status of the answer to a directed-route Get (as [`sim_get`]).
pub fn get_status<T: Transport + ?Sized>(
    t: &mut T,
    path: &[u8],
    attr: AttributeId,
    amod: u32,
) -> u16 {
    sim_get(t, path, attr, amod).0
}

// ---------------------------------------------------------------------
// ibsim's `net` example: Switch1 (index 0), Switch2 (1), Hca1 (2), Hca2 (3).
// Switch1 ports 1 - Hca1.1, 2 - Hca2.2, 3 - Switch2.3, 4 - Switch2.4.
// ---------------------------------------------------------------------

use mad_core::transport::Received;
use mad_core::wire::attr::{PortInfo, PortState, SwitchInfo};
use mad_core::wire::Repr;
use mad_sim::{Fabric, SimPort, Topology};

/// Node indices in `net`.
pub const S1: usize = 0;
/// Switch2.
pub const S2: usize = 1;
/// Hca1.
pub const H1: usize = 2;
/// Hca2.
pub const H2: usize = 3;

/// DR paths from Hca1 port 1.
pub const TO_S1: &[u8] = &[1];
/// Hca1 → Switch1 → Switch2 (port 3).
pub const TO_S2: &[u8] = &[1, 3];
/// Hca1 → Switch1 → Hca2 (port 2).
pub const TO_H2: &[u8] = &[1, 2];

/// The `net` fabric and an endpoint at Hca1 port 1.
pub fn net() -> (Fabric, SimPort) {
    let topo = Topology::load(topo("net")).unwrap();
    let fabric = Fabric::new(&topo);
    let port = fabric.attach("Hca1", 1).unwrap();
    (fabric, port)
}

/// Get(PortInfo) at `hops`, modifier `amod`.
pub fn pi_get(t: &mut SimPort, hops: &[u8], amod: u32) -> Option<(u16, PortInfo)> {
    pi_get_key(t, hops, amod, 0)
}

/// Get(PortInfo) with an M_Key.
pub fn pi_get_key(t: &mut SimPort, hops: &[u8], amod: u32, key: u64) -> Option<(u16, PortInfo)> {
    let (s, d) = sim_rpc(t, &Req::get(hops, AttributeId::PORT_INFO, amod).key(key))?;
    Some((s, PortInfo::parse(&d).unwrap()))
}

/// Set(PortInfo) from the current value changed by `f` (PortState and
/// PortPhysicalState start as NoChange); `key` is the M_Key used for
/// both.
pub fn pi_set(
    t: &mut SimPort,
    hops: &[u8],
    amod: u32,
    key: u64,
    f: impl FnOnce(&mut PortInfo),
) -> Option<(u16, PortInfo)> {
    let (_, mut pi) = pi_get_key(t, hops, amod, key)?;
    pi.port_state = PortState::NO_CHANGE;
    pi.port_phys_state = mad_core::wire::attr::PhysPortState::NO_CHANGE;
    f(&mut pi);
    let data = pi.to_vec().unwrap();
    let (s, d) = sim_rpc(
        t,
        &Req::set(hops, AttributeId::PORT_INFO, amod, &data).key(key),
    )?;
    Some((s, PortInfo::parse(&d).unwrap()))
}

/// Set a port's PortState.
pub fn set_state(t: &mut SimPort, hops: &[u8], amod: u32, st: PortState) -> u16 {
    pi_set(t, hops, amod, 0, |p| p.port_state = st).unwrap().0
}

/// Arms then activates both ends of a link (each end: DR hops and
/// PortInfo modifier).
pub fn activate(t: &mut SimPort, a: (&[u8], u32), b: (&[u8], u32)) {
    for st in [PortState::ARMED, PortState::ACTIVE] {
        assert_eq!(set_state(t, a.0, a.1, st), 0, "{a:?} -> {st}");
        assert_eq!(set_state(t, b.0, b.1, st), 0, "{b:?} -> {st}");
    }
}

/// Configures `net` as an SM would: LIDs (Hca1 1, Hca2 2, Switch1 3,
/// Switch2 4), LFTs, every link Active. Returns nothing; panics on any
/// failure.
pub fn configure_net(t: &mut SimPort) {
    let set_lid = |t: &mut SimPort, hops: &[u8], amod: u32, lid: u16| {
        let (s, pi) = pi_set(t, hops, amod, 0, |p| {
            p.lid = lid;
            p.master_sm_lid = 1;
        })
        .unwrap();
        assert_eq!((s, pi.lid), (0, lid));
    };
    set_lid(t, &[], 0, 1);
    set_lid(t, TO_H2, 0, 2);
    set_lid(t, TO_S1, 0, 3);
    set_lid(t, TO_S2, 0, 4);
    let lft = |routes: &[(usize, u8)]| {
        let mut b = [0xFFu8; 64];
        for (lid, port) in routes {
            b[*lid] = *port;
        }
        b
    };
    for (hops, routes) in [
        (TO_S1, lft(&[(1, 1), (2, 2), (3, 0), (4, 3)])),
        (TO_S2, lft(&[(1, 3), (2, 3), (3, 3), (4, 0)])),
    ] {
        let (s, _) = sim_rpc(
            t,
            &Req::set(hops, AttributeId::LINEAR_FWD_TABLE, 0, &routes),
        )
        .unwrap();
        assert_eq!(s, 0);
        let (_, d) = sim_rpc(t, &Req::get(hops, AttributeId::SWITCH_INFO, 0)).unwrap();
        let mut si = SwitchInfo::parse(&d).unwrap();
        si.linear_fdb_top = 4;
        let (s, _) = sim_rpc(
            t,
            &Req::set(hops, AttributeId::SWITCH_INFO, 0, &si.to_vec().unwrap()),
        )
        .unwrap();
        assert_eq!(s, 0);
    }
    activate(t, (&[], 0), (TO_S1, 1));
    activate(t, (TO_S1, 2), (TO_H2, 0));
    activate(t, (TO_S1, 3), (TO_S2, 3));
    activate(t, (TO_S1, 4), (TO_S2, 4));
}

/// Drains everything the endpoint received.
pub fn drain(t: &mut SimPort) -> Vec<Received> {
    kit::drain(t).unwrap()
}

/// Drains the send completions and checks they are all successes.
pub fn completions_ok(t: &mut SimPort) -> usize {
    kit::completions_ok(t).unwrap()
}

/// A GSI MAD: class, method, attribute, TID; data zero.
pub fn gsi_mad(class: u8, class_version: u8, method: Method, attr: u16, tid: u64) -> [u8; 256] {
    MadBuilder::new(MgmtClass(class), class_version, method, AttributeId(attr))
        .tid(tid)
        .build()
}

/// A PerfMgt request to `dlid`; returns (status, attribute data).
pub fn pma(
    t: &mut SimPort,
    dlid: u16,
    method: Method,
    attr: u16,
    data: &[u8],
) -> Option<(u16, Vec<u8>)> {
    let mut m = gsi_mad(0x04, 1, method, attr, next_tid());
    m[64..64 + data.len()].copy_from_slice(data);
    gsi_rpc(t, &m, dlid, 64)
}

/// Sends the GSI MAD `m` to `dlid`; returns (status, the answer's bytes
/// from `offset`) of the answer with `m`'s TID, `None` when none came.
pub fn gsi_rpc(t: &mut SimPort, m: &[u8], dlid: u16, offset: usize) -> Option<(u16, Vec<u8>)> {
    let tid = mad_core::wire::Mad::new_unchecked(m).tid();
    t.post_send(Qp::Qp1, m, &Address::gsi(dlid)).unwrap();
    drain(t)
        .into_iter()
        .find(|r| mad_core::wire::Mad::new_unchecked(&r.mad[..]).tid() == tid)
        .map(|r| {
            (
                mad_core::wire::Mad::new_unchecked(&r.mad[..]).status().0,
                r.mad[offset..].to_vec(),
            )
        })
}

/// One mio registration of a file descriptor for readability, as an
/// event loop holds it.
pub struct FdWatch {
    poll: mio::Poll,
    events: mio::Events,
}

impl FdWatch {
    /// Registers `fd` for readability.
    pub fn new(fd: std::os::fd::RawFd) -> Self {
        let poll = mio::Poll::new().unwrap();
        poll.registry()
            .register(
                &mut mio::unix::SourceFd(&fd),
                mio::Token(0),
                mio::Interest::READABLE,
            )
            .unwrap();
        Self {
            poll,
            events: mio::Events::with_capacity(4),
        }
    }

    /// Whether the registration reports readiness within `timeout`.
    pub fn readable_within(&mut self, timeout: std::time::Duration) -> bool {
        self.poll.poll(&mut self.events, Some(timeout)).unwrap();
        !self.events.is_empty()
    }
}

/// An SA client on a runtime of its own, at port 1 of a node of a
/// [`mad_sim::Subnet`].
pub struct Client {
    /// The client.
    pub sa: mad_agents::sa::SaClient,
    _rt: mad_agents::Runtime,
}

/// [`Client`] at `node` port 1 of `s` (500 ms timeout).
pub fn client(s: &mad_sim::Subnet, node: &str) -> Client {
    use mad_agents::sa::{SaClient, SaClientConfig};
    let ep = s.fabric().attach(node, 1).unwrap();
    let rt = mad_agents::Runtime::start(ep, mad_agents::EngineConfig::default()).unwrap();
    let sa = SaClient::new(
        &rt,
        SaClientConfig {
            timeout: std::time::Duration::from_millis(500),
            ..SaClientConfig::default()
        },
    )
    .unwrap();
    Client { sa, _rt: rt }
}
