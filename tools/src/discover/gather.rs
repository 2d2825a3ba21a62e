//! Phase 1 of discovery: read, with many directed-route SMPs in flight,
//! every answer libibnetdisc's algorithm would use, whatever order they
//! come in.
//!
//! libibnetdisc expands a switch through each of its LinkUp ports except
//! the one it first entered by, and a CA only out of the local port. Which
//! port a switch is "first entered by" depends on the order answers are
//! processed in, so this phase keeps, per (node, port), the NodeInfo
//! answered beyond **every** LinkUp port of every switch. A link's far
//! side is asked for from one end only: a NodeInfo that reached switch B
//! by its port r from node A's port q also tells what a NodeInfo out of
//! B's port r answers (A at port q), so that one is not sent when it is
//! not on the wire yet. This covers the port a switch was entered by,
//! which libibnetdisc does not go out of either, and the second end of
//! each inter-switch link, which it does. With those, [`super::model`]
//! replays libibnetdisc exactly without touching the fabric again, and no
//! SMP is sent that libibnetdisc would not send too.
//!
//! Reads per node: NodeInfo (through each link reaching it), NodeDescription,
//! SwitchInfo (switches), PortInfo of every port (switches: 0..=N; CAs:
//! each port something reached them by), and Mellanox ExtendedPortInfo
//! where infiniband-diags would read it (Mellanox device, QDR LinkUp port).

use std::collections::{BTreeMap, BTreeSet};

use mad_core::hash::FastMap;

use mad_core::transport::{Address, Qp, PERMISSIVE_LID};
use mad_core::wire::attr::{
    NodeDescription, NodeInfo, NodeType, PhysPortState, PortInfo, SwitchInfo,
};
use mad_core::wire::smp::{DrPath, Smp, DR_MAX_HOPS};
use mad_core::wire::{AttributeId, Method, Repr};

use super::pipeline::{
    Exchange, Handler, Limits, Outcome, Pipeline, PipelineError, Request, Stats,
};

/// Mellanox ExtendedPortInfo (vendor attribute 0xFF90).
pub const MLNX_EXT_PORT_INFO: AttributeId = AttributeId(0xFF90);

/// What phase 1 read about one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatheredNode {
    /// NodeInfo as first answered.
    pub info: NodeInfo,
    /// The directed route it was first reached by (phase 1's, not
    /// necessarily libibnetdisc's).
    pub path: Vec<u8>,
    /// NodeDescription, if it was answered.
    pub desc: Option<NodeDescription>,
    /// SwitchInfo (switches), if it was answered.
    pub switch_info: Option<SwitchInfo>,
    /// PortInfo by port number (index), `None` where none was answered.
    pub ports: Vec<Option<PortInfo>>,
    /// Mellanox ExtendedPortInfo LinkSpeedActive by port: `None` when the
    /// query failed.
    pub ext_speed: BTreeMap<u8, Option<u8>>,
    /// Ports whose PortInfo was asked for (answered or not), a bit each.
    asked: [u64; 4],
}

impl GatheredNode {
    /// The PortInfo answered for `port`.
    #[must_use]
    pub fn port(&self, port: u8) -> Option<&PortInfo> {
        self.ports.get(usize::from(port)).and_then(Option::as_ref)
    }

    /// Marks `port` as asked for; false if it already was.
    fn ask(&mut self, port: u8) -> bool {
        let (word, bit) = (usize::from(port / 64), 1u64 << (port % 64));
        let fresh = self.asked[word] & bit == 0;
        self.asked[word] |= bit;
        fresh
    }

    /// True for a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::SWITCH
    }
}

/// A query that got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryFailure {
    /// The attribute.
    pub attr: AttributeId,
    /// Its modifier (the port of PortInfo).
    pub attr_mod: u32,
    /// The directed route it took.
    pub path: Vec<u8>,
    /// Why.
    pub reason: String,
}

