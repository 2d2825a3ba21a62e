//! # mad-sm
//!
//! SM-lite: madstack's subnet manager, a sans-IO state machine, and the
//! SA's records from its view of the subnet ([`sa`]). The built-in fabric
//! (`mad-sim`) runs it as its SM; `mad sm` drives it on a transport
//! (ibsim, a umad port, the built-in fabric without its own SM).
//!
//! ```
//! use std::time::Instant;
//! use mad_core::transport::PortAttrs;
//! use mad_core::wire::{AttributeId, Mad, Method};
//! use mad_sm::{SmConfig, SubnetManager};
//!
//! let local = PortAttrs { port_num: 1, port_guid: 0x10, node_guid: 0x10, ..PortAttrs::default() };
//! let mut sm = SubnetManager::new(SmConfig::default(), &local);
//! let now = Instant::now();
//! sm.start(now);
//! // The first SMP of a sweep: NodeInfo of the SM's own node, by directed route.
//! let (mad, _to) = sm.poll_transmit(now).expect("a sweep starts with an SMP");
//! let hdr = Mad::new_checked(&mad[..]).expect("a whole MAD");
//! assert_eq!(hdr.method(), Method::GET);
//! assert_eq!(hdr.attr_id(), AttributeId::NODE_INFO);
//! assert!(sm.poll_timeout().is_some());
//! ```
//!
//! SM-lite is a small subnet manager as a sans-IO state machine.
//!
//! [`SubnetManager`] does no I/O and has no clock of its own (the style of
//! quinn and neqo): the caller feeds it received MADs and the current
//! time, and takes from it the MADs to send and the next deadline. It
//! therefore runs on any transport: the built-in fabric, ibsim, or a real
//! port. [`driver::SmDriver`] pumps it over any
//! [`Transport`](mad_core::transport::Transport).
//!
//! ```text
//!   sm.start(now)
//!   loop {
//!       while let Some((mad, to)) = sm.poll_transmit(now) { post mad on QP0 to `to` }
//!       for each MAD received on QP0: sm.handle_recv(now, &mad, &src)
//!       if sm.poll_timeout() <= now: sm.handle_timeout(now)
//!       while let Some(ev) = sm.poll_event() { ... SubnetUp ... }
//!       wait for a receive or sm.poll_timeout()
//!   }
//! ```
//!
//! # What a sweep does
//! 1. **Discover**: a breadth-first directed-route walk from the SM's own
//!    port: NodeInfo of every node reached, NodeDescription, SwitchInfo of
//!    switches, PortInfo of every switch port and of each CA port entered.
//!    Links are found by sending NodeInfo out of every switch port whose
//!    physical link is up and whose far end is not yet known.
//! 2. **Route**: LIDs (a switch gets one, on port 0; each CA port an
//!    aligned range of 2^LMC, [`SmConfig::lmc`]; from 1 up, stable by
//!    port GUID across sweeps) and linear forwarding tables routing every
//!    LID of every range ([`routing`]; the LIDs of one port leave each
//!    switch toward different neighbours where it has them). A big fabric (over 1 M
//!    table entries) is routed on a thread of its own while the Sets of
//!    step 3 go out; each switch's LFT blocks wait for its table only.
//!    The tables and the SMPs are the same either way: the thread only
//!    computes, and SM-lite stays free of I/O and clocks.
//! 3. **Configure**: PortInfo Set where something differs (LID, MasterSMLID,
//!    SubnetTimeOut, GID prefix, M_Key 0, LMC: the configured one on CA
//!    ports, 0 on switch port 0) or a port in Initialize is to be Armed; SwitchInfo Set
//!    (LinearFDBTop = highest LID, PortStateChange cleared); every
//!    LinearForwardingTable block that differs from what SM-lite last
//!    programmed into that switch. PortInfo and LFT Sets wait in a
//!    compact to-do list and are made as the SMP window frees up. With
//!    QoS on ([`SmConfig::qos`]), the SLtoVLMappingTable and
//!    VLArbitrationTable Sets OpenSM's `osm_qos.c` would send ([`qos`]),
//!    less those a port holds already.
//! 4. **Activate**: once every link end is Armed, PortInfo Set Active on
//!    each of them (a port must be Armed before it may go Active, and its
//!    neighbour must be Armed or Active). Ports whose physical link is not
//!    LinkUp are left alone.
//! 5. [`SmEvent::SweepDone`]; the SM is then MASTER, and raises
//!    [`SmEvent::SubnetUp`] when every SMP of the sweep succeeded.
//!
//! # A hostile fabric
//! A node that does not answer NodeInfo (a switch whose management
//! processor hangs), answers with a bad status or an unparsable
//! attribute is named in [`SmError::NodeUnreachable`] (the node and port
//! it hangs on); the link to it is not armed, and what lies only behind
//! it is left as it is. The rest is configured and served, and the sweep
//! is repeated after [`SmConfig::error_resweep_delay`] until it succeeds.
//! Nothing carries over from one sweep to the next but the LIDs given
//! and what was written into the switches, so a fabric that keeps
//! failing the same way keeps [`SubnetManager::backlog`] the same.
//!
//! Every SMP of a sweep is directed-route with permissive DrSLID/DrDLID,
//! so nothing depends on LIDs being configured. At most
//! [`SmConfig::max_in_flight`] SMPs are outstanding; each is retried
//! [`SmConfig::retries`] times after [`SmConfig::timeout`]. Answers are
//! matched by the low 48 bits of the TID (ibsim and the kernel may
//! rewrite the top 16) and the attribute ID.
//!
//! A re-sweep (on [`SubnetManager::resweep`] or a Trap 128 "link state
//! changed") runs the same steps, but only sends the Sets whose values
//! differ from what the ports and switches hold now.
//!
//! A Trap 128 of a switch while Master with the subnet up is first
//! taken without a heavy sweep (`reroute.rs`): that switch is read
//! again, and if links to other switches went down the fabric is routed
//! around them from the model and only the changed LFT blocks are sent;
//! anything else falls back to the heavy sweep.
//!
//! A re-sweep also follows Traps 129–131 (link integrity, buffer
//! overrun, flow-control watchdog) and 144 (a port's local changes, as
//! an SM coming up). With [`SmConfig::sweep_interval`] set, a Master
//! makes a light sweep that often: SwitchInfo of every switch, nothing
//! set; a switch reporting PortStateChange, not answering, or holding
//! another LinearFDBTop starts a heavy sweep ([`SmEvent::LightSweepDone`]).
//! The first heavy sweep as master sets ClientReregister on the CA
//! ports that support it, so SA clients subscribe again.
//! [`SubnetManager::stats`] counts sweeps, SMPs and LFT blocks sent.
//!
//! # Other SMs (IBTA vol. 1, 14.4)
//! SM-lite is NotActive until [`SubnetManager::start`], then Discovering.
//! A sweep that finds a port with IsSM in its CapabilityMask (a CA port,
//! or switch port 0) asks it for SMInfo. The better SM is the one of
//! higher priority, then lower port GUID. After discovery a Discovering
//! SM-lite that found a Master (of any priority) or a better SM that is
//! Discovering or Standby stands by without configuring anything, sends
//! Trap 144 to the master's LID, and polls the master's SMInfo every
//! [`SmConfig::sminfo_polling_timeout`]; after
//! [`SmConfig::polling_retry_number`] polls in a row go unanswered it
//! goes Discovering and sweeps, keeping the LIDs the ports hold
//! ([`SmConfig::honor_existing_lids`]) and writing every switch table
//! anew. A Master whose discovery finds a better SM standing by (or
//! still discovering) configures nothing more: it sends it SMInfo Set
//! HANDOVER and stands by once it is answered. Meanwhile it holds the
//! SMInfo Gets other SMs send it (up to 100 ms) and answers them after,
//! with its new state: a standby OpenSM sends Trap 144 to a master of
//! lower priority that answers its poll, and on ibsim (which drops
//! TrapRepress) that trap would stay outstanding in OpenSM for ever. A
//! Master that has found no other SM sweeps when it is asked for SMInfo
//! by directed route (an SM starting up), and holds the SMInfo Gets that
//! come while it discovers the same way; its own SMInfo Gets still
//! unanswered then go again at once (OpenSM ignores SMInfo Gets until it
//! has found its own port). A poll is resent once within its polling
//! period. A Standby that receives
//! HANDOVER answers, sends ACKNOWLEDGE back and becomes Master. SMInfo
//! Set controls are taken as OpenSM 3.3 takes them (`negotiate.rs`):
//! DISABLE (Standby → NotActive), STANDBY (NotActive → Standby), DISCOVER
//! (Standby → Discovering), HANDOVER; others are answered with status
//! "invalid field". [`SmEvent::StateChanged`] reports every change of
//! state.
//!
//! SM-lite also answers, as a responder, SMInfo Get/Set addressed to its
//! port (GUID, SM_Key, ActCount, priority, state), represses every trap
//! it receives with a TrapRepress, and answers any other Get/Set that
//! reaches it with status "method/attribute not supported". Such answers
//! come out of [`SubnetManager::poll_transmit`] before any sweep SMP.
//!
//! **Multicast**: the SA hands SM-lite the groups and their members
//! ([`SubnetManager::set_mcast_groups`]); SM-lite builds a spanning tree
//! per MLID and writes the switches' MulticastForwardingTables and
//! MulticastFDBTop ([`mcast`]), in a sweep's Configure phase or, when the
//! groups change between sweeps, in a Multicast phase of its own.
//!
//! **Partitions** ([`SmConfig::partitions`], OpenSM's partitions.conf,
//! [`partitions`]): in the Configure phase every end port gets its
//! P_KeyTable Set, and every switch port facing one gets the same keys
//! and PortInfo partition enforcement (inbound and outbound; off
//! between switches); a block is sent again only when it differs from
//! what the port confirmed. Without them P_Key tables are left alone.
//!
//! **M_Key** ([`SmConfig::m_key`], [`SmConfig::m_key_protect_bits`],
//! [`SmConfig::m_key_lease_period`]): programmed into every CA port and
//! switch port 0 with the rest of PortInfo and presented in every SMP
//! (and in the TrapRepresses, which carry the trap's key), so a fabric
//! that refuses SMPs without the key stays managed; with protection on,
//! light sweeps also read those ports' PortInfo, which stops lease timers
//! and finds a port whose lease ran out anyway (a heavy sweep protects it
//! again).
//!
//! Not done (SM-lite is not OpenSM): `lmc_esp0` (LMC on switch port
//! 0), OpenSM's QoS policy file and optimized SL2VL programming;
//! SM_Key checks on SMInfo Sets
//! (OpenSM 3.3 makes none either); a Master that finds a better Master
//! stands by at once, where OpenSM stays Master and waits for its
//! HANDOVER; a light sweep reads switches only (a CA-to-CA link with no
//! switch is seen by traps and heavy sweeps only).

