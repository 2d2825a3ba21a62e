//! The simulated fabric: nodes, ports and links built from a
//! [`Topology`], an SMA and a PMA on every node, directed-route and
//! LID-routed forwarding, and endpoints ([`SimPort`]) that attach at a
//! port and speak [`Transport`](mad_core::transport::Transport).
//!
//! ```
//! use mad_sim::{Fabric, Topology};
//! use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
//! use mad_core::wire::smp::{DrPath, Smp};
//! use mad_core::wire::attr::NodeInfo;
//! use mad_core::wire::{AttributeId, Method, Repr};
//!
//! let topo = Topology::parse_str(
//!     "Switch 4 \"S\"\n[1] \"H\"[1]\n\nHca 1 \"H\"\n[1] \"S\"[1]\n",
//! )?;
//! let fabric = Fabric::new(&topo);
//! let mut port = fabric.attach("H", 1)?;
//! // NodeInfo of the switch behind port 1: directed route 0,1.
//! let smp = "0,1".parse::<DrPath>()?.build_request(Method::GET, AttributeId::NODE_INFO, 0, 7, 0);
//! port.post_send(Qp::Qp0, &smp, &Address::smi(PERMISSIVE_LID))?;
//! let answer = port.poll_recv()?.expect("delivered at once");
//! let ni = NodeInfo::parse(Smp::new_checked(&answer.mad[..])?.data())?;
//! assert_eq!(ni.node_guid, 0x20_0000); // ibsim's first switch GUID
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Model
//! - **Deterministic.** No threads, no sleeps, no wall clock. Each posted
//!   MAD becomes a packet on one queue; [`Fabric::step`] moves the next
//!   packet all the way (links, switches) to where it is consumed or
//!   dropped. With auto-delivery on (the default) `post_send` runs the
//!   queue before it returns, so answers are in the receive queue at once;
//!   turn it off ([`Fabric::set_auto_deliver`]) to interleave steps. Time
//!   is virtual ([`Fabric::advance`]); only M_Key leases use it.
//! - **Links.** A packet crossing a link counts one packet and 72
//!   four-byte words (LRH + BTH + DETH + MAD + ICRC; 82 with a GRH) in
//!   PortXmit* of the port it leaves and PortRcv* of the port it enters,
//!   in both PortCounters and PortCountersExtended, and is offered to the
//!   link filter ([`Fabric::set_link_filter`]). A link carries packets only
//!   when both ends are physically LinkUp; VL15 (SMPs) needs the sending
//!   port in Init or later, other packets need it Active (and the
//!   receiving port Armed or Active).
//! - **Switches** forward directed-route SMPs by the hop-pointer rules of
//!   IBA §14.2.2 as the kernel implements them (`mad_core::wire::smp`), and
//!   LID-routed packets by their LFT (entries above LinearFDBTop or 0xFF
//!   drop; PortRcvSwitchRelayErrors counts them); packets for the
//!   switch's own LID or the permissive LID go to its port 0.
//! - **QPs.** QP0 takes only SMP classes arriving on VL15, QP1 only other
//!   classes off VL15 (VL15 to QP1 counts VL15Dropped). QP1 checks the
//!   packet's P_Key against the port's table (a miss is dropped and
//!   counted in PortInfo P_KeyViolations); switch ports with
//!   PartitionEnforcementInbound/Outbound also enforce (Port*ConstraintErrors).
//! - **Who answers.** SMP requests go to the node's SMA (port 0 of a
//!   switch, the arrival port of a CA), except SMInfo, Trap and Report,
//!   which go to the node's SM: an [`SmHandler`], else an endpoint that
//!   called [`SimPort::set_is_sm`]; SMInfo without an SM is answered from
//!   [`Fabric::set_sm_info`] or with status 0x000C. PerfMgt requests go to
//!   the PMA. Other GSI requests go to the endpoint at the port; with none
//!   attached, Get/Set are answered 0x000C like the kernel does for an
//!   unclaimed request. Responses go to the endpoint at the port.
//! - **M_Key** (IBA §14.2.4, as the qib/hfi1 SMAs do it): a port M_Key of
//!   0 or the right key passes; otherwise Get passes at protect levels 0
//!   and 1 (level 1 answers PortInfo with M_Key 0), and Get at levels 2–3,
//!   Set and TrapRepress are dropped, counted in M_KeyViolations and start
//!   the lease timer (M_KeyLeasePeriod seconds of virtual time; at expiry
//!   the protect bits return to 0; an SMP with the right key stops the
//!   timer). Switches use port 0's M_Key. Each violation also sends the
//!   port's SM (its MasterSMLID, once it has a LID) Trap 256 "Bad M_Key"
//!   (DataDetails: the requester's LID, DrSLID, method, attribute and
//!   modifier, the key it presented, DRNotice and hop count).
//!
//! # Differences from ibsim 0.10 (deliberate)
//! Defaults are ibsim's (see `node.rs` and `tests/ibsim_compare.rs`).
//! Behaviour differs where ibsim is not what hardware does:
//! - ibsim checks no M_Key and no P_Key; this fabric checks both.
//! - A request nobody serves (SMInfo without an SM, an attribute the SMA
//!   lacks such as PortInfoExtended, LedInfo or Mellanox
//!   ExtendedPortInfo 0xFF90, a GSI Get without an agent) is answered with
//!   status 0x000C; ibsim drops it and returns it to its sender as
//!   undeliverable. A Set of NodeInfo / NodeDescription answers 0x000C
//!   (ibsim: 0x0008).
//! - Out-of-range modifiers (LFT/MFT/P_Key/GUIDInfo blocks beyond the
//!   capacity, ports beyond NumPorts in P_KeyTable / SLtoVL / VLArb)
//!   answer 0x001C; ibsim does not check some of them (an MFT block
//!   beyond 31 reads zeros with status 0).
//! - GUIDInfo supports Set (of entries 1 and up; entry 0 is the port
//!   GUID) and every block up to GUIDCap; ibsim 0.10 answers Set with
//!   0x0008.
//! - Set(PortInfo) stores every writable field (ibsim drops NeighborMTU,
//!   MasterSMSL, VLHighLimit, SubnetTimeOut, M_Key and its protect bits and
//!   lease, the violation counters, ...), validates all fields before it
//!   applies any, refuses PortState Init (2) and Active → Armed (ibsim
//!   ignores the first and allows the second), and acts on
//!   PortPhysicalState Disabled / Sleep / Polling (ibsim stores it).
//!   ClientReregister raises `AsyncEvent::ClientReregister` at the port's
//!   endpoint and reads back 0.
//! - LinearFDBCap is ibsim's default (30,720) unless the topology has
//!   more LID-bearing ports than that: then 0xC000 (every unicast LID),
//!   where ibsim would need `-L 49152` to bring such a fabric up
//!   ([`FabricConfig::linear_fdb_cap_for`]).
//! - Set(SwitchInfo) also writes DefaultPort, the default multicast ports
//!   and MulticastFDBTop; a LinearFDBTop at or above LinearFDBCap answers
//!   0x001C.
//! - LID-routed SMPs may cross ports in Init or Armed (VL15 rules); ibsim
//!   requires every port on the path to be Active.
//! - PortCountersExtended counts unicast and multicast packets (ibsim
//!   leaves them 0), and its Set clears PortRcvPkts for bit 3 (ibsim clears
//!   PortXmitPkts). Drops are counted where they happen
//!   (PortXmitDiscards, PortRcvSwitchRelayErrors, PortRcvErrors,
//!   VL15Dropped).
//! - A dropped packet completes its send with success, as a UD send on
//!   hardware does; ibsim hands an undeliverable copy back to the sender.
//! - Traps: a switch whose port changes link state (a cable pulled or
//!   plugged back, [`Fabric::link_down`] / [`Fabric::link_up`], or a port
//!   disabled by a Set) sets SwitchInfo PortStateChange and sends Trap 128
//!   to its SM's LID once (no repeat until repressed); ibsim also sends
//!   144. A TrapRepress goes to the SMA.
//! - Not modelled yet: multicast forwarding, Mellanox ExtendedPortInfo,
//!   DR SMPs with LID-routed parts (refused at post; ibsim refuses them
//!   too).
//!
//! # Faults
//! - **Links** ([`Fabric::set_link_faults`], [`LinkFaults`]): seeded
//!   per-direction drop, duplicate, reorder and delay (virtual time); see
//!   `faults.rs` for the exact rules. Dropped packets count as
//!   [`DropReason::LinkFault`].
//! - **Cables** ([`Fabric::link_down`], [`Fabric::link_up`]): both ends'
//!   PortState / PortPhysicalState, LinkDownedCounter, endpoint events,
//!   Trap 128.
//! - **Endpoints** ([`Fabric::inject`], [`crate::FaultyPort`]):
//!   work-request errors, CQ overflow, QP / device fatal, soft reset and
//!   any async event, through mad-core's `FaultInjector`.
//!
//! # Services
//! Software that lives at the fabric without a thread of its own
//! ([`Fabric::add_service`]; SM-lite in [`crate::Subnet`]) runs whenever
//! packets moved, until it has nothing left to do. Two endpoints may share
//! a port, one per QP ([`Fabric::attach_qp`]), as an SM and an SA do.

