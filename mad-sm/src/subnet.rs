//! The subnet as one sweep discovered it: nodes, their ports as read,
//! the links between them, and (once routed) the LIDs and linear
//! forwarding tables SM-lite assigned.

use std::sync::Arc;

use mad_core::hash::FastMap;

use crate::lft::Lft;
use mad_core::wire::attr::{NodeInfo, NodeType, PhysPortState, PortInfo, SwitchInfo};
use mad_core::wire::smp::DrPath;

/// A node index into [`Subnet::nodes`].
pub type NodeIdx = usize;

/// One end of a link: (node index, port number).
pub type PortRef = (NodeIdx, u8);

/// One port of a discovered node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmPort {
    /// Port number (0 is a switch's management port).
    pub num: u8,
    /// Port GUID: a CA's from NodeInfo when the port was entered; a
    /// switch's ports all carry the switch's port-0 GUID.
    pub guid: u64,
    /// PortInfo as read during the sweep (before SM-lite changed it).
    pub info: PortInfo,
    /// The directed route that reaches this port's SMA: for a CA port the
    /// route that enters the CA through this port, for a switch port the
    /// switch's route.
    pub path: DrPath,
    /// LID SM-lite assigned (CA ports and switch port 0; 0 for switch
    /// external ports and ports without a LID).
    pub lid: u16,
    /// LMC SM-lite assigned with the LID: the port holds the aligned
    /// range `lid .. lid + 2^lmc` (0 for a switch's port 0, as OpenSM
    /// gives it without `lmc_esp0`).
    pub lmc: u8,
}

impl SmPort {
    /// The LIDs the port holds: `lid .. lid + 2^lmc` (empty without a
    /// LID).
    #[must_use]
    pub fn lid_range(&self) -> std::ops::Range<u32> {
        if self.lid == 0 {
            return 0..0;
        }
        let base = u32::from(self.lid);
        base..base + (1u32 << self.lmc.min(crate::MAX_LMC))
    }

    /// True when the physical link is up (PortPhysicalState LinkUp).
    #[must_use]
    pub fn link_up(&self) -> bool {
        self.info.port_phys_state == PhysPortState::LINK_UP
    }
}

/// One discovered node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmNode {
    /// NodeInfo as first read.
    pub info: NodeInfo,
    /// NodeDescription text (empty if it could not be read).
    pub desc: String,
    /// SwitchInfo as read (switches only).
    pub switch_info: Option<SwitchInfo>,
    /// Ports by number (index 0 is a switch's port 0; unused on a CA).
    /// A port is `None` when it was not read: a CA port SM-lite never
    /// entered, or a PortInfo Get that failed.
    pub ports: Vec<Option<SmPort>>,
    /// The directed route by which the node was first reached.
    pub path: DrPath,
    /// Linear forwarding table computed for a switch (entry = egress
    /// port for the LID of that index, 0xFF = no route); empty for CAs
    /// and before routing. Stored by block, identical blocks shared
    /// ([`crate::lft`]).
    pub lft: Lft,
}

impl SmNode {
    /// True for a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::SWITCH
    }

    /// Node GUID.
    #[must_use]
    pub fn guid(&self) -> u64 {
        self.info.node_guid
    }

    /// The port numbered `num`, if it was read.
    #[must_use]
    pub fn port(&self, num: u8) -> Option<&SmPort> {
        self.ports.get(usize::from(num)).and_then(Option::as_ref)
    }

    /// The switch's LID (its port 0's), or 0.
    #[must_use]
    pub fn switch_lid(&self) -> u16 {
        if self.is_switch() {
            self.port(0).map_or(0, |p| p.lid)
        } else {
            0
        }
    }
}

/// The subnet as one sweep saw it. Cloning is cheap (the contents are
/// shared, and copied only if a clone is changed): the SA serves a
/// clone of SM-lite's subnet after every sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subnet {
    inner: Arc<Inner>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Inner {
    nodes: Vec<SmNode>,
    by_guid: FastMap<u64, NodeIdx>,
    links: FastMap<PortRef, PortRef>,
    local: Option<PortRef>,
    max_lid: u16,
    pkeys: Option<Arc<PKeyPlan>>,
}

impl Subnet {
    /// Every node, in discovery (breadth-first) order.
    #[must_use]
    pub fn nodes(&self) -> &[SmNode] {
        &self.inner.nodes
    }

    /// The node with this node GUID.
    #[must_use]
    pub fn node_by_guid(&self, guid: u64) -> Option<(NodeIdx, &SmNode)> {
        let i = *self.inner.by_guid.get(&guid)?;
        Some((i, &self.inner.nodes[i]))
    }

    /// The other end of the link at `end`, if one was seen.
    #[must_use]
    pub fn remote(&self, end: PortRef) -> Option<PortRef> {
        self.inner.links.get(&end).copied()
    }

    /// Every link once, its ends in ascending order.
    #[must_use]
    pub fn links(&self) -> Vec<(PortRef, PortRef)> {
        let mut v: Vec<_> = self
            .inner
            .links
            .iter()
            .filter(|(a, b)| a <= b)
            .map(|(a, b)| (*a, *b))
            .collect();
        v.sort_unstable();
        v
    }

    /// The SM's own node and port.
    #[must_use]
    pub fn local(&self) -> Option<PortRef> {
        self.inner.local
    }

    /// Highest LID assigned (0 before routing).
    #[must_use]
    pub fn max_lid(&self) -> u16 {
        self.inner.max_lid
    }

