//! The fabric model ibnetdiscover prints, and phase 2 of discovery: a
//! replay of libibnetdisc's algorithm over the answers phase 1 read.
//!
//! libibnetdisc (infiniband-diags' discovery library) keeps one FIFO of
//! SMPs and at most two on the wire; ibsim and real fabrics answer one
//! port's SMPs in order, so its callbacks run in FIFO order. What it
//! builds (which node is "new", which path a node is first reached by,
//! which port GUID and links a port gets, and so the order nodes are
//! printed in: newest first) follows from that order. [`replay`] runs the
//! same callbacks in the same FIFO order, answering each SMP from
//! [`Gathered`], so the model is the one libibnetdisc would build, while
//! the fabric was read with many SMPs in flight.
//!
//! Per SMP, what libibnetdisc does (and this replay too):
//! - NodeInfo: find or create the node (a new node queues NodeDescription,
//!   and for a switch SwitchInfo and PortInfo of port 0); give the port
//!   it entered by its GUID; link it to the port the SMP came from (the
//!   first NodeInfo, of the local node, records the start instead); a CA
//!   or router also queues PortInfo of that port.
//! - PortInfo 0 of a switch: record the switch's LID/LMC, then queue
//!   PortInfo of ports 1..=N.
//! - PortInfo: store it (switch ports take the switch's LID); maybe queue
//!   Mellanox ExtendedPortInfo first; then, for a LinkUp port other than
//!   the one a switch was entered by (or the local CA's own port), queue
//!   NodeInfo one hop further (the local CA reached again goes one hop
//!   back instead).

use std::collections::VecDeque;
use std::rc::Rc;

use mad_core::hash::FastMap;

use mad_core::wire::attr::{NodeInfo, NodeType, PhysPortState, PortInfo, SwitchInfo};
use mad_core::wire::Repr;

use super::gather::{mlnx_ext_port_info_supported, Gathered, GatheredNode};

/// A port of the model, as libibnetdisc keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// Port number.
    pub num: u8,
    /// Port GUID (a switch's ports all carry the switch's port GUID).
    pub guid: u64,
    /// PortInfo, if it was read (a port known only from NodeInfo has none).
    pub info: Option<PortInfo>,
    /// Mellanox ExtendedPortInfo LinkSpeedActive (bit 0: FDR10), 0 when
    /// not read.
    pub ext_speed_active: u8,
    /// Base LID (a switch port: the switch's port-0 LID).
    pub base_lid: u16,
    /// LMC (a switch port: port 0's).
    pub lmc: u8,
    /// The port at the other end of the link.
    pub remote: Option<PortRef>,
}

/// A reference to a port of the model: node index and port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortRef {
    /// Index into [`Fabric::nodes`].
    pub node: usize,
    /// Port number.
    pub port: u8,
}

/// A node of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// NodeInfo of the first answer (its PortGUID / LocalPortNum are those
    /// of the port it was first reached by).
    pub info: NodeInfo,
    /// NodeDescription bytes before the first NUL (at most 64), raw.
    pub desc: Vec<u8>,
    /// SwitchInfo EnhancedPort0.
    pub enhanced_port0: bool,
    /// LID of port 0 (switches; 0 otherwise).
    pub smalid: u16,
    /// LMC of port 0 (switches).
    pub smalmc: u8,
    /// The directed route it was first reached by.
    pub path: Vec<u8>,
    /// Ports by number (`ports[0]` is a switch's management port).
    pub ports: Vec<Option<Port>>,
    /// SwitchInfo as answered (switches; kept for the cache file).
    pub switch_info: Option<SwitchInfo>,
}

impl Node {
    /// Node GUID.
    #[must_use]
    pub fn guid(&self) -> u64 {
        self.info.node_guid
    }

    /// NodeType.
    #[must_use]
    pub fn node_type(&self) -> NodeType {
        self.info.node_type
    }