mod cc;
mod cca;
mod control;
pub mod endpoint;
mod engine;
mod node;
mod pma;
mod pma_ext;
mod sma;
mod stats;
mod traffic;
mod vendor;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Duration;

use mad_core::wire::attr::{port_cap, PortCounters, PortCountersExt, PortInfo, SmInfo};

use crate::topology::{NodeKind, Topology, TopologyError};
use endpoint::SimPort;

pub use engine::faults::{LinkFaultStats, LinkFaults, SmaFault};
pub(crate) use engine::{check_dr_post, Core, Endpoint, Origin, Packet};
pub use node::{
    CA_GUID_CAP, CA_PARTITION_CAP, DEFAULT_SL2VL, REVISION, SWITCH_PARTITION_CAP,
    SWITCH_PARTITION_ENFORCEMENT_CAP,
};
pub use pma::PMA_RESP_TIME_VALUE;
pub use stats::{DropReason, DropRecord, FabricStats};

/// How a fabric is built and behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricConfig {
    /// SwitchInfo LinearFDBCap of every switch; `None` (the default):
    /// [`IBSIM_LINEAR_FDB_CAP`] when that holds every LID the topology
    /// needs, else [`FULL_LINEAR_FDB_CAP`] (see
    /// [`FabricConfig::linear_fdb_cap_for`]).
    pub linear_fdb_cap: Option<u16>,
    /// SwitchInfo MulticastFDBCap (ibsim: 1024).
    pub multicast_fdb_cap: u16,
    /// Send queue depth of each endpoint QP.
    pub send_queue_depth: usize,
    /// Run the packet queue inside every `post_send` (see the module docs).
    pub auto_deliver: bool,
    /// How many recent drops [`FabricStats::recent_drops`] keeps.
    pub drop_log: usize,
    /// Seed of the link-fault RNGs ([`Fabric::set_fault_seed`]).
    pub fault_seed: u64,
}