    /// Number of switches.
    #[must_use]
    pub fn switch_count(&self) -> usize {
        self.inner.nodes.iter().filter(|n| n.is_switch()).count()
    }

    /// Every LID routed, with the port holding it, in LID order: each
    /// LID of every port's range (see [`SmPort::lmc`]), switch port 0
    /// and CA ports. With LMC 0 the same as [`Subnet::lids`].
    #[must_use]
    pub fn all_lids(&self) -> Vec<(u16, PortRef)> {
        self.sorted_lids(|p| p.lid_range())
    }

    /// Every (base LID, node, port) assigned, in LID order: switch port 0
    /// and CA ports (one entry a port; [`Subnet::all_lids`] has every
    /// LID of the ranges).
    #[must_use]
    pub fn lids(&self) -> Vec<(u16, PortRef)> {
        self.sorted_lids(|p| {
            let l = u32::from(p.lid);
            if l == 0 {
                0..0
            } else {
                l..l + 1
            }
        })
    }

    /// The LIDs `of` gives each port, with the port, in LID order.
    fn sorted_lids(&self, of: impl Fn(&SmPort) -> std::ops::Range<u32>) -> Vec<(u16, PortRef)> {
        let mut v: Vec<(u16, PortRef)> = Vec::new();
        for (i, n) in self.inner.nodes.iter().enumerate() {
            for p in n.ports.iter().flatten() {
                v.extend(
                    of(p)
                        .filter_map(|l| u16::try_from(l).ok())
                        .map(|l| (l, (i, p.num))),
                );
            }
        }
        v.sort_unstable();
        v
    }

    /// The port that holds `lid` (any LID of its range).
    #[must_use]
    pub fn port_by_lid(&self, lid: u16) -> Option<PortRef> {
        self.inner.nodes.iter().enumerate().find_map(|(i, n)| {
            n.ports
                .iter()
                .flatten()
                .find(|p| p.lid_range().contains(&u32::from(lid)))
                .map(|p| (i, p.num))
        })
    }

    /// The LID of the port with this port GUID (a switch's GUID gives
    /// its port-0 LID).
    #[must_use]
    pub fn lid_of_port_guid(&self, guid: u64) -> Option<u16> {
        self.inner
            .nodes
            .iter()
            .flat_map(|n| n.ports.iter().flatten())
            .find(|p| p.guid == guid && p.lid != 0)
            .map(|p| p.lid)
    }

    /// The P_Key tables SM-lite programs (`None`: partitions are not
    /// managed, the ports keep what they hold).
    #[must_use]
    pub fn pkey_plan(&self) -> Option<&PKeyPlan> {
        self.inner.pkeys.as_deref()
    }

    /// The P_Key table SM-lite gives port `r` (an end port, or a switch
    /// port facing one), when partitions are managed.
    #[must_use]
    pub fn pkey_table(&self, r: PortRef) -> Option<&[u16]> {
        self.pkey_plan()?.tables.get(&r).map(Vec::as_slice)
    }

    // ---- building (crate-internal) ----

    pub(crate) fn set_pkey_plan(&mut self, plan: Option<PKeyPlan>) {
        self.m().pkeys = plan.map(Arc::new);
    }

    /// The contents, for a change (copied first if a clone shares them).
    fn m(&mut self) -> &mut Inner {
        Arc::make_mut(&mut self.inner)
    }

    pub(crate) fn node_mut(&mut self, i: NodeIdx) -> Option<&mut SmNode> {
        self.m().nodes.get_mut(i)
    }

    pub(crate) fn index_of(&self, guid: u64) -> Option<NodeIdx> {
        self.inner.by_guid.get(&guid).copied()
    }

    pub(crate) fn add_node(&mut self, info: NodeInfo, path: DrPath) -> NodeIdx {
        let inner = self.m();
        let i = inner.nodes.len();
        inner.by_guid.insert(info.node_guid, i);
        let nports = usize::from(info.num_ports) + 1;
        inner.nodes.push(SmNode {
            info,
            desc: String::new(),
            switch_info: None,
            ports: vec![None; nports],
            path,
            lft: Lft::default(),
        });
        i
    }

    /// Forgets the link at `a` (both of its ends).
    pub(crate) fn remove_link(&mut self, a: PortRef) {
        let inner = self.m();
        if let Some(b) = inner.links.remove(&a) {
            inner.links.remove(&b);
        }
    }

    pub(crate) fn add_link(&mut self, a: PortRef, b: PortRef) {
        let links = &mut self.m().links;
        links.insert(a, b);
        links.insert(b, a);
    }

    pub(crate) fn set_local(&mut self, local: PortRef) {
        self.m().local = Some(local);
    }

    pub(crate) fn set_max_lid(&mut self, lid: u16) {
        self.m().max_lid = lid;
    }
}

/// The P_Key tables partitions give a subnet's ports
/// ([`crate::partitions::pkey_tables`]); kept with the subnet it was made
/// for ([`Subnet::pkey_plan`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PKeyPlan {
    /// The P_Key table of each port (end ports, and switch ports linked
    /// to end ports), index 0 first, no trailing zeros.
    pub tables: FastMap<PortRef, Vec<u16>>,
    /// Switch external ports to enforce partitions on (inbound and
    /// outbound); every other switch external port gets none.
    pub enforce: Vec<PortRef>,
    /// Ports whose table was cut to their capacity, with the P_Keys
    /// that did not fit.
    pub overflow: Vec<(PortRef, Vec<u16>)>,
}