mod config;
mod discover;
pub mod driver;
mod events;
pub mod lft;
mod light;
pub mod mcast;
mod negotiate;
pub mod partitions;
mod program;
pub mod qos;
mod recv;
mod reroute;
pub mod routing;
pub mod sa;
pub mod subnet;

use std::collections::VecDeque;
use std::time::Instant;

use mad_core::hash::{FastMap, FastSet};
use mad_core::transport::{Address, PortAttrs, PERMISSIVE_LID};
use mad_core::wire::attr::{
    port_cap, LinearFwdTable, NodeDescription, NodeInfo, NodeType, Notice, PKeyTable,
    PhysPortState, PortInfo, PortState, SmInfo, SmState, SwitchInfo,
};
use mad_core::wire::smp::{DrPath, Smp, DR_DIRECTION_BIT, DR_MAX_HOPS};
use mad_core::wire::{
    AttributeId, MadStatus, Method, MgmtClass, Repr, MAD_LEN, SMP_DATA_LEN, SMP_DATA_OFFSET,
};

pub use config::{parse_lmc, SmConfig, MAX_LMC};
pub use driver::SmDriver;
pub use events::{SmError, SmEvent, SmStats, EVENT_QUEUE_CAP};
pub use mcast::{mcast_tables, McGroup};
pub use routing::{LidBook, MAX_UNICAST_LID, NO_ROUTE};
pub use subnet::{NodeIdx, PortRef, SmNode, SmPort, Subnet};