impl Default for FabricConfig {
    fn default() -> Self {
        Self {
            linear_fdb_cap: None,
            multicast_fdb_cap: 1024,
            send_queue_depth: 128,
            auto_deliver: true,
            drop_log: 64,
            fault_seed: 0,
        }
    }
}

/// ibsim's default LinearFDBCap (its `-L` option changes it): 30,720.
pub const IBSIM_LINEAR_FDB_CAP: u16 = 30 * 1024;
/// A LinearFDBCap that holds every unicast LID (0xC000 = 49,152, what
/// switches such as Mellanox Quantum report).
pub const FULL_LINEAR_FDB_CAP: u16 = 0xC000;

impl FabricConfig {
    /// The LinearFDBCap the switches of `topo` get: the configured one,
    /// else ibsim's default when the topology has no more LID-bearing
    /// ports (switches, CA and router ports) than it holds, else
    /// [`FULL_LINEAR_FDB_CAP`]. A fabric ibsim brings up with its
    /// defaults so reports what ibsim does; a bigger one (which ibsim
    /// needs `-L 49152` for) still comes up.
    #[must_use]
    pub fn linear_fdb_cap_for(&self, topo: &Topology) -> u16 {
        if let Some(cap) = self.linear_fdb_cap {
            return cap;
        }
        let lids: usize = topo
            .nodes()
            .iter()
            .map(|n| match n.kind {
                NodeKind::Switch => 1,
                _ => n.existing_ports().filter(|p| p.remote.is_some()).count(),
            })
            .sum();
        if lids < usize::from(IBSIM_LINEAR_FDB_CAP) {
            IBSIM_LINEAR_FDB_CAP
        } else {
            FULL_LINEAR_FDB_CAP
        }
    }
}