    /// True for a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::SWITCH
    }

    /// Number of physical ports.
    #[must_use]
    pub fn num_ports(&self) -> u8 {
        self.info.num_ports
    }

    /// Port `n`, if the model has it.
    #[must_use]
    pub fn port(&self, n: u8) -> Option<&Port> {
        self.ports.get(usize::from(n)).and_then(Option::as_ref)
    }

    /// The description as ibnetdiscover prints it: every byte that is not
    /// printable ASCII becomes a space (`clean_nodedesc`).
    #[must_use]
    pub fn clean_desc(&self) -> String {
        self.desc
            .iter()
            .map(|&b| {
                if (0x20..0x7f).contains(&b) {
                    char::from(b)
                } else {
                    ' '
                }
            })
            .collect()
    }

    /// The LID shown for `port`, a port of this node seen from the far
    /// end of a link: its base LID, or the node's port-0 LID where it has
    /// none (a switch port).
    #[must_use]
    pub fn far_lid(&self, port: &Port) -> u16 {
        if port.base_lid != 0 {
            port.base_lid
        } else {
            self.smalid
        }
    }

    /// The LID ibnetdiscover shows for this node's port `port` (a switch:
    /// its port-0 LID).
    #[must_use]
    pub fn lid_of(&self, port: u8) -> u16 {
        if self.is_switch() {
            self.smalid
        } else {
            self.port(port).map_or(0, |p| p.base_lid)
        }
    }
}

/// The discovered fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fabric {
    /// Nodes in the order libibnetdisc created them (it lists them newest
    /// first: see [`Fabric::listed`]).
    pub nodes: Vec<Node>,
    /// The node discovery started from.
    pub from_node: usize,
    /// The port of it discovery started from.
    pub from_port: u8,
    /// SMPs libibnetdisc would have sent (its "Total MADs used").
    pub total_mads: u64,
    /// Its "max hops discovered".
    pub max_hops: u32,
    /// The lines `ibnetdiscover --show` prints while discovering, in
    /// order.
    pub show_lines: Vec<String>,
    /// Ports in the order libibnetdisc added them to its port GUID table
    /// (`add_to_portguid_hash`, as their PortInfo arrived): the cache
    /// file lists each bucket of that table newest first.
    pub port_order: Vec<PortRef>,
}

impl Fabric {
    /// Node indices in libibnetdisc's list order (newest first).
    pub fn listed(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        (0..self.nodes.len()).rev()
    }

    /// Node indices of one type, newest first (libibnetdisc's per-type
    /// lists).
    pub fn listed_of(&self, t: NodeType) -> impl Iterator<Item = usize> + '_ {
        self.listed()
            .filter(move |&i| self.nodes[i].node_type() == t)
    }

    /// The node with GUID `guid`.
    #[must_use]
    pub fn find(&self, guid: u64) -> Option<usize> {
        self.nodes.iter().position(|n| n.guid() == guid)
    }

    /// The port `r` refers to.
    #[must_use]
    pub fn port(&self, r: PortRef) -> Option<&Port> {
        self.nodes.get(r.node).and_then(|n| n.port(r.port))
    }

    /// Every link once: (lower end, higher end) by (node index, port).
    #[must_use]
    pub fn links(&self) -> Vec<(PortRef, PortRef)> {
        let mut v = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            for p in n.ports.iter().flatten() {
                if let Some(r) = p.remote {
                    let here = PortRef {
                        node: i,
                        port: p.num,
                    };
                    if here <= r {
                        v.push((here, r));
                    }
                }
            }
        }
        v
    }
}

/// `libibmad`'s node type names (`mad_dump_node_type`).
#[must_use]
pub fn node_type_name(t: NodeType) -> String {
    crate::diags::dump::node_type(t.0)
}

/// The one-word node type of the JSON and text forms (`Ca`, `Switch`,
/// `Router`, `?` for any other).
#[must_use]
pub fn type_word(t: NodeType) -> &'static str {
    match t.0 {
        1 => "Ca",
        2 => "Switch",
        3 => "Router",
        _ => "?",
    }
}

/// libibmad's `portid2str` of a directed route from the local port
/// (DrSLID and DrDLID 0).
#[must_use]
pub fn dr_path_str(path: &[u8]) -> String {
    let mut s = String::from("DR path slid 0; dlid 0; 0");
    for h in path {
        s.push(',');
        s.push_str(&h.to_string());
    }
    s
}

/// A queued SMP of the replay (routes shared: `Rc`).
#[derive(Debug, Clone)]
enum Vq {
    NodeInfo {
        path: Rc<[u8]>,
        from: Option<PortRef>,
        /// The local CA reached again, one hop back (not beyond `from`).
        back: bool,
    },
    NodeDesc {
        node: usize,
    },
    SwitchInfo {
        node: usize,
    },
    PortInfo {
        path: Rc<[u8]>,
        node: usize,
        port: u8,
    },
    Ext {
        path: Rc<[u8]>,
        node: usize,
        port: u8,
    },
}