/// TID bits SM-lite owns: ibsim (and the kernel, for umad) may rewrite
/// bits 48–63 of a request's TID.
pub const TID_MASK: u64 = (1 << 48) - 1;
/// Marker SM-lite puts in TID bits 32–47 ("SM").
const TID_MARK: u64 = 0x534D << 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Discover,
    Configure,
    Activate,
    /// Writing MFTs after a change of multicast membership (no sweep).
    Multicast,
    /// A light sweep: SwitchInfo of every switch, nothing set.
    Light,
    /// After a Trap 128 of a configured switch: its ports read again
    /// (`reroute.rs`).
    Reroute,
}

#[derive(Debug, Clone)]
enum Kind {
    NodeInfo {
        from: Option<PortRef>,
    },
    NodeDesc {
        node: NodeIdx,
    },
    SwitchInfo {
        node: NodeIdx,
    },
    PortInfo {
        node: NodeIdx,
        port: u8,
        guid: u64,
    },
    SetPortInfo {
        node: NodeIdx,
        port: u8,
        want: Box<PortInfo>,
    },
    SetSwitchInfo {
        node: NodeIdx,
        want: Box<SwitchInfo>,
    },
    /// Block `block` of the table the sweep computed for `node` (read
    /// from that table when the SMP is made and when it is answered: it
    /// does not change during the sweep, and a request stays small).
    SetLft {
        node: NodeIdx,
        block: u32,
    },
    SetMft {
        guid: u64,
        block: u16,
        pos: u8,
        want: Box<[u16; 32]>,
    },
    SetMcastTop {
        guid: u64,
        top: u16,
    },
    /// P_KeyTable block `block` of port `port` of the node with GUID
    /// `guid`, set to `want`.
    SetPKeys {
        guid: u64,
        port: u8,
        block: u16,
        want: Box<[u16; 32]>,
    },
    /// SLtoVLMappingTable or VLArbitrationTable Set of port `port` of
    /// the node with GUID `guid` (data hashed to `hash`).
    SetQos {
        guid: u64,
        port: u8,
        hash: u64,
    },
    /// SMInfo of another SM found during discovery (port GUID `guid`).
    GetSmInfo {
        guid: u64,
    },
    /// SMInfo of the SM polled while standing by.
    PollSmInfo {
        guid: u64,
    },
    /// SMInfo Set with control `control` (HANDOVER, ACKNOWLEDGE) to
    /// the SM with port GUID `guid`.
    SetSmInfo {
        guid: u64,
        control: u32,
    },
    /// SwitchInfo of a switch in a light sweep.
    LightSwitchInfo {
        node: NodeIdx,
    },
    /// PortInfo of a LID-bearing port in a light sweep (M_Key protection
    /// on: did its protection lapse?).
    LightPortInfo {
        guid: u64,
    },
    /// PortInfo of a port of a switch that sent Trap 128, read again.
    ReroutePortInfo {
        node: NodeIdx,
        port: u8,
    },
    /// SwitchInfo of a switch that sent Trap 128, read again.
    RerouteSwitchInfo {
        node: NodeIdx,
    },
}