/// A port of the fabric: node index (topology order) and port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortAddr {
    /// Node index.
    pub node: usize,
    /// Port number.
    pub port: u8,
}

/// A packet about to cross a link, as the link filter sees it.
#[derive(Debug)]
pub struct LinkCrossing<'a> {
    /// The port it leaves.
    pub from: PortAddr,
    /// The port it enters.
    pub to: PortAddr,
    /// The MAD (256 bytes).
    pub mad: &'a [u8],
    /// True on VL15 (SMPs).
    pub vl15: bool,
    /// Virtual time.
    pub now: Duration,
}

/// What the link filter decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkVerdict {
    /// The packet crosses.
    Pass,
    /// The packet is lost on the wire (counted as sent, not received).
    Drop,
}

/// A per-link hook, called for every packet about to cross a link (the
/// place for drop faults). It runs with the fabric locked: it must not
/// call the [`Fabric`].
pub type LinkFilter = Box<dyn FnMut(&LinkCrossing<'_>) -> LinkVerdict + Send>;

/// An SMInfo request, trap or report for the SM of a node.
#[derive(Debug)]
pub struct SmRequest<'a> {
    /// The node.
    pub node: usize,
    /// The port it arrived on.
    pub port: u8,
    /// The whole SMP (256 bytes).
    pub mad: &'a [u8],
}

/// What an [`SmHandler`] does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmReply {
    /// Answer with GetResp, this status and these 64 bytes of data.
    Respond {
        /// MAD status (15 bits for directed route).
        status: u16,
        /// SMP data.
        data: [u8; 64],
    },
    /// Take it without an answer (traps, reports).
    Consume,
}

/// The SM of a node, installed with [`Fabric::set_sm_handler`]. It runs
/// with the fabric locked: it must not call the [`Fabric`].
pub type SmHandler = Box<dyn FnMut(&SmRequest<'_>) -> SmReply + Send>;

/// Names a node: by index, id (as in the topology file) or node GUID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeSel {
    /// Index in topology order.
    Index(usize),
    /// Node id.
    Id(String),
    /// Node GUID.
    Guid(u64),
}

impl From<usize> for NodeSel {
    fn from(i: usize) -> Self {
        Self::Index(i)
    }
}

impl From<&str> for NodeSel {
    fn from(s: &str) -> Self {
        Self::Id(s.to_owned())
    }
}

impl From<String> for NodeSel {
    fn from(s: String) -> Self {
        Self::Id(s)
    }
}

impl std::fmt::Display for NodeSel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Index(i) => write!(f, "node #{i}"),
            Self::Id(s) => write!(f, "node {s:?}"),
            Self::Guid(g) => write!(f, "node GUID {g:#018x}"),
        }
    }
}

/// A node as [`Fabric::node`] describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSummary {
    /// Index.
    pub index: usize,
    /// Node id.
    pub id: String,
    /// NodeDescription text.
    pub description: String,
    /// Kind.
    pub kind: NodeKind,
    /// Physical ports.
    pub num_ports: u8,
    /// Node GUID.
    pub node_guid: u64,
    /// System image GUID.
    pub system_image_guid: u64,
}

