//! The SA of the simulated fabric: a [`RecordSource`] built from SM-lite's
//! view of the subnet, for [`mad_agents::sa::SaResponder`] at the SM's
//! port ([`crate::Subnet`] runs it).
//!
//! [`SubnetView`] is a snapshot of what SM-lite found and configured in
//! its last finished sweep; [`FabricSa`] serves it and keeps the records
//! clients register.
//!
//! # Records served
//! | record | one per | from |
//! |---|---|---|
//! | NodeRecord | LID-bearing port (a CA port; a switch's port 0) | NodeInfo (PortGUID / LocalPortNum of that port), NodeDescription |
//! | PortInfoRecord | port read in the sweep (every switch port, the CA ports with a link) | PortInfo as read, with what SM-lite set (LID, MasterSMLID, GID prefix, SubnetTimeOut, LMC, M_Key, state Active for a linked port once the subnet is up) |
//! | SwitchInfoRecord | switch | SwitchInfo with LinearFDBTop as programmed, PortStateChange clear |
//! | LinkRecord | link, each direction | the links the sweep found (switch port 0 LID for switch ends) |
//! | PathRecord | pair of LID-bearing ports with a route, each (SLID, DLID) pair of their LID ranges (the pairs of equal path bits first, as OpenSM lists them) | following the switches' LFTs: MTU the smallest MTUCap, rate the slowest link, P_Key the first the ends share (none shared: no record; 0xFFFF without partitions), PacketLifeTime 18, reversible; SL the one asked for (ComponentMask SL), else 0 (the default partition's); with QoS on, as OpenSM: an SL whose VL is 15 on the source port's or a switch output port's SL2VL table gets no record |
//! | GUIDInfoRecord | LID-bearing port | block 0, GUID 0 the port GUID |
//! | P_KeyTableRecord | LID-bearing port and linked switch port, each block | the tables SM-lite programs from the partitions ([`crate::partitions`]); without them block 0: 0xFFFF |
//! | SLtoVLMappingTableRecord | CA port (InputPort / OutputPort 0); switch: pair of its ports, port 0 included | with QoS on, the table SM-lite programmed there (`crate::qos::node_sets`), else the fabric's defaults; listed by OpenSM's rules (the source matches these itself, [`RecordSource::exact`]) |
//! | VLArbitrationTableRecord | block 1–4 of a CA port (a query for the CA's port 0 gets its own port, as OpenSM answers) and of every switch port | as above: the block SM-lite programmed, else the default |
//! | LinearForwardingTableRecord | switch, 64-LID block up to LinearFDBTop | the LFTs SM-lite computed |
//! | SMInfoRecord | the SM | SM-lite's SMInfo (SM_Key 0) |
//! | ServiceRecord | registered service | SubnAdmSet / Delete by clients |
//! | MCMemberRecord | member of a group; a well-known group without members once, PortGID 0 (as OpenSM) | SubnAdmSet (join: a new MGID gets an MLID from 0xC001) / Delete (leave); the IPoIB broadcast group of the default partition (MLID 0xC000) exists from the start |
//! | MulticastForwardingTableRecord | switch, block and position in use | the MFTs SM-lite programs from the members ([`crate::mcast_tables`]) |
//! | InformInfo(Record) | subscription | kept by the responder itself |
//!
//! Candidates are narrowed cheaply before the responder matches the
//! ComponentMask: by LID when the template's LID component is selected,
//! by SLID / SGID and DLID / DGID for PathRecords. A PathRecord query that
//! names neither end gets at most [`MAX_ALL_PAIRS_PATHS`] records (all
//! pairs, in LID order).

mod mcast;
mod records;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use mad_agents::sa::{RecordQuery, RecordSource};
use mad_core::wire::attr::{
    GuidInfo, LinearFwdTable, NodeDescription, PKeyTable, PortInfo, PortState, SlToVlTable, SmInfo,
    SmState, VlArbTable,
};
use mad_core::wire::sa_records::{
    GuidInfoRecord, LftRecord, LinkRecord, McMemberRecord, NodeRecord, PKeyTableRecord, PathRecord,
    PortInfoRecord, Selector, ServiceRecord, Sl2VlRecord, SmInfoRecord, SwitchInfoRecord,
    VlArbRecord,
};
use mad_core::wire::{AttributeId, MadStatus, Repr};