#[derive(Debug, Clone)]
struct Request {
    method: Method,
    attr: AttributeId,
    attr_mod: u32,
    path: DrPath,
    /// A Set's data (boxed: discovery queues many Gets at once); `None`
    /// for a LinearForwardingTable Set, whose block is in its kind.
    data: Option<Box<[u8; SMP_DATA_LEN]>>,
    kind: Kind,
}

impl Request {
    /// A Set of `attr` carrying `data` (cut or zero-padded to the SMP
    /// data size).
    fn set(attr: AttributeId, attr_mod: u32, path: DrPath, data: &[u8], kind: Kind) -> Self {
        let mut d = [0u8; SMP_DATA_LEN];
        let n = data.len().min(SMP_DATA_LEN);
        d[..n].copy_from_slice(&data[..n]);
        Self {
            method: Method::SET,
            attr,
            attr_mod,
            path,
            data: Some(Box::new(d)),
            kind,
        }
    }
}

/// The directed-route SMP of `req` with `tid` (a resend is made again
/// the same way rather than kept: a sweep has thousands in flight),
/// written into `mad`.
fn build(req: &Request, tid: u64, m_key: u64, subnet: &Subnet, mad: &mut [u8; MAD_LEN]) {
    *mad = req
        .path
        .build_request(req.method, req.attr, req.attr_mod, tid, m_key);
    let data: Option<&[u8]> = match (&req.data, &req.kind) {
        (Some(d), _) => Some(&d[..]),
        (None, &Kind::SetLft { node, block }) => Some(&lft_block(subnet, node, block)[..]),
        _ => None,
    };
    if let Some(d) = data {
        let n = d.len().min(SMP_DATA_LEN);
        mad[SMP_DATA_OFFSET..SMP_DATA_OFFSET + n].copy_from_slice(&d[..n]);
    }
}

/// A block of no routes (past the end of a table).
const NO_ROUTES: crate::lft::Block = [NO_ROUTE; LinearFwdTable::ENTRIES];

/// Block `block` of the table `subnet` holds for `node` (no routes past
/// its end).
fn lft_block(subnet: &Subnet, node: NodeIdx, block: u32) -> &crate::lft::Block {
    subnet
        .nodes()
        .get(node)
        .and_then(|n| n.lft.block(block as usize))
        .map_or(&NO_ROUTES, |b| &**b)
}

struct Outstanding {
    req: Request,
    tries: u32,
    /// None while queued for a resend.
    deadline: Option<Instant>,
}