/// Why an attach failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// No node by that name, index or GUID.
    #[error("{0}: no such node")]
    NoSuchNode(NodeSel),
    /// The node has no such end port (a CA's ports are 1..=n; a switch's
    /// only end port is 0).
    #[error("{node:?} has no end port {port}")]
    NoSuchPort {
        /// The node id.
        node: String,
        /// The port asked for.
        port: u8,
    },
    /// An endpoint is already attached there.
    #[error("{node:?} port {port} already has an endpoint")]
    PortInUse {
        /// The node id.
        node: String,
        /// The port.
        port: u8,
    },
    /// No cable at that port (an unlinked port, or port 0 of a switch).
    #[error("{node:?} port {port} has no cable")]
    NoCable {
        /// The node id.
        node: String,
        /// The port.
        port: u8,
    },
    /// No endpoint is attached at that port.
    #[error("{node:?} port {port} has no endpoint attached")]
    NoEndpoint {
        /// The node id.
        node: String,
        /// The port.
        port: u8,
    },
    /// The endpoint at that port cannot take this fault: only an endpoint
    /// wrapped in a [`crate::FaultyPort`] can fail its work requests, CQ
    /// or device; a plain [`SimPort`] takes only notification events.
    #[error("the endpoint at {node:?} port {port} is not a FaultyPort; it cannot take {fault}")]
    NotFaultCapable {
        /// The node id.
        node: String,
        /// The port.
        port: u8,
        /// The fault.
        fault: String,
    },
}

/// An in-fabric service ([`Fabric::add_service`]): called with the
/// fabric's virtual time whenever the fabric may have something for it;
/// returns true when it did something (it is then called again).
pub type Service = Box<dyn FnMut(Duration) -> bool + Send>;

/// Names a service added with [`Fabric::add_service`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServiceId(u64);

/// The services of a fabric and who pumps them.
#[derive(Default)]
struct Services {
    list: Mutex<Vec<(u64, Service)>>,
    count: AtomicUsize,
    /// Something may have arrived for a service since it was last pumped.
    dirty: AtomicBool,
    next: AtomicU64,
}

/// Most rounds one pump makes while services keep reporting work (a
/// guard against a service that never settles).
const MAX_PUMP_ROUNDS: usize = 10_000_000;

/// The simulated fabric. Cloning gives another handle to the same fabric;
/// it is `Send + Sync`, each call locking it briefly.
#[derive(Clone)]
pub struct Fabric {
    core: Arc<Mutex<Core>>,
    services: Arc<Services>,
}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.lock();
        f.debug_struct("Fabric")
            .field("nodes", &c.nodes.len())
            .field("pending", &c.queue.len())
            .finish_non_exhaustive()
    }
}

impl Fabric {
    /// A fabric for `topo` with the default configuration.
    #[must_use]
    pub fn new(topo: &Topology) -> Self {
        Self::with_config(topo, FabricConfig::default())
    }