use crate::{PortRef, Subnet, SubnetManager, NO_ROUTE};
use mad_core::wire::attr::DEFAULT_SL2VL;

/// Most PathRecords a query naming neither end gets.
pub const MAX_ALL_PAIRS_PATHS: usize = 65_536;
/// PacketLifeTime of every PathRecord and MCMemberRecord (opensm's
/// default, 4.096 µs × 2^18 ≈ 1 s).
pub const PACKET_LIFE_TIME: u8 = 18;

/// SM-lite's view of the subnet after a sweep, indexed for the SA.
#[derive(Debug, Clone, Default)]
pub struct SubnetView {
    subnet: Subnet,
    sm_lid: u16,
    sm_info: SmInfo,
    prefix: u64,
    subnet_timeout: u8,
    m_key: u64,
    up: bool,
    /// LID-bearing ports in LID order.
    lids: Vec<(u16, PortRef)>,
    by_lid: HashMap<u16, PortRef>,
    by_guid: HashMap<u64, PortRef>,
    /// The groups the partitions ask for (IPoIB broadcast, `mgid=`).
    groups: Vec<crate::partitions::PartitionGroup>,
    /// The QoS tables programmed (QoS on), for the SLs PathRecords give.
    qos: Option<crate::qos::QosConfig>,
}

impl SubnetView {
    /// The view of `sm`'s last finished sweep.
    #[must_use]
    pub fn from_sm(sm: &SubnetManager) -> Self {
        let cfg = sm.config();
        let groups = cfg
            .partitions
            .as_ref()
            .map(crate::partitions::partition_groups)
            .unwrap_or_default();
        let v = Self::new(
            sm.subnet().clone(),
            sm.sm_lid(),
            sm.sm_info(),
            cfg.subnet_prefix,
            cfg.subnet_timeout,
            cfg.m_key,
            sm.is_subnet_up(),
        );
        Self { groups, ..v }.with_qos(cfg.qos.enabled.then(|| cfg.qos.clone()))
    }

    /// The view with the QoS tables SM-lite programmed (`None`: QoS off):
    /// a PathRecord's SL is then one whose VL is not 15 along the path,
    /// as OpenSM chooses it.
    #[must_use]
    pub fn with_qos(mut self, qos: Option<crate::qos::QosConfig>) -> Self {
        self.qos = qos;
        self
    }

    /// A view of `subnet` with the SM at `sm_lid` answering `sm_info`, the
    /// ports configured with this GID prefix, SubnetTimeOut and M_Key;
    /// `up` when the sweep brought every port to Active.
    #[must_use]
    pub fn new(
        subnet: Subnet,
        sm_lid: u16,
        sm_info: SmInfo,
        prefix: u64,
        subnet_timeout: u8,
        m_key: u64,
        up: bool,
    ) -> Self {
        let lids = subnet.lids();
        let by_lid = subnet.all_lids().into_iter().collect();
        let by_guid = lids
            .iter()
            .filter_map(|&(_, r)| Some((subnet.nodes().get(r.0)?.port(r.1)?.guid, r)))
            .collect();
        Self {
            subnet,
            sm_lid,
            sm_info,
            prefix,
            subnet_timeout,
            m_key,
            up,
            lids,
            by_lid,
            by_guid,
            groups: Vec::new(),
            qos: None,
        }
    }

    /// The subnet.
    #[must_use]
    pub fn subnet(&self) -> &Subnet {
        &self.subnet
    }

    /// The SM's LID.
    #[must_use]
    pub fn sm_lid(&self) -> u16 {
        self.sm_lid
    }

    /// Every LID-bearing port, in LID order.
    #[must_use]
    pub fn lids(&self) -> &[(u16, PortRef)] {
        &self.lids
    }

    /// The port holding `lid` (any LID of its range).
    #[must_use]
    pub fn port_by_lid(&self, lid: u16) -> Option<PortRef> {
        self.by_lid.get(&lid).copied()
    }