#[derive(Default)]
struct Sweep {
    subnet: Subnet,
    sets: usize,
    smps: usize,
    retries: usize,
    errors: usize,
    to_activate: Vec<PortRef>,
    /// More ports than unicast LIDs, or a switch whose LinearFDBCap is
    /// below the highest LID: the sweep is not repeated by itself.
    unroutable: bool,
    /// Sets still to make, made one at a time as the window frees up
    /// ([`SubnetManager::next_set`]).
    todo: Vec<Todo>,
    /// The next (position in `todo`, LFT block) to look at.
    todo_at: (usize, usize),
    /// The switches' tables still being computed on a routing thread
    /// (a big fabric), taken as their LFT Sets come up.
    routes: Option<routing::RouteStream>,
    /// Other SMs found (ports with IsSM) and what they answered.
    others: Vec<negotiate::RemoteSm>,
    /// Set ClientReregister on CA ports in this sweep (the first sweep
    /// as master).
    rereg: bool,
    /// LinearForwardingTable blocks sent.
    lft_blocks: usize,
    /// PortInfo Sets sent.
    port_sets: usize,
    /// Light sweep: a switch reported a change.
    changed: bool,
    /// Reroute: the switches whose ports are read again, and what they
    /// answered; a read that failed or found what only a heavy sweep
    /// handles.
    reroute: Vec<(NodeIdx, DrPath)>,
    reroute_queue: VecDeque<NodeIdx>,
    reread: Vec<(NodeIdx, u8, PortInfo)>,
    /// Switches whose reads failed (each is read once more), and those
    /// read a second time.
    reroute_failed: Vec<NodeIdx>,
    reroute_retried: Vec<NodeIdx>,
    /// The QoS Sets of the node being programmed, last first.
    qos_queue: Vec<Request>,
    /// (port GUID, M_Key, M_KeyProtectBits) the PortInfo Sets' answers
    /// showed.
    mkey_got: Vec<(u64, u64, u8)>,
}

/// A Set of the sweep, kept small until it is sent: a big fabric has
/// hundreds of thousands of ports and millions of LFT blocks to set.
#[derive(Debug, Clone, Copy)]
enum Todo {
    /// PortInfo of a port, with this PortState.
    Port {
        node: NodeIdx,
        port: u8,
        state: PortState,
    },
    /// LinearForwardingTable blocks 0..blocks of a switch (those it holds
    /// already are skipped).
    Lft { node: NodeIdx, blocks: usize },
    /// The QoS tables of a node ([`qos::node_sets`]; those it holds
    /// already are skipped).
    Qos { node: NodeIdx },
}

/// What SM-lite last wrote into a switch.
#[derive(Debug, Clone, Default)]
struct Programmed {
    top: u16,
    /// The table last written (shared with the sweep's subnet that
    /// computed it).
    lft: crate::lft::Lft,
    /// Blocks whose Set was sent but not (yet) confirmed by its answer:
    /// the switch may hold something else there.
    unconfirmed: BlockSet,
}

/// A set of LinearForwardingTable block numbers, one bit each (a switch
/// has at most 768 blocks).
#[derive(Debug, Clone, Default)]
struct BlockSet(bitvec::vec::BitVec<u64>);

impl BlockSet {
    fn contains(&self, block: u32) -> bool {
        self.0.get(block as usize).is_some_and(|b| *b)
    }

    fn insert(&mut self, block: u32) {
        let i = block as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, false);
        }
        self.0.set(i, true);
    }

    fn remove(&mut self, block: u32) {
        if let Some(mut b) = self.0.get_mut(block as usize) {
            *b = false;
        }
    }
}