/// Everything phase 1 read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gathered {
    /// NodeInfo of the local node (the empty route).
    pub root: Option<NodeInfo>,
    /// NodeInfo answered beyond (node GUID, port).
    pub via: FastMap<(u64, u8), NodeInfo>,
    /// Nodes by GUID.
    pub nodes: FastMap<u64, GatheredNode>,
    /// Queries that failed.
    pub failures: Vec<QueryFailure>,
    /// Pipeline counters.
    pub stats: Stats,
    /// Whether Mellanox ExtendedPortInfo was read (the replay queues it
    /// exactly when this is set, as libibnetdisc's `MLX_EPI` flag).
    pub mlx_epi: bool,
}

impl Gathered {
    /// The NodeInfo answered at the end of `path` from the local node,
    /// following the links phase 1 saw.
    #[must_use]
    pub fn walk(&self, path: &[u8]) -> Option<&NodeInfo> {
        let mut cur = self.root.as_ref()?;
        for &hop in path {
            cur = self.via.get(&(cur.node_guid, hop))?;
        }
        Some(cur)
    }
}

/// Options of phase 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatherOptions {
    /// In-flight bounds, timeout, retries.
    pub limits: Limits,
    /// M_Key put in every SMP.
    pub m_key: u64,
    /// Read Mellanox ExtendedPortInfo where infiniband-diags does (its
    /// `MLX_EPI` setting, on by default).
    pub mlx_epi: bool,
}

impl Default for GatherOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            m_key: 0,
            mlx_epi: true,
        }
    }
}

/// Progress of a running discovery.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GatherProgress {
    /// Nodes found so far.
    pub nodes: usize,
    /// Switches among them.
    pub switches: usize,
    /// SMPs answered.
    pub answered: u64,
    /// SMPs sent.
    pub sent: u64,
    /// SMPs in flight or queued.
    pub pending: usize,
}

#[derive(Debug, Clone)]
enum Q {
    NodeInfo {
        path: Vec<u8>,
        from: Option<(u64, u8)>,
    },
    NodeDesc {
        guid: u64,
    },
    SwitchInfo {
        guid: u64,
    },
    PortInfo {
        guid: u64,
        port: u8,
    },
    Ext {
        guid: u64,
        port: u8,
    },
}

/// True for the devices libibnetdisc reads Mellanox ExtendedPortInfo of
/// (its `is_mlnx_ext_port_info_supported`).
#[must_use]
pub fn mlnx_ext_port_info_supported(info: &NodeInfo) -> bool {
    let devid = info.device_id;
    let bull = info.vendor_id == 0x119f;
    let switch = (0xc738..=0xc73b).contains(&devid)
        || matches!(devid, 0xc839 | 0xcb20 | 0xcf08 | 0xcf09 | 0xd2f0)
        || (bull
            && (matches!(devid, 0x1b02 | 0x1b50 | 0x1ba0 | 0x1bf0)
                || (0x1bd0..=0x1bd5).contains(&devid)));
    let ca = (0x1003..=0x101b).contains(&devid)
        || devid == 0xa2d2
        || (bull
            && (matches!(
                devid,
                0x1b33
                    | 0x1b73
                    | 0x1b40
                    | 0x1b41
                    | 0x1b60
                    | 0x1b61
                    | 0x1b83
                    | 0x1b93
                    | 0x1b94
                    | 0x1bb4
                    | 0x1bb5
            ) || (0x1bc4..=0x1bc6).contains(&devid)));
    switch || ca
}

struct Gatherer<'p> {
    g: Gathered,
    /// Routes go at most this many hops ([`gather_within`]).
    max_depth: usize,
    /// Ports not gone out of because their node's route was at the
    /// depth limit (gone out of once a shorter route reaches the node).
    capped: BTreeSet<(u64, u8)>,
    switches: usize,
    m_key: u64,
    mlx_epi: bool,
    progress: &'p mut dyn FnMut(&GatherProgress),
}