    /// The GID of a port: prefix and port GUID.
    fn gid(&self, r: PortRef) -> [u8; 16] {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&self.prefix.to_be_bytes());
        if let Some(p) = self.subnet.nodes().get(r.0).and_then(|n| n.port(r.1)) {
            g[8..].copy_from_slice(&p.guid.to_be_bytes());
        }
        g
    }

    /// The LID a record of `node`'s port `port` carries: the port's for a
    /// CA, port 0's for a switch.
    fn record_lid(&self, node: usize, port: u8) -> u16 {
        let Some(n) = self.subnet.nodes().get(node) else {
            return 0;
        };
        if n.is_switch() {
            n.switch_lid()
        } else {
            n.port(port).map_or(0, |p| p.lid)
        }
    }

    /// The PortInfo of a port as it stands after SM-lite configured it.
    #[must_use]
    pub fn port_info(&self, node: usize, port: u8) -> Option<PortInfo> {
        let n = self.subnet.nodes().get(node)?;
        let p = n.port(port)?;
        let mut pi = p.info.clone();
        let lid_bearing = !n.is_switch() || port == 0;
        if lid_bearing && p.lid != 0 {
            pi.lid = p.lid;
            pi.master_sm_lid = self.sm_lid;
            pi.gid_prefix = self.prefix;
            pi.subnet_timeout = self.subnet_timeout & 0x1F;
            pi.lmc = p.lmc;
            pi.m_key = self.m_key;
        }
        if self.up && port != 0 && p.link_up() {
            pi.port_state = PortState::ACTIVE;
        }
        Some(pi)
    }

    /// True when a record of `node`'s port `port` answers a query for
    /// `lid` (`None`: any): `lid` is one of the LIDs of that port's range,
    /// or of the switch's port 0 for a switch port. OpenSM looks records
    /// up by any LID of a port's range and answers with the base LID.
    fn selects(&self, lid: Option<u16>, node: usize, port: u8) -> bool {
        let Some(l) = lid else { return true };
        self.by_lid.get(&l).is_some_and(|&(n, p)| {
            n == node && (p == port || self.subnet.nodes().get(n).is_some_and(|x| x.is_switch()))
        })
    }

    /// Nodes to list for a query whose template LID is `lid` (when its
    /// LID component is selected), else every node.
    fn nodes_for(&self, lid: Option<u16>) -> Vec<usize> {
        match lid {
            Some(l) => self.by_lid.get(&l).map(|r| r.0).into_iter().collect(),
            None => (0..self.subnet.nodes().len()).collect(),
        }
    }
}

/// Multicast groups joined through MCMemberRecord Set.
#[derive(Debug, Default)]
struct McStore {
    members: Vec<McMemberRecord>,
    next_mlid: u16,
    next_mgid: u32,
    /// Groups that exist without members (the IPoIB broadcast group).
    well_known: Vec<McMemberRecord>,
    /// Bumped by every change of membership.
    generation: u64,
}