/// A zeroed PortInfo (what a port without an answer holds).
fn zero_port_info() -> Option<PortInfo> {
    PortInfo::parse(&[0u8; PortInfo::LEN]).ok()
}

/// Where libibnetdisc's scan starts and how far it goes (its `from`
/// port id and `max_hops`): the default is the whole fabric from the
/// local port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// The directed route of the first NodeInfo (from the local port,
    /// or from `lid_start`'s node).
    pub path: Vec<u8>,
    /// A LID-routed start: the node (GUID) and port a LID reaches. From
    /// there libibnetdisc does not go on out of a CA, and counts hops
    /// from the node itself.
    pub lid_start: Option<(u64, u8)>,
    /// `max_hops`: 0 is no limit. Once a route one hop beyond it is
    /// taken, libibnetdisc takes no further route at all (so which nodes
    /// at the edge are found follows its FIFO order, as here).
    pub max_hops: u32,
    /// DrSLID and DrDLID as the start's port id has them (65535 for a
    /// route given on the command line, 0 from the local port), for the
    /// error lines.
    pub dr_lids: u16,
}

/// A replayed scan: the model, and the lines libibnetdisc prints on
/// stderr while scanning (a NodeInfo nothing answers, a port whose
/// PortInfo is read twice), in its order.
#[derive(Debug, Clone)]
pub struct Scanned {
    /// The model.
    pub fabric: Fabric,
    /// libibnetdisc's error lines, each ending in a newline.
    pub errors: Vec<String>,
}

/// libibnetdisc's line for an SMP that went unanswered (`umad_status`
/// 110), `portid` as libibmad's `portid2str` prints it.
#[must_use]
pub fn smp_timeout_line(portid: &str, attr: u16, attr_mod: u32) -> String {
    format!(
        "./libibnetdisc/query_smp.c:186; umad ({portid} Attr 0x{attr:x}:{attr_mod}) bad status 110; Connection timed out\n"
    )
}

struct Replay<'g> {
    g: &'g Gathered,
    scan: &'g Scan,
    /// The NodeInfo a LID-routed start answers.
    base: Option<NodeInfo>,
    errors: Vec<String>,
    nodes: Vec<Node>,
    /// What phase 1 read about each node of `nodes`, by the same index.
    gnodes: Vec<Option<&'g GatheredNode>>,
    by_guid: FastMap<u64, usize>,
    q: VecDeque<Vq>,
    from: Option<PortRef>,
    total: u64,
    max_hops: u32,
    show: bool,
    show_lines: Vec<String>,
    port_order: Vec<PortRef>,
}