impl Gatherer<'_> {
    fn path_of(&self, guid: u64) -> Vec<u8> {
        self.route_of(guid).to_vec()
    }

    /// The route node `guid` is reached by (empty when unknown).
    fn route_of(&self, guid: u64) -> &[u8] {
        self.g.nodes.get(&guid).map_or(&[], |n| n.path.as_slice())
    }

    fn submit(&self, p: &mut Pipeline<Q>, q: Q) {
        let (path, attr, attr_mod, key) = match &q {
            Q::NodeInfo { path, .. } => (path.as_slice(), AttributeId::NODE_INFO, 0, None),
            Q::NodeDesc { guid } => (self.route_of(*guid), AttributeId::NODE_DESC, 0, Some(*guid)),
            Q::SwitchInfo { guid } => (
                self.route_of(*guid),
                AttributeId::SWITCH_INFO,
                0,
                Some(*guid),
            ),
            Q::PortInfo { guid, port } => (
                self.route_of(*guid),
                AttributeId::PORT_INFO,
                u32::from(*port),
                Some(*guid),
            ),
            Q::Ext { guid, port } => (
                self.route_of(*guid),
                MLNX_EXT_PORT_INFO,
                u32::from(*port),
                Some(*guid),
            ),
        };
        // Paths are at most 63 hops by construction.
        let Ok(route) = DrPath::from_hops(path) else {
            return;
        };
        let mad = route.build_request(Method::GET, attr, attr_mod, 0, self.m_key);
        p.submit(Request {
            qp: Qp::Qp0,
            mad,
            dest: Address::smi(PERMISSIVE_LID),
            dest_key: key,
            ctx: q,
        });
    }

    fn fail(&mut self, q: &Q, reason: String) {
        let (attr, attr_mod, path) = match q {
            Q::NodeInfo { path, .. } => (AttributeId::NODE_INFO, 0, path.clone()),
            Q::NodeDesc { guid } => (AttributeId::NODE_DESC, 0, self.path_of(*guid)),
            Q::SwitchInfo { guid } => (AttributeId::SWITCH_INFO, 0, self.path_of(*guid)),
            Q::PortInfo { guid, port } => (
                AttributeId::PORT_INFO,
                u32::from(*port),
                self.path_of(*guid),
            ),
            Q::Ext { guid, port } => (MLNX_EXT_PORT_INFO, u32::from(*port), self.path_of(*guid)),
        };
        if let Q::Ext { guid, port } = q {
            if let Some(n) = self.g.nodes.get_mut(guid) {
                n.ext_speed.insert(*port, None);
            }
        }
        self.g.failures.push(QueryFailure {
            attr,
            attr_mod,
            path,
            reason,
        });
    }

    fn handle(&mut self, p: &mut Pipeline<Q>, q: Q, outcome: Outcome) {
        let mad = match outcome {
            Outcome::Answer(m) => m,
            Outcome::Timeout => return self.fail(&q, "timeout".into()),
            Outcome::Failed(e) => return self.fail(&q, e),
        };
        let Ok(smp) = Smp::new_checked(&mad[..]) else {
            return self.fail(&q, format!("short answer ({} bytes)", mad.len()));
        };
        let status = smp.dr_status() & 0x7FFF;
        if status != 0 {
            return self.fail(&q, format!("bad status 0x{status:x}"));
        }
        let data = smp.data();
        match q {
            Q::NodeInfo { path, from } => {
                let Ok(ni) = NodeInfo::parse(data) else {
                    return;
                };
                self.node_info(p, path, from, ni);
            }
            Q::NodeDesc { guid } => {
                if let (Ok(d), Some(n)) =
                    (NodeDescription::parse(data), self.g.nodes.get_mut(&guid))
                {
                    n.desc = Some(d);
                }
            }
            Q::SwitchInfo { guid } => {
                if let (Ok(s), Some(n)) = (SwitchInfo::parse(data), self.g.nodes.get_mut(&guid)) {
                    n.switch_info = Some(s);
                }
            }
            Q::PortInfo { guid, port } => {
                let Ok(pi) = PortInfo::parse(data) else {
                    return;
                };
                self.port_info(p, guid, port, pi);
            }
            Q::Ext { guid, port } => {
                if let Some(n) = self.g.nodes.get_mut(&guid) {
                    n.ext_speed.insert(port, data.get(15).copied());
                }
            }
        }
        let prog = GatherProgress {
            nodes: self.g.nodes.len(),
            switches: self.switches,
            answered: p.stats().answered,
            sent: p.stats().sent,
            pending: p.in_flight() + p.queued(),
        };
        (self.progress)(&prog);
    }

    fn node_info(
        &mut self,
        p: &mut Pipeline<Q>,
        path: Vec<u8>,
        from: Option<(u64, u8)>,
        ni: NodeInfo,
    ) {
        let guid = ni.node_guid;
        let entry = ni.local_port_num;
        match from {
            None => self.g.root = Some(ni.clone()),
            Some(end) => {
                self.g.via.insert(end, ni.clone());
            }
        }
        let is_switch = ni.node_type == NodeType::SWITCH;
        if is_switch {
            if let Some(back) = from.and_then(|(g, port)| self.seen_from(g, port)) {
                // What a NodeInfo out of the port this one came in by
                // would answer: the node it came from, at its exit port.
                self.g.via.entry((guid, entry)).or_insert(back);
            }
        }
        if self.max_depth < usize::from(DR_MAX_HOPS) {
            if let Some(n) = self.g.nodes.get(&guid) {
                if path.len() < n.path.len() {
                    self.relax(p, guid, path.clone());
                }
            }
        }
        if let std::collections::hash_map::Entry::Vacant(e) = self.g.nodes.entry(guid) {
            let num_ports = ni.num_ports;
            e.insert(GatheredNode {
                info: ni,
                path,
                desc: None,
                switch_info: None,
                ports: Vec::new(),
                ext_speed: BTreeMap::new(),
                asked: [0; 4],
            });
            self.submit(p, Q::NodeDesc { guid });
            if is_switch {
                self.switches += 1;
                self.submit(p, Q::SwitchInfo { guid });
                for port in 0..=num_ports {
                    self.ask_port(p, guid, port);
                }
            }
        }
        if !is_switch {
            self.ask_port(p, guid, entry);
        }
    }

    /// The NodeInfo node `guid` answers when entered through `port`,
    /// known without asking: a switch's differs from its first answer
    /// only in LocalPortNum (all its ports share the port GUID); another
    /// node's only when `port` is the one it was first reached by.
    fn seen_from(&self, guid: u64, port: u8) -> Option<NodeInfo> {
        let info = match self.g.nodes.get(&guid) {
            Some(n) => &n.info,
            None => self.g.root.as_ref().filter(|r| r.node_guid == guid)?,
        };
        if info.node_type != NodeType::SWITCH && info.local_port_num != port {
            return None;
        }
        let mut seen = info.clone();
        seen.local_port_num = port;
        Some(seen)
    }

    fn ask_port(&mut self, p: &mut Pipeline<Q>, guid: u64, port: u8) {
        let Some(n) = self.g.nodes.get_mut(&guid) else {
            return;
        };
        if port > n.info.num_ports || !n.ask(port) {
            return;
        }
        self.submit(p, Q::PortInfo { guid, port });
    }

    fn port_info(&mut self, p: &mut Pipeline<Q>, guid: u64, port: u8, pi: PortInfo) {
        let Some(n) = self.g.nodes.get_mut(&guid) else {
            return;
        };
        let up = pi.port_phys_state == PhysPortState::LINK_UP;
        let ext = self.mlx_epi
            && port != 0
            && up
            && pi.link_speed_active == 4
            && mlnx_ext_port_info_supported(&n.info);
        let is_switch = n.is_switch();
        let root_port = n.path.is_empty() && !is_switch && port == n.info.local_port_num;
        let depth = n.path.len();
        let slot = usize::from(port);
        if n.ports.len() <= slot {
            // Every port a switch has, or up to this one.
            let len = if is_switch { n.info.num_ports } else { port };
            n.ports.resize(usize::from(len.max(port)) + 1, None);
        }
        n.ports[slot] = Some(pi);
        if ext {
            self.submit(p, Q::Ext { guid, port });
        }
        // No NodeInfo beyond a port whose far side is already known
        // (see `seen_from`).
        let known = self.g.via.contains_key(&(guid, port));
        if up && port != 0 && !known && (is_switch || root_port) && depth >= self.max_depth {
            self.capped.insert((guid, port));
        } else if up
            && port != 0
            && !known
            && (is_switch || root_port)
            && depth < usize::from(DR_MAX_HOPS)
        {
            let mut next = Vec::with_capacity(depth + 1);
            next.extend_from_slice(self.route_of(guid));
            next.push(port);
            self.submit(
                p,
                Q::NodeInfo {
                    path: next,
                    from: Some((guid, port)),
                },
            );
        }
    }
}