/// SM-lite (see the module docs).
pub struct SubnetManager {
    cfg: SmConfig,
    port_guid: u64,
    sm_state: SmState,
    act_count: u32,
    started: bool,
    phase: Phase,
    sweep: Sweep,
    subnet: Subnet,
    book: LidBook,
    programmed: FastMap<u64, Programmed>,
    /// P_Key tables SM-lite wrote and had confirmed, by (node GUID,
    /// port number).
    pkeys_written: FastMap<(u64, u8), Vec<u16>>,
    /// QoS tables confirmed written: (node GUID, port, attribute,
    /// AttributeModifier) → hash of the data.
    qos_done: FastMap<(u64, u8, u16, u32), u64>,
    /// The M_Key and protect bits each LID-bearing port held at the end
    /// of the last heavy sweep (by port GUID): what a light sweep expects.
    mkey_held: FastMap<u64, (u64, u8)>,
    mcast: mcast::McState,
    sm_lid: u16,
    ready: VecDeque<Request>,
    outstanding: FastMap<u64, Outstanding>,
    resend: VecDeque<u64>,
    responses: VecDeque<(Vec<u8>, Address)>,
    next_tid: u32,
    events: events::EventQueue,
    resweep_pending: bool,
    resweep_at: Option<Instant>,
    subnet_up: bool,
    /// Fabrics with at least this many table entries are routed on a
    /// thread while the switches routed first are programmed
    /// ([`routing::BACKGROUND_ENTRIES`]; tests lower it).
    background_entries: usize,
    /// SMInfo negotiation with other SMs: polling, handover.
    neg: negotiate::Negotiation,
    /// When the next light sweep is due (Master with a sweep interval).
    light_at: Option<Instant>,
    stats: SmStats,
}

impl std::fmt::Debug for SubnetManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubnetManager")
            .field("port_guid", &format_args!("{:#018x}", self.port_guid))
            .field("sm_state", &self.sm_state)
            .field("phase", &self.phase)
            .field("sm_lid", &self.sm_lid)
            .field("outstanding", &self.outstanding.len())
            .field("ready", &self.ready.len())
            .finish_non_exhaustive()
    }
}

impl SubnetManager {
    /// A subnet manager for the port described by `local` (its port GUID
    /// is what SMInfo reports until the first sweep reads it from
    /// NodeInfo). Nothing is sent before [`SubnetManager::start`].
    #[must_use]
    pub fn new(cfg: SmConfig, local: &PortAttrs) -> Self {
        let port_guid = if local.port_guid != 0 {
            local.port_guid
        } else {
            local.node_guid
        };
        Self {
            cfg,
            port_guid,
            sm_state: SmState::NOT_ACTIVE,
            act_count: 0,
            started: false,
            phase: Phase::Idle,
            sweep: Sweep::default(),
            subnet: Subnet::default(),
            book: LidBook::default(),
            programmed: FastMap::default(),
            pkeys_written: FastMap::default(),
            qos_done: FastMap::default(),
            mkey_held: FastMap::default(),
            mcast: mcast::McState::default(),
            sm_lid: 0,
            ready: VecDeque::new(),
            outstanding: FastMap::default(),
            resend: VecDeque::new(),
            responses: VecDeque::new(),
            next_tid: 0,
            events: events::EventQueue::default(),
            resweep_pending: false,
            resweep_at: None,
            subnet_up: false,
            background_entries: routing::BACKGROUND_ENTRIES,
            neg: negotiate::Negotiation::new(),
            light_at: None,
            stats: SmStats::default(),
        }
        .with_guid2lid()
    }

    /// Records [`SmConfig::guid2lid`] in the LID book (at start, and
    /// after the book is emptied on coming out of standby).
    fn with_guid2lid(mut self) -> Self {
        self.reserve_guid2lid();
        self
    }

    fn reserve_guid2lid(&mut self) {
        for &(guid, lid) in &self.cfg.guid2lid {
            self.book.reserve(guid, lid);
        }
    }

    /// Routes fabrics of at least `entries` table entries (switches ×
    /// LIDs) on a thread of their own while the switches routed first are
    /// programmed (default [`routing::BACKGROUND_ENTRIES`]; 0 routes every
    /// fabric so, `usize::MAX` none). The tables and SMPs are the same
    /// either way.
    pub fn set_background_entries(&mut self, entries: usize) {
        self.background_entries = entries;
    }

    /// Starts the SM: it becomes DISCOVERING and begins the first sweep.
    /// Calling it again acts as [`SubnetManager::resweep`].
    pub fn start(&mut self, now: Instant) {
        if self.started {
            self.resweep(now);
            return;
        }
        self.started = true;
        self.set_state(SmState::DISCOVERING);
        self.begin_sweep();
    }

    /// Asks for a new sweep: at once when idle, else as soon as the
    /// running one ends. Starts the SM if it was not started.
    pub fn resweep(&mut self, now: Instant) {
        if !self.started {
            self.start(now);
            return;
        }
        if self.sm_state == SmState::NOT_ACTIVE {
            // Disabled by another SM: only its STANDBY control wakes it.
            return;
        }
        if matches!(self.phase, Phase::Idle | Phase::Light) {
            self.drop_light();
            self.resweep_at = None;
            self.begin_sweep();
        } else {
            self.resweep_pending = true;
        }
    }