    /// A fabric for `topo`.
    #[must_use]
    pub fn with_config(topo: &Topology, cfg: FabricConfig) -> Self {
        let fdb_cap = cfg.linear_fdb_cap_for(topo);
        let nodes: Vec<_> = topo
            .nodes()
            .iter()
            .map(|n| node::build_node(n, &cfg, fdb_cap))
            .collect();
        let by_id = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i as u32))
            .collect();
        let by_guid = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.info.node_guid, i as u32))
            .collect();
        let stats = FabricStats::new(cfg.drop_log);
        let faults = engine::faults::FaultState {
            seed: cfg.fault_seed,
            ..engine::faults::FaultState::default()
        };
        Self {
            services: Arc::new(Services::default()),
            core: Arc::new(Mutex::new(Core {
                nodes,
                by_id,
                by_guid,
                cfg,
                now: Duration::ZERO,
                queue: VecDeque::new(),
                endpoints: Vec::new(),
                ep_at: mad_core::hash::FastMap::default(),
                link_filter: None,
                sm_handlers: mad_core::hash::FastMap::default(),
                stats,
                resume: VecDeque::new(),
                faults,
                spare: Vec::new(),
                lft_blocks: mad_sm::lft::BlockInterner::default(),
            })),
        }
    }

    /// The fabric of the built-in default topology
    /// ([`crate::default_topology`]), unconfigured (no LIDs; run SM-lite
    /// on it to bring it up).
    #[must_use]
    pub fn builtin() -> Self {
        Self::new(&crate::default_topology())
    }

    /// Parses the topology file at `path` and builds its fabric.
    ///
    /// # Errors
    /// The file's [`TopologyError`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TopologyError> {
        Ok(Self::new(&Topology::load(path)?))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Attaches an endpoint at `port` of a node: 1..=n on a CA or router,
    /// 0 on a switch. It owns both QPs of the port.
    ///
    /// # Errors
    /// No such node or end port, or the port already has an endpoint.
    pub fn attach(&self, node: impl Into<NodeSel>, port: u8) -> Result<SimPort, SimError> {
        self.attach_qps(node.into(), port, [true, true])
    }

    /// Attaches an endpoint that owns only `qp` of the port, so that two
    /// endpoints can share one port the way an SM (QP0) and an SA or
    /// other GSI agents (QP1) in two processes share a real port. Posting
    /// on the other QP fails; MADs for it go to the other endpoint.
    ///
    /// # Errors
    /// As [`Fabric::attach`]; `PortInUse` if that QP is taken.
    pub fn attach_qp(
        &self,
        node: impl Into<NodeSel>,
        port: u8,
        qp: mad_core::transport::Qp,
    ) -> Result<SimPort, SimError> {
        let mut owns = [false; 2];
        owns[qp.index()] = true;
        self.attach_qps(node.into(), port, owns)
    }

    fn attach_qps(&self, sel: NodeSel, port: u8, owns: [bool; 2]) -> Result<SimPort, SimError> {
        let mut c = self.lock();
        let Some(n) = resolve(&c, &sel) else {
            return Err(SimError::NoSuchNode(sel));
        };
        let nd = &c.nodes[n as usize];
        let ok = if nd.is_switch() {
            port == 0
        } else {
            port >= 1 && port <= nd.num_ports()
        };
        if !ok {
            return Err(SimError::NoSuchPort {
                node: nd.id.clone(),
                port,
            });
        }
        let taken = c
            .ep_at
            .get(&(n, port))
            .is_some_and(|e| (0..2).any(|q| owns[q] && e[q].is_some()));
        if taken {
            return Err(SimError::PortInUse {
                node: nd.id.clone(),
                port,
            });
        }
        let depth = c.cfg.send_queue_depth.max(1);
        let idx = c.endpoints.len();
        let mut ep = Endpoint::new();
        ep.owns = owns;
        let pending = std::sync::Arc::clone(&ep.pending);
        c.endpoints.push(Some(ep));
        let slot = c.ep_at.entry((n, port)).or_insert([None; 2]);
        for q in 0..2 {
            if owns[q] {
                slot[q] = Some(idx);
            }
        }
        let attrs = endpoint::port_attrs(&c, n, port);
        drop(c);
        Ok(SimPort::new(
            self.clone(),
            idx,
            n,
            port,
            attrs,
            depth,
            pending,
        ))
    }

    /// Attaches where ibsim attaches a client that names no node: the
    /// first node's first end port (port 0 of a switch, 1 of a CA).
    ///
    /// # Errors
    /// As [`Fabric::attach`] (also for a fabric without nodes).
    pub fn attach_default(&self) -> Result<SimPort, SimError> {
        let first = self.lock().nodes.first().map(node::Node::first_port);
        match first {
            Some(p) => self.attach(0usize, p),
            None => Err(SimError::NoSuchNode(NodeSel::Index(0))),
        }
    }

    /// Number of nodes.
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.lock().nodes.len()
    }

    /// The index of a node.
    #[must_use]
    pub fn find(&self, node: impl Into<NodeSel>) -> Option<usize> {
        resolve(&self.lock(), &node.into()).map(|n| n as usize)
    }

    /// Node `index`.
    #[must_use]
    pub fn node(&self, index: usize) -> Option<NodeSummary> {
        let c = self.lock();
        c.nodes.get(index).map(|n| summary(index, n))
    }

    /// Every node.
    #[must_use]
    pub fn nodes(&self) -> Vec<NodeSummary> {
        let c = self.lock();
        c.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| summary(i, n))
            .collect()
    }

    /// A node's NodeInfo as its SMA holds it (PortGUID the node GUID,
    /// LocalPortNum 0: fill them in per port).
    #[must_use]
    pub fn node_info(&self, index: usize) -> Option<mad_core::wire::attr::NodeInfo> {
        let c = self.lock();
        let mut ni = c.nodes.get(index)?.info.clone();
        ni.port_guid = ni.node_guid;
        ni.local_port_num = 0;
        Some(ni)
    }

    /// A port's P_Key table (entries up to the last non-zero one).
    #[must_use]
    pub fn pkeys(&self, node: usize, port: u8) -> Option<Vec<u16>> {
        self.read_port(node, port, |p| p.pkeys.clone())
    }

    /// `f` of port `port` of node `node` (under the lock), if there is
    /// such a port.
    fn read_port<R>(&self, node: usize, port: u8, f: impl FnOnce(&node::Port) -> R) -> Option<R> {
        Some(f(self.lock().nodes.get(node)?.port(port)?))
    }

    /// [`Self::read_port`] with the port's packets all counted
    /// ([`node::Port::settle`]).
    fn read_counters<R>(
        &self,
        node: usize,
        port: u8,
        f: impl FnOnce(&node::Port) -> R,
    ) -> Option<R> {
        let mut c = self.lock();
        let p = c.nodes.get_mut(node)?.port_mut(port)?;
        p.settle();
        Some(f(p))
    }

    /// A port's PortInfo as it stands (LocalPortNum = the port itself).
    #[must_use]
    pub fn port_info(&self, node: usize, port: u8) -> Option<PortInfo> {
        self.read_port(node, port, |p| PortInfo {
            local_port_num: port,
            ..p.info.clone()
        })
    }

    /// The port at the other end of a port's cable.
    #[must_use]
    pub fn remote(&self, node: usize, port: u8) -> Option<PortAddr> {
        let (n, p) = self.read_port(node, port, |p| p.remote)??;
        Some(PortAddr {
            node: n as usize,
            port: p,
        })
    }

    /// A port's PortCounters (32-bit view).
    #[must_use]
    pub fn counters(&self, node: usize, port: u8) -> Option<PortCounters> {
        self.read_counters(node, port, |p| PortCounters {
            port_select: port,
            ..p.counters.clone()
        })
    }

    /// A port's PortCountersExtended.
    #[must_use]
    pub fn counters_ext(&self, node: usize, port: u8) -> Option<PortCountersExt> {
        self.read_counters(node, port, |p| PortCountersExt {
            port_select: port,
            ..p.counters_ext.clone()
        })
    }

    /// What the fabric did so far.
    #[must_use]
    pub fn stats(&self) -> FabricStats {
        self.lock().stats.clone()
    }

    /// Virtual time.
    #[must_use]
    pub fn now(&self) -> Duration {
        self.lock().now
    }
}

fn resolve(c: &Core, sel: &NodeSel) -> Option<u32> {
    match sel {
        NodeSel::Index(i) => (*i < c.nodes.len()).then_some(*i as u32),
        NodeSel::Id(s) => c.by_id.get(s).copied(),
        NodeSel::Guid(g) => c.by_guid.get(g).copied(),
    }
}

fn summary(index: usize, n: &node::Node) -> NodeSummary {
    let end = n.desc.iter().position(|b| *b == 0).unwrap_or(64);
    NodeSummary {
        index,
        id: n.id.clone(),
        description: String::from_utf8_lossy(&n.desc[..end]).into_owned(),
        kind: n.kind,
        num_ports: n.num_ports(),
        node_guid: n.info.node_guid,
        system_image_guid: n.info.system_image_guid,
    }
}