impl Handler<Q> for Gatherer<'_> {
    fn done(&mut self, p: &mut Pipeline<Q>, q: Q, outcome: Outcome) -> Result<(), String> {
        self.handle(p, q, outcome);
        Ok(())
    }

    /// A NodeInfo beyond a port whose far side became known while it
    /// waited (its far end's NodeInfo came in that way) is not sent: see
    /// `seen_from`.
    fn still_wanted(&mut self, q: &Q) -> bool {
        match q {
            Q::NodeInfo {
                from: Some(end), ..
            } => !self.g.via.contains_key(end),
            _ => true,
        }
    }
}

impl Gatherer<'_> {
    /// Node `guid` is reached by a shorter route than it was first: it
    /// and what lies beyond its known links take the shorter routes, and
    /// ports left at the depth limit are gone out of where the limit
    /// now allows (so every switch nearer than the limit has all its
    /// links read, whatever order answers came in).
    fn relax(&mut self, p: &mut Pipeline<Q>, guid: u64, path: Vec<u8>) {
        let mut work = vec![(guid, path)];
        while let Some((guid, path)) = work.pop() {
            let Some(n) = self.g.nodes.get_mut(&guid) else {
                continue;
            };
            if path.len() >= n.path.len() {
                continue;
            }
            n.path.clone_from(&path);
            let ports: Vec<u8> = (1..=n.info.num_ports)
                .filter(|&q| n.port(q).is_some())
                .collect();
            for port in ports {
                let mut next = path.clone();
                next.push(port);
                if let Some(far) = self.g.via.get(&(guid, port)) {
                    work.push((far.node_guid, next));
                } else if next.len() <= self.max_depth && self.capped.remove(&(guid, port)) {
                    self.submit(
                        p,
                        Q::NodeInfo {
                            path: next,
                            from: Some((guid, port)),
                        },
                    );
                }
            }
        }
    }
}