/// The record source of the fabric's SA: the current [`SubnetView`] plus
/// the services and multicast members clients registered.
#[derive(Debug, Default)]
pub struct FabricSa {
    view: RwLock<Arc<SubnetView>>,
    services: Mutex<Vec<ServiceRecord>>,
    mcast: Mutex<McStore>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FabricSa {
    /// A source serving `view`.
    #[must_use]
    pub fn new(view: SubnetView) -> Self {
        let mut mc = McStore::with_default_groups();
        mc.add_partition_groups(&view.groups);
        Self {
            view: RwLock::new(Arc::new(view)),
            mcast: Mutex::new(mc),
            ..Self::default()
        }
    }

    /// Serves `view` from now on (after a re-sweep); groups its
    /// partitions ask for that do not exist yet are made.
    pub fn update(&self, view: SubnetView) {
        lock(&self.mcast).add_partition_groups(&view.groups);
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(view);
    }

    /// The view served.
    #[must_use]
    pub fn view(&self) -> Arc<SubnetView> {
        self.view
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The services registered.
    #[must_use]
    pub fn services(&self) -> Vec<ServiceRecord> {
        lock(&self.services).clone()
    }

    /// The multicast members registered.
    #[must_use]
    pub fn mc_members(&self) -> Vec<McMemberRecord> {
        lock(&self.mcast).members.clone()
    }
}

/// The template's first 16 bits, when the query selects component 0 (the
/// LID of every LID-keyed record).
fn lid_filter(q: &RecordQuery<'_>) -> Option<u16> {
    (q.comp_mask & 1 != 0).then(|| u16::from_be_bytes([byte(q.template, 0), byte(q.template, 1)]))
}

fn same_service(a: &ServiceRecord, b: &ServiceRecord) -> bool {
    a.service_id == b.service_id
        && a.service_gid == b.service_gid
        && a.service_pkey == b.service_pkey
}

impl RecordSource for FabricSa {
    fn records(&self, q: &RecordQuery<'_>) -> Option<Vec<Vec<u8>>> {
        let v = self.view();
        let lid = lid_filter(q);
        let recs = match q.attr_id {
            AttributeId::SA_NODE_RECORD => v.node_records(lid),
            AttributeId::SA_PORTINFO_RECORD => v.port_info_records(lid),
            AttributeId::SA_SWITCHINFO_RECORD => v.switch_records(lid),
            AttributeId::SA_LFT_RECORD => {
                let block = (q.comp_mask & LftRecord::COMP_BLOCK_NUM != 0)
                    .then(|| u16::from_be_bytes([byte(q.template, 2), byte(q.template, 3)]));
                v.lft_records(lid, block)
            }
            AttributeId::SA_LINK_RECORD => v.link_records(lid),
            AttributeId::SA_GUIDINFO_RECORD => v.guid_records(lid),
            AttributeId::SA_PKEY_TABLE_RECORD => {
                // BlockNum at 2 (component 1).
                let block = (q.comp_mask & 2 != 0)
                    .then(|| u16::from_be_bytes([byte(q.template, 2), byte(q.template, 3)]));
                v.pkey_records(lid, block)
            }
            AttributeId::SA_SL2VL_RECORD => v.sl2vl_records(q),
            AttributeId::SA_VLARB_RECORD => v.vlarb_records(q),
            AttributeId::SA_SMINFO_RECORD => v.sm_info_records(lid),
            AttributeId::SA_PATH_RECORD => v.path_records(q),
            AttributeId::SA_MFT_RECORD => self.mft_records(&v, lid),
            AttributeId::SA_SERVICE_RECORD => lock(&self.services)
                .iter()
                .filter_map(|r| r.to_vec().ok())
                .collect(),
            AttributeId::SA_MCMEMBER_RECORD => self.mc_records(&v, q.src.lid),
            _ => return None,
        };
        Some(recs)
    }

    fn matched_components(&self, q: &RecordQuery<'_>) -> u64 {
        // A LID-keyed record asked for by a LID of a port's range: the
        // candidates are that port's, and carry its base LID.
        match q.attr_id {
            AttributeId::SA_NODE_RECORD
            | AttributeId::SA_PORTINFO_RECORD
            | AttributeId::SA_GUIDINFO_RECORD
            | AttributeId::SA_PKEY_TABLE_RECORD => q.comp_mask & 1,
            _ => 0,
        }
    }

    fn exact(&self, q: &RecordQuery<'_>) -> bool {
        matches!(
            q.attr_id,
            AttributeId::SA_SL2VL_RECORD | AttributeId::SA_VLARB_RECORD
        )
    }

    fn set(&self, q: &RecordQuery<'_>) -> Result<Vec<u8>, u16> {
        match q.attr_id {
            AttributeId::SA_SERVICE_RECORD => {
                let r =
                    ServiceRecord::parse(q.template).map_err(|_| MadStatus::SA_REQ_INVALID.0)?;
                let mut s = lock(&self.services);
                match s.iter_mut().find(|x| same_service(x, &r)) {
                    Some(x) => *x = r.clone(),
                    None => s.push(r.clone()),
                }
                r.to_vec().map_err(|_| MadStatus::SA_REQ_INVALID.0)
            }
            AttributeId::SA_MCMEMBER_RECORD => self.join(q),
            _ => Err(MadStatus::METHOD_ATTR_UNSUPPORTED.0),
        }
    }

    fn delete(&self, q: &RecordQuery<'_>) -> Result<Vec<u8>, u16> {
        match q.attr_id {
            AttributeId::SA_SERVICE_RECORD => {
                let r =
                    ServiceRecord::parse(q.template).map_err(|_| MadStatus::SA_REQ_INVALID.0)?;
                let mut s = lock(&self.services);
                let i = s
                    .iter()
                    .position(|x| same_service(x, &r))
                    .ok_or(MadStatus::SA_REQ_INVALID.0)?;
                s.remove(i)
                    .to_vec()
                    .map_err(|_| MadStatus::SA_REQ_INVALID.0)
            }
            AttributeId::SA_MCMEMBER_RECORD => self.leave(q),
            _ => Err(MadStatus::METHOD_ATTR_UNSUPPORTED.0),
        }
    }
}

/// Byte `i` of `b`, 0 past its end (a short template).
fn byte(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}