impl<'g> Replay<'g> {
    fn gnode(&self, node: usize) -> Option<&'g GatheredNode> {
        self.gnodes.get(node).copied().flatten()
    }

    /// The NodeInfo answered at the end of `path` from the scan's start.
    fn walk(&self, path: &[u8]) -> Option<NodeInfo> {
        let mut cur = self.base.as_ref().or(self.g.root.as_ref())?;
        for &hop in path {
            cur = self.g.via.get(&(cur.node_guid, hop))?;
        }
        Some(cur.clone())
    }

    fn run(&mut self) {
        self.q.push_back(Vq::NodeInfo {
            path: self.scan.path.as_slice().into(),
            from: None,
            back: false,
        });
        while let Some(item) = self.q.pop_front() {
            self.total += 1;
            match item {
                Vq::NodeInfo { path, from, back } => self.node_info(path, from, back),
                Vq::NodeDesc { node } => {
                    let desc = self.gnode(node).and_then(|g| g.desc.as_ref()).map(|d| {
                        let raw = d.desc;
                        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                        raw[..end].to_vec()
                    });
                    if let (Some(d), Some(n)) = (desc, self.nodes.get_mut(node)) {
                        n.desc = d;
                    }
                }
                Vq::SwitchInfo { node } => {
                    let si = self
                        .gnode(node)
                        .and_then(|g| g.switch_info.as_ref())
                        .cloned();
                    if let (Some(s), Some(n)) = (si, self.nodes.get_mut(node)) {
                        n.enhanced_port0 = s.enhanced_port0;
                        n.switch_info = Some(s);
                    }
                }
                Vq::PortInfo { path, node, port } => {
                    let pi = self.gnode(node).and_then(|g| g.port(port)).cloned();
                    if let Some(pi) = pi {
                        self.port_info(&path, node, port, pi);
                    }
                }
                Vq::Ext { path, node, port } => {
                    let speed = self
                        .gnode(node)
                        .and_then(|g| g.ext_speed.get(&port).copied().flatten());
                    if let Some(s) = speed {
                        if let Some(p) = self
                            .nodes
                            .get_mut(node)
                            .and_then(|n| n.ports.get_mut(usize::from(port)))
                            .and_then(Option::as_mut)
                        {
                            p.ext_speed_active = s;
                        }
                    }
                    // Answered or not, libibnetdisc goes on from this port.
                    self.expand(&path, node, port);
                }
            }
        }
    }

    fn node_info(&mut self, path: Rc<[u8]>, from: Option<PortRef>, back: bool) {
        // One hop beyond a node: what its port leads to (as walking the route).
        let beyond = from
            .filter(|_| !back)
            .map(|r| (self.nodes.get(r.node), r.port));
        let found = match beyond {
            Some((n, port)) => n.and_then(|n| self.g.via.get(&(n.guid(), port)).cloned()),
            None => self.walk(&path),
        };
        let Some(ni) = found else {
            let lids = self.scan.dr_lids;
            let mut text = format!("DR path slid {lids}; dlid {lids}; 0");
            text.extend(path.iter().map(|h| format!(",{h}")));
            self.errors.push(smp_timeout_line(&text, 0x11, 0));
            return;
        };
        let guid = ni.node_guid;
        let port_num = ni.local_port_num;
        let (idx, new) = match self.by_guid.get(&guid) {
            Some(&i) => (i, false),
            None => {
                let i = self.nodes.len();
                let nports = usize::from(ni.num_ports);
                self.nodes.push(Node {
                    info: ni.clone(),
                    desc: Vec::new(),
                    enhanced_port0: false,
                    smalid: 0,
                    smalmc: 0,
                    path: path.to_vec(),
                    ports: vec![None; nports + 1],
                    switch_info: None,
                });
                self.gnodes.push(self.g.nodes.get(&guid));
                self.by_guid.insert(guid, i);
                (i, true)
            }
        };
        let Some(node) = self.nodes.get_mut(idx) else {
            return;
        };
        let Some(slot) = node.ports.get_mut(usize::from(port_num)) else {
            return;
        };
        let port = slot.get_or_insert_with(|| Port {
            num: port_num,
            guid: 0,
            info: None,
            ext_speed_active: 0,
            base_lid: 0,
            lmc: 0,
            remote: None,
        });
        port.guid = ni.port_guid;
        if self.show {
            let (lid, lmc) = (port.base_lid, port.lmc);
            let shown_port = if node.is_switch() { 0 } else { port_num };
            let last = i64::from(lid) + (1i64 << lmc) - 1;
            self.show_lines.push(format!(
                "{} -> {} {} {{{:016x}}} portnum {} lid {}-{} \"{}\"",
                dr_path_str(&path),
                if new { "new" } else { "known" },
                node_type_name(node.node_type()),
                guid,
                shown_port,
                lid,
                last,
                String::from_utf8_lossy(&node.desc)
            ));
        }
        let here = PortRef {
            node: idx,
            port: port_num,
        };
        match from {
            None => self.from = Some(here),
            Some(r) => self.link(here, r),
        }
        let is_switch = self.nodes[idx].is_switch();
        if new {
            self.q.push_back(Vq::NodeDesc { node: idx });
            if is_switch {
                self.q.push_back(Vq::SwitchInfo { node: idx });
                self.q.push_back(Vq::PortInfo {
                    path: path.clone(),
                    node: idx,
                    port: 0,
                });
            }
        }
        if !is_switch {
            self.q.push_back(Vq::PortInfo {
                path,
                node: idx,
                port: port_num,
            });
        }
    }

    fn port_mut(&mut self, r: PortRef) -> Option<&mut Port> {
        self.nodes
            .get_mut(r.node)
            .and_then(|n| n.ports.get_mut(usize::from(r.port)))
            .and_then(Option::as_mut)
    }

    /// libibnetdisc's `link_ports`: both ends forget an earlier partner.
    fn link(&mut self, a: PortRef, b: PortRef) {
        if self.port_mut(b).is_none() {
            return;
        }
        for end in [a, b] {
            if let Some(old) = self.port_mut(end).and_then(|p| p.remote) {
                if let Some(o) = self.port_mut(old) {
                    o.remote = None;
                }
            }
        }
        if let Some(p) = self.port_mut(a) {
            p.remote = Some(b);
        }
        if let Some(p) = self.port_mut(b) {
            p.remote = Some(a);
        }
    }

    fn port_info(&mut self, path: &Rc<[u8]>, node: usize, port_num: u8, mut pi: PortInfo) {
        let Some(n) = self.nodes.get_mut(node) else {
            return;
        };
        let is_switch = n.is_switch();
        // A switch answers PortInfo with the port the SMP entered by as
        // LocalPortNum: libibnetdisc asks along the path the switch was
        // first reached by, whose entry port the NodeInfo gave.
        if is_switch {
            pi.local_port_num = n.info.local_port_num;
        } else {
            // A CA's is asked along the route that entered it there
            // (phase 1 may have asked along another).
            pi.local_port_num = port_num;
        }
        let node_port_guid = n.info.port_guid;
        let (smalid, smalmc) = (n.smalid, n.smalmc);
        let Some(slot) = n.ports.get_mut(usize::from(port_num)) else {
            return;
        };
        // add_to_portguid_hash: a port whose PortInfo came before is
        // in the table already.
        if let Some(g) = slot.as_ref().filter(|p| p.info.is_some()).map(|p| p.guid) {
            self.errors.push(format!(
                "./libibnetdisc/ibnetdisc.c:667; Duplicate Port: Port with guid 0x{g:016x} already exists in ports DB\n\
                 ./libibnetdisc/ibnetdisc.c:379; Error Occurred when trying to insert new port guid 0x{g:016x} to DB\n"
            ));
        } else {
            self.port_order.push(PortRef {
                node,
                port: port_num,
            });
        }
        let port = slot.get_or_insert_with(|| Port {
            num: port_num,
            guid: node_port_guid,
            info: None,
            ext_speed_active: 0,
            base_lid: 0,
            lmc: 0,
            remote: None,
        });
        port.num = port_num;
        port.ext_speed_active = 0;
        port.base_lid = pi.lid;
        port.lmc = pi.lmc;
        let phys_up = pi.port_phys_state == PhysPortState::LINK_UP;
        let speed = pi.link_speed_active;
        let own_cap = pi.capability_mask;
        let own_ext = pi.link_speed_ext_active;
        port.info = Some(pi);
        if port_num == 0 {
            n.smalid = port.base_lid;
            n.smalmc = port.lmc;
        } else if is_switch {
            port.base_lid = smalid;
            port.lmc = smalmc;
        }
        let mut ext_queued = false;
        if mlnx_ext_port_info_supported(&n.info) && phys_up && speed == 4 {
            let cap = if is_switch {
                n.ports
                    .first()
                    .and_then(Option::as_ref)
                    .and_then(|p0| p0.info.as_ref())
                    .map_or(0, |i| i.capability_mask)
            } else {
                own_cap
            };
            let espeed = if cap & mad_core::wire::attr::port_cap::HAS_EXT_SPEEDS != 0 {
                own_ext
            } else {
                0
            };
            if espeed == 0 && self.g.mlx_epi {
                self.q.push_back(Vq::Ext {
                    path: path.clone(),
                    node,
                    port: port_num,
                });
                ext_queued = true;
            }
        }
        if !ext_queued {
            self.expand(path, node, port_num);
        }
        // recv_port0_info: the switch's other ports (only on an answer:
        // libibnetdisc's callbacks run on answers only).
        if port_num == 0 && is_switch {
            let nports = self.nodes[node].num_ports();
            for p in 1..=nports {
                self.q.push_back(Vq::PortInfo {
                    path: path.clone(),
                    node,
                    port: p,
                });
            }
        }
    }

    /// The tail of recv_port_info: go one hop further (or back).
    fn expand(&mut self, path: &[u8], node: usize, port_num: u8) {
        let Some(n) = self.nodes.get(node) else {
            return;
        };
        let Some(pi) = n.port(port_num).and_then(|p| p.info.as_ref()) else {
            return;
        };
        let is_switch = n.is_switch();
        // A switch's PortInfo LocalPortNum is the port the SMP entered
        // by: along the path it was first reached by, the NodeInfo's.
        let local_port = if is_switch {
            n.info.local_port_num
        } else {
            pi.local_port_num
        };
        let from = self.from;
        let is_from = from.is_some_and(|f| f.node == node && f.port == port_num);
        if port_num == 0
            || pi.port_phys_state != PhysPortState::LINK_UP
            || !((is_switch && port_num != local_port) || is_from)
        {
            return;
        }
        // retract_dpath / extend_dpath: nothing once a route went one
        // hop beyond the limit.
        let limit = self.scan.max_hops;
        if limit != 0 && self.max_hops > limit {
            return;
        }
        let lid_start = self.scan.lid_start.is_some();
        let back = !is_switch && from.is_some_and(|f| f.node == node) && path.len() > 1;
        let next: Rc<[u8]> = if back {
            self.max_hops += 1;
            path[..path.len() - 1].into()
        } else {
            // No directed route on through a CA reached by LID.
            if path.len() > 62 || (lid_start && !is_switch) {
                return;
            }
            let p: Rc<[u8]> = path.iter().copied().chain([port_num]).collect();
            let initial = if lid_start { 0 } else { self.scan.path.len() };
            if (p.len() - initial) as u32 > self.max_hops {
                self.max_hops += 1;
            }
            p
        };
        self.q.push_back(Vq::NodeInfo {
            path: next,
            from: Some(PortRef {
                node,
                port: port_num,
            }),
            back,
        });
    }
}