/// Runs phase 1 from the local port of the exchange; `progress` is
/// called after every answer.
///
/// # Errors
/// A transport failure; single unanswered queries are not errors (they
/// are listed in [`Gathered::failures`]).
pub fn gather(
    ex: &mut dyn Exchange,
    opts: &GatherOptions,
    progress: &mut dyn FnMut(&GatherProgress),
) -> Result<Gathered, PipelineError> {
    gather_within(ex, opts, usize::from(DR_MAX_HOPS), progress)
}

/// [`gather`] of what lies within `max_depth` hops of the local port:
/// every node whose shortest route is at most that long, and every link
/// of each switch nearer than that (what a scan limited to routes of
/// `max_depth` hops can ask for).
///
/// # Errors
/// As [`gather`].
pub fn gather_within(
    ex: &mut dyn Exchange,
    opts: &GatherOptions,
    max_depth: usize,
    progress: &mut dyn FnMut(&GatherProgress),
) -> Result<Gathered, PipelineError> {
    let mut p: Pipeline<Q> = Pipeline::new(opts.limits);
    let mut g = Gatherer {
        g: Gathered {
            mlx_epi: opts.mlx_epi,
            ..Gathered::default()
        },
        max_depth: max_depth.min(usize::from(DR_MAX_HOPS)),
        capped: BTreeSet::new(),
        switches: 0,
        m_key: opts.m_key,
        mlx_epi: opts.mlx_epi,
        progress,
    };
    g.submit(
        &mut p,
        Q::NodeInfo {
            path: Vec::new(),
            from: None,
        },
    );
    p.run(ex, &mut g)?;
    g.g.stats = p.stats();
    Ok(g.g)
}