    /// The next MAD to send on QP0 and where to: first answers to
    /// requests SM-lite received (SMInfo, TrapRepress), then resends,
    /// then new sweep SMPs while fewer than
    /// [`SmConfig::max_in_flight`] are outstanding.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(Vec<u8>, Address)> {
        let mut mad = [0u8; MAD_LEN];
        let to = self.poll_transmit_into(now, &mut mad)?;
        Some((mad.to_vec(), to))
    }

    /// [`SubnetManager::poll_transmit`] into the caller's buffer (every
    /// MAD SM-lite sends is a whole 256-byte SMP): no allocation per MAD.
    pub fn poll_transmit_into(&mut self, now: Instant, mad: &mut [u8; MAD_LEN]) -> Option<Address> {
        if let Some((r, to)) = self.responses.pop_front() {
            self.act_count = self.act_count.wrapping_add(1);
            self.stats.smps += 1;
            let n = r.len().min(MAD_LEN);
            mad[..n].copy_from_slice(&r[..n]);
            mad[n..].fill(0);
            return Some(to);
        }
        while let Some(tid) = self.resend.pop_front() {
            if let Some(o) = self.outstanding.get_mut(&tid) {
                o.tries += 1;
                o.deadline = Some(now + self.cfg.timeout);
                self.sweep.smps += 1;
                self.sweep.retries += 1;
                self.stats.smps += 1;
                self.act_count = self.act_count.wrapping_add(1);
                // The same MAD again (same TID), made anew from the request.
                build(&o.req, tid, self.cfg.m_key, &self.sweep.subnet, mad);
                return Some(Address::smi(PERMISSIVE_LID));
            }
        }
        if self.outstanding.len() >= self.cfg.max_in_flight.max(1) {
            return None;
        }
        let req = match self.ready.pop_front() {
            Some(r) => r,
            None if matches!(self.phase, Phase::Configure | Phase::Activate) => self.next_set()?,
            None => return None,
        };
        let tid = loop {
            self.next_tid = self.next_tid.wrapping_add(1);
            let t = TID_MARK | u64::from(self.next_tid);
            if !self.outstanding.contains_key(&t) {
                break t;
            }
        };
        build(&req, tid, self.cfg.m_key, &self.sweep.subnet, mad);
        if req.method == Method::SET {
            self.sweep.sets += 1;
        }
        match req.kind {
            Kind::SetLft { .. } => self.sweep.lft_blocks += 1,
            Kind::SetPortInfo { .. } => self.sweep.port_sets += 1,
            _ => {}
        }
        self.stats.smps += 1;
        self.sweep.smps += 1;
        self.act_count = self.act_count.wrapping_add(1);
        self.outstanding.insert(
            tid,
            Outstanding {
                req,
                tries: 1,
                deadline: Some(now + self.cfg.timeout),
            },
        );
        Some(Address::smi(PERMISSIVE_LID))
    }

    /// Takes a MAD received on QP0 from `src`: an answer to one of
    /// SM-lite's SMPs, a trap, or a request to the SM (SMInfo). Anything
    /// else is ignored.
    pub fn handle_recv(&mut self, now: Instant, mad: &[u8], src: &Address) {
        let Ok(smp) = Smp::new_checked(mad) else {
            return;
        };
        let class = smp.mgmt_class();
        if class != MgmtClass::SUBN_LID_ROUTED && class != MgmtClass::SUBN_DIRECTED_ROUTE {
            return;
        }
        let method = smp.method();
        if smp.response_bit() {
            self.on_answer(now, &smp);
        } else if method == Method::TRAP {
            self.on_trap(now, &smp, src);
        } else if method == Method::GET || method == Method::SET {
            self.on_request(now, &smp, src);
        }
        self.advance(now);
    }

    /// Resends or fails the SMPs whose deadline has passed, and starts a
    /// re-sweep whose time has come.
    pub fn handle_timeout(&mut self, now: Instant) {
        let late: Vec<u64> = self
            .outstanding
            .iter()
            .filter(|(_, o)| o.deadline.is_some_and(|d| d <= now))
            .map(|(t, _)| *t)
            .collect();
        for tid in late {
            // A poll is resent as long as it fits in its polling period
            // (the next poll is its retry after that): a master busy
            // starting up may miss one (OpenSM ignores SMInfo Gets until
            // it has found its own port).
            let retry = self.outstanding.get(&tid).is_some_and(|o| {
                let retries = if matches!(o.req.kind, Kind::PollSmInfo { .. }) {
                    self.poll_retries()
                } else {
                    self.cfg.retries
                };
                o.tries <= retries
            });
            if retry {
                if let Some(o) = self.outstanding.get_mut(&tid) {
                    o.deadline = None;
                    self.resend.push_back(tid);
                }
            } else if let Some(o) = self.outstanding.remove(&tid) {
                let err = SmError::Timeout {
                    method: o.req.method,
                    attr: o.req.attr,
                    attr_mod: o.req.attr_mod,
                    path: o.req.path.clone(),
                    tries: o.tries,
                };
                self.fail(now, o.req, err);
            }
        }
        if self.resweep_at.is_some_and(|t| t <= now) {
            self.resweep_at = None;
            self.resweep(now);
        }
        if self.neg.poll_at.is_some_and(|t| t <= now) {
            self.poll_tick(now);
        }
        if self.light_at.is_some_and(|t| t <= now) {
            self.light_tick(now);
        }
        if self.held_deadline().is_some_and(|t| t <= now) {
            self.release_held(Some(now));
        }
        self.advance(now);
    }

    /// Resends of a poll: one, when it fits in the polling period (a
    /// dead master is then noticed at most one SMP timeout later).
    fn poll_retries(&self) -> u32 {
        let fits = self.cfg.timeout * 2 <= self.cfg.sminfo_polling_timeout;
        u32::from(fits).min(self.cfg.retries)
    }

    /// The earliest time [`SubnetManager::handle_timeout`] has work.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let d = self.outstanding.values().filter_map(|o| o.deadline).min();
        [
            d,
            self.resweep_at,
            self.neg.poll_at,
            self.light_at,
            self.held_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<SmEvent> {
        self.events.pop_front()
    }

    /// The subnet as the last finished sweep saw and configured it.
    #[must_use]
    pub fn subnet(&self) -> &Subnet {
        &self.subnet
    }

    /// The SM's LID (0 before the first sweep routed).
    #[must_use]
    pub fn sm_lid(&self) -> u16 {
        self.sm_lid
    }

    /// The LID given to the port with this GUID (kept across sweeps).
    #[must_use]
    pub fn lid_of(&self, port_guid: u64) -> Option<u16> {
        self.book.lid(port_guid)
    }

    /// SMInfo as SM-lite answers it (SM_Key included).
    #[must_use]
    pub fn sm_info(&self) -> SmInfo {
        SmInfo {
            guid: self.port_guid,
            sm_key: self.cfg.sm_key,
            act_count: self.act_count,
            priority: self.cfg.priority & 0x0F,
            sm_state: self.sm_state,
        }
    }

    /// True while a sweep runs.
    #[must_use]
    pub fn is_sweeping(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// True once a sweep raised SubnetUp (and stays so during re-sweeps).
    #[must_use]
    pub fn is_subnet_up(&self) -> bool {
        self.subnet_up
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SmConfig {
        &self.cfg
    }

    /// The SM's state (SMInfo SMState): NotActive before
    /// [`SubnetManager::start`] and when disabled, Discovering while it
    /// sweeps to become master, Standby while another SM is master,
    /// Master.
    #[must_use]
    pub fn sm_state(&self) -> SmState {
        self.sm_state
    }

    /// Port GUID of the SM this one polls while Standby.
    #[must_use]
    pub fn master_guid(&self) -> Option<u64> {
        self.neg.polled.as_ref().map(|(g, _)| *g)
    }

    /// SMPs SM-lite holds: outstanding (at most
    /// [`SmConfig::max_in_flight`]), queued to send, and answers not yet
    /// taken by [`SubnetManager::poll_transmit`]. A sweep's queue is at
    /// most one request per port it found; nothing carries over from one
    /// sweep to the next, so a fabric that keeps failing the same way
    /// keeps this the same.
    #[must_use]
    pub fn backlog(&self) -> usize {
        self.outstanding.len() + self.ready.len() + self.responses.len()
    }

    /// SMPs sent whose answer may still come: outstanding with a
    /// deadline running (one timed out and waiting to be sent again is
    /// not on the wire). What a driver holding its port quiet (a soft
    /// reset) lets end before it lets go.
    #[must_use]
    pub fn awaiting_answers(&self) -> usize {
        self.outstanding
            .values()
            .filter(|o| o.deadline.is_some())
            .count()
    }

    /// Sweep and SMP counters.
    #[must_use]
    pub fn stats(&self) -> SmStats {
        SmStats {
            events_dropped: self.events.dropped(),
            ..self.stats.clone()
        }
    }
}

#[cfg(test)]
mod tests;