/// Builds the model libibnetdisc would, from phase 1's answers. `show`
/// also records the `--show` lines. `None` when not even the local
/// node answered.
#[must_use]
pub fn replay(g: &Gathered, show: bool) -> Option<Fabric> {
    replay_scan(g, show, &Scan::default()).map(|s| s.fabric)
}

/// [`replay`] of a partial scan: from `scan`'s start, within its hop
/// limit. When the start did not answer: `None` for the whole fabric's
/// scan, an empty fabric for a partial one.
#[must_use]
pub fn replay_scan(g: &Gathered, show: bool, scan: &Scan) -> Option<Scanned> {
    // A LID reaches the node at the port it names (a CA) or its
    // management port (a switch, whose entry port is then expanded as
    // the start's own: either way every LinkUp port).
    let base = scan.lid_start.and_then(|(guid, port)| {
        let n = g.nodes.get(&guid)?;
        let mut ni = n.info.clone();
        if !n.is_switch() {
            ni.port_guid = g
                .via
                .values()
                .chain(g.root.as_ref())
                .find(|v| v.node_guid == guid && v.local_port_num == port)
                .map_or(ni.port_guid, |v| v.port_guid);
            ni.local_port_num = port;
        }
        Some(ni)
    });
    if scan.lid_start.is_some() && base.is_none() {
        return None;
    }
    let mut r = Replay {
        g,
        scan,
        base,
        errors: Vec::new(),
        nodes: Vec::new(),
        gnodes: Vec::new(),
        by_guid: FastMap::default(),
        q: VecDeque::new(),
        from: None,
        total: 0,
        max_hops: 0,
        show,
        show_lines: Vec::new(),
        port_order: Vec::new(),
    };
    r.run();
    let initial = if scan.lid_start.is_some() {
        0
    } else {
        scan.path.len() as u32
    };
    let Some(from) = r.from else {
        // A partial scan whose start did not answer finds nothing (the
        // whole fabric's start is the local node: no fabric at all).
        return (*scan != Scan::default()).then(|| Scanned {
            fabric: Fabric {
                nodes: Vec::new(),
                from_node: 0,
                from_port: 0,
                total_mads: r.total,
                max_hops: initial,
                show_lines: r.show_lines,
                port_order: Vec::new(),
            },
            errors: r.errors,
        });
    };
    // Ports libibnetdisc created without PortInfo hold zeros.
    let zero = zero_port_info();
    for n in &mut r.nodes {
        for p in n.ports.iter_mut().flatten() {
            if p.info.is_none() {
                p.info.clone_from(&zero);
            }
        }
    }
    Some(Scanned {
        fabric: Fabric {
            nodes: r.nodes,
            from_node: from.node,
            from_port: from.port,
            total_mads: r.total,
            max_hops: r.max_hops + initial,
            show_lines: r.show_lines,
            port_order: r.port_order,
        },
        errors: r.errors,
    })
}
