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
//! | PortInfoRecord | port read in the sweep (every switch port, the CA ports with a link) | PortInfo as read, with what SM-lite set (LID, MasterSMLID, GID prefix, SubnetTimeOut, LMC 0, M_Key, state Active for a linked port once the subnet is up) |
//! | SwitchInfoRecord | switch | SwitchInfo with LinearFDBTop as programmed, PortStateChange clear |
//! | LinkRecord | link, each direction | the links the sweep found (switch port 0 LID for switch ends) |
//! | PathRecord | pair of LID-bearing ports with a route | following the switches' LFTs: MTU the smallest MTUCap, rate the slowest link, P_Key 0xFFFF, SL 0, PacketLifeTime 18, reversible |
//! | GUIDInfoRecord | LID-bearing port | block 0, GUID 0 the port GUID |
//! | P_KeyTableRecord | LID-bearing port and linked switch port | block 0: 0xFFFF (SM-lite runs the default partition only) |
//! | SLtoVLMappingTableRecord, VLArbitrationTableRecord | CA port | the fabric's defaults |
//! | LinearForwardingTableRecord | switch, 64-LID block up to LinearFDBTop | the LFTs SM-lite computed |
//! | SMInfoRecord | the SM | SM-lite's SMInfo (SM_Key 0) |
//! | ServiceRecord | registered service | SubnAdmSet / Delete by clients |
//! | MCMemberRecord | member of a group | SubnAdmSet (join: a new MGID gets an MLID from 0xC001) / Delete (leave) |
//! | InformInfo(Record) | subscription | kept by the responder itself |
//!
//! Candidates are narrowed cheaply before the responder matches the
//! ComponentMask: by LID when the template's LID component is selected,
//! by SLID / SGID and DLID / DGID for PathRecords. A PathRecord query that
//! names neither end gets at most [`MAX_ALL_PAIRS_PATHS`] records (all
//! pairs, in LID order).

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

use crate::fabric::DEFAULT_SL2VL;
use crate::sm::{PortRef, Subnet, SubnetManager, NO_ROUTE};

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
}

impl SubnetView {
    /// The view of `sm`'s last finished sweep.
    #[must_use]
    pub fn from_sm(sm: &SubnetManager) -> Self {
        let cfg = sm.config();
        Self::new(
            sm.subnet().clone(),
            sm.sm_lid(),
            sm.sm_info(),
            cfg.subnet_prefix,
            cfg.subnet_timeout,
            cfg.m_key,
            sm.is_subnet_up(),
        )
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
        let by_lid = lids.iter().map(|&(l, r)| (l, r)).collect();
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

    /// The port holding `lid`.
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
            pi.lmc = 0;
            pi.m_key = self.m_key;
        }
        if self.up && port != 0 && p.link_up() {
            pi.port_state = PortState::ACTIVE;
        }
        Some(pi)
    }

    /// Nodes to list for a query whose template LID is `lid` (when its
    /// LID component is selected), else every node.
    fn nodes_for(&self, lid: Option<u16>) -> Vec<usize> {
        match lid {
            Some(l) => self.by_lid.get(&l).map(|r| r.0).into_iter().collect(),
            None => (0..self.subnet.nodes().len()).collect(),
        }
    }

    fn node_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            let desc = NodeDescription::from_text(&n.desc);
            let ports: Vec<u8> = if n.is_switch() {
                vec![0]
            } else {
                n.ports
                    .iter()
                    .flatten()
                    .filter(|p| p.lid != 0)
                    .map(|p| p.num)
                    .collect()
            };
            for port in ports {
                let l = self.record_lid(i, port);
                if l == 0 || lid.is_some_and(|x| x != l) {
                    continue;
                }
                let mut ni = n.info.clone();
                if !n.is_switch() {
                    ni.local_port_num = port;
                    ni.port_guid = n.port(port).map_or(ni.port_guid, |p| p.guid);
                }
                push(
                    &mut out,
                    &NodeRecord {
                        lid: l,
                        node_info: ni,
                        node_desc: desc.clone(),
                        ..NodeRecord::default()
                    },
                );
            }
        }
        out
    }

    fn port_info_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            for p in n.ports.iter().flatten() {
                let l = self.record_lid(i, p.num);
                if lid.is_some_and(|x| x != l) || (n.is_switch() && l == 0) {
                    continue;
                }
                let Some(pi) = self.port_info(i, p.num) else {
                    continue;
                };
                push(
                    &mut out,
                    &PortInfoRecord {
                        lid: l,
                        port_num: p.num,
                        options: 0,
                        port_info: pi,
                    },
                );
            }
        }
        out
    }

    fn switch_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            let Some(si) = &n.switch_info else { continue };
            let mut si = si.clone();
            si.linear_fdb_top = self.lft_top(i);
            si.port_state_change = false;
            push(
                &mut out,
                &SwitchInfoRecord {
                    lid: n.switch_lid(),
                    switch_info: si,
                    ..SwitchInfoRecord::default()
                },
            );
        }
        out
    }

    /// LinearFDBTop SM-lite programs into switch `i`.
    fn lft_top(&self, i: usize) -> u16 {
        let cap = self.subnet.nodes()[i]
            .switch_info
            .as_ref()
            .map_or(0, |s| s.linear_fdb_cap);
        let max = self.subnet.max_lid();
        if cap == 0 {
            max
        } else {
            max.min(cap - 1)
        }
    }

    fn lft_records(&self, lid: Option<u16>, block: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            if !n.is_switch() || n.lft.is_empty() {
                continue;
            }
            let blocks = usize::from(self.lft_top(i)) / LinearFwdTable::ENTRIES + 1;
            for b in 0..blocks {
                if block.is_some_and(|x| usize::from(x) != b) {
                    continue;
                }
                let mut t = LinearFwdTable::default();
                for (k, e) in t.ports.iter_mut().enumerate() {
                    *e = n
                        .lft
                        .get(b * LinearFwdTable::ENTRIES + k)
                        .copied()
                        .unwrap_or(NO_ROUTE);
                }
                push(
                    &mut out,
                    &LftRecord {
                        lid: n.switch_lid(),
                        block_num: b as u16,
                        lft: t,
                        ..LftRecord::default()
                    },
                );
            }
        }
        out
    }

    fn link_records(&self, from_lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (a, b) in self.subnet.links() {
            for (x, y) in [(a, b), (b, a)] {
                let fl = self.record_lid(x.0, x.1);
                if from_lid.is_some_and(|l| l != fl) {
                    continue;
                }
                push(
                    &mut out,
                    &LinkRecord {
                        from_lid: fl,
                        from_port: x.1,
                        to_port: y.1,
                        to_lid: self.record_lid(y.0, y.1),
                        ..LinkRecord::default()
                    },
                );
            }
        }
        out
    }

    fn guid_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for &(l, r) in &self.lids {
            if lid.is_some_and(|x| x != l) {
                continue;
            }
            let Some(p) = self.subnet.nodes().get(r.0).and_then(|n| n.port(r.1)) else {
                continue;
            };
            let mut g = GuidInfo::default();
            g.guids[0] = p.guid;
            push(
                &mut out,
                &GuidInfoRecord {
                    lid: l,
                    block_num: 0,
                    guid_info: g,
                    ..GuidInfoRecord::default()
                },
            );
        }
        out
    }

    fn pkey_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            for p in n.ports.iter().flatten() {
                let l = self.record_lid(i, p.num);
                let listed = if n.is_switch() {
                    p.num == 0 || p.link_up()
                } else {
                    p.lid != 0
                };
                if !listed || l == 0 || lid.is_some_and(|x| x != l) {
                    continue;
                }
                let mut t = PKeyTable::default();
                t.pkeys[0] = 0xFFFF;
                push(
                    &mut out,
                    &PKeyTableRecord {
                        lid: l,
                        block_num: 0,
                        port_num: p.num,
                        pkey_table: t,
                        ..PKeyTableRecord::default()
                    },
                );
            }
        }
        out
    }

    fn sl2vl_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut t = SlToVlTable::default();
        for (sl, vl) in t.vl.iter_mut().enumerate() {
            let b = DEFAULT_SL2VL[sl / 2];
            *vl = if sl % 2 == 0 { b >> 4 } else { b & 0x0F };
        }
        self.ca_ports(lid)
            .map(|(l, _)| {
                Sl2VlRecord {
                    lid: l,
                    sl2vl: t.clone(),
                    ..Sl2VlRecord::default()
                }
                .to_vec()
                .unwrap_or_default()
            })
            .collect()
    }

    fn vlarb_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let table = crate::fabric::default_vlarb();
        let mut out = Vec::new();
        for (l, r) in self.ca_ports(lid) {
            for block in 1u8..=4 {
                let first = match block {
                    1 => 0,
                    2 => 32,
                    3 => 64,
                    _ => 96,
                };
                let mut t = VlArbTable::default();
                t.entries.copy_from_slice(&table[first..first + 32]);
                push(
                    &mut out,
                    &VlArbRecord {
                        lid: l,
                        output_port: r.1,
                        block_num: block,
                        vl_arb: t,
                        ..VlArbRecord::default()
                    },
                );
            }
        }
        out
    }

    fn ca_ports(&self, lid: Option<u16>) -> impl Iterator<Item = (u16, PortRef)> + '_ {
        self.lids.iter().copied().filter(move |&(l, r)| {
            lid.is_none_or(|x| x == l)
                && self.subnet.nodes().get(r.0).is_some_and(|n| !n.is_switch())
        })
    }

    fn sm_info_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        if self.sm_lid == 0 || lid.is_some_and(|l| l != self.sm_lid) {
            return Vec::new();
        }
        let mut info = self.sm_info.clone();
        info.sm_key = 0;
        if !self.up && info.sm_state == SmState::MASTER {
            info.sm_state = SmState::DISCOVERING;
        }
        let mut out = Vec::new();
        push(
            &mut out,
            &SmInfoRecord {
                lid: self.sm_lid,
                sm_info: info,
                ..SmInfoRecord::default()
            },
        );
        out
    }

    /// The route from LID-bearing port `s` to `d` by the switches' LFTs:
    /// (switch hops, MTU, rate).
    fn route(&self, s: PortRef, d: PortRef) -> Option<(u32, u8, u8)> {
        let nodes = self.subnet.nodes();
        let dlid = self.record_lid(d.0, d.1);
        let mut mtu = u8::MAX;
        let mut gbps = u32::MAX;
        let mut take = |a: PortRef| {
            if let Some(p) = nodes.get(a.0).and_then(|n| n.port(a.1)) {
                mtu = mtu.min(p.info.mtu_cap);
                if a.1 != 0 || !nodes[a.0].is_switch() {
                    gbps = gbps.min(link_gbps_tenths(&p.info));
                }
            }
        };
        if s == d {
            take(s);
            return Some((0, mtu, rate_code(gbps)));
        }
        let mut cur = if nodes.get(s.0)?.is_switch() {
            s.0
        } else {
            take(s);
            let r = self.subnet.remote(s)?;
            take(r);
            if r == d {
                return Some((1, mtu, rate_code(gbps)));
            }
            if !nodes.get(r.0)?.is_switch() {
                return None;
            }
            r.0
        };
        let mut hops = 1u32;
        for _ in 0..=nodes.len() {
            if d == (cur, 0) {
                take(d);
                return Some((hops, mtu, rate_code(gbps)));
            }
            let out = *nodes[cur].lft.get(usize::from(dlid))?;
            if out == NO_ROUTE || out == 0 {
                return None;
            }
            take((cur, out));
            let next = self.subnet.remote((cur, out))?;
            take(next);
            hops += 1;
            if next == d {
                return Some((hops, mtu, rate_code(gbps)));
            }
            if !nodes.get(next.0)?.is_switch() {
                return None;
            }
            cur = next.0;
        }
        None
    }

    fn path_records(&self, q: &RecordQuery<'_>) -> Vec<Vec<u8>> {
        let t = q.template;
        let m = q.comp_mask;
        let lid_at = |off: usize| u16::from_be_bytes([byte(t, off), byte(t, off + 1)]);
        let guid_at = |off: usize| {
            let mut b = [0u8; 8];
            for (k, x) in b.iter_mut().enumerate() {
                *x = byte(t, off + 8 + k);
            }
            u64::from_be_bytes(b)
        };
        // PathRecord: DGID at 8, SGID at 24, DLID at 40, SLID at 42.
        let end = |lid_bit: u64, lid_off: usize, gid_bit: u64, gid_off: usize| {
            if m & lid_bit != 0 {
                Some(
                    self.by_lid
                        .get(&lid_at(lid_off))
                        .copied()
                        .into_iter()
                        .collect(),
                )
            } else if m & gid_bit != 0 {
                Some(
                    self.by_guid
                        .get(&guid_at(gid_off))
                        .copied()
                        .into_iter()
                        .collect(),
                )
            } else {
                None
            }
        };
        let all: Vec<PortRef> = self.lids.iter().map(|&(_, r)| r).collect();
        let src: Option<Vec<PortRef>> = end(PathRecord::COMP_SLID, 42, PathRecord::COMP_SGID, 24);
        let dst: Option<Vec<PortRef>> = end(PathRecord::COMP_DLID, 40, PathRecord::COMP_DGID, 8);
        let capped = src.is_none() && dst.is_none();
        let src = src.unwrap_or_else(|| all.clone());
        let dst = dst.unwrap_or(all);
        let service_id = if m & PathRecord::COMP_SERVICE_ID != 0 {
            let mut b = [0u8; 8];
            for (k, x) in b.iter_mut().enumerate() {
                *x = byte(t, k);
            }
            u64::from_be_bytes(b)
        } else {
            0
        };
        let mut out = Vec::new();
        'outer: for &s in &src {
            for &d in &dst {
                if capped && out.len() >= MAX_ALL_PAIRS_PATHS {
                    break 'outer;
                }
                let Some((_, mtu, rate)) = self.route(s, d) else {
                    continue;
                };
                push(
                    &mut out,
                    &PathRecord {
                        service_id,
                        dgid: self.gid(d),
                        sgid: self.gid(s),
                        dlid: self.record_lid(d.0, d.1),
                        slid: self.record_lid(s.0, s.1),
                        reversible: true,
                        numb_path: 0,
                        pkey: 0xFFFF,
                        mtu_selector: Selector::EXACTLY,
                        mtu,
                        rate_selector: Selector::EXACTLY,
                        rate,
                        packet_life_time_selector: Selector::EXACTLY,
                        packet_life_time: PACKET_LIFE_TIME,
                        ..PathRecord::default()
                    },
                );
            }
        }
        out
    }
}

fn byte(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn push<R: Repr>(out: &mut Vec<Vec<u8>>, r: &R) {
    if let Ok(v) = r.to_vec() {
        out.push(v);
    }
}

/// A link's data rate in tenths of Gb/s from its active width and speed.
fn link_gbps_tenths(pi: &PortInfo) -> u32 {
    let lanes = match pi.link_width_active {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        _ => 1,
    };
    let lane = match pi.link_speed_ext_active {
        1 => 140,
        2 => 250,
        4 => 500,
        _ => match pi.link_speed_active {
            2 => 50,
            4 => 100,
            _ => 25,
        },
    };
    lanes * lane
}

/// The IBA rate code of the fastest standard rate at most `tenths`/10
/// Gb/s (3 = 10 Gb/s when nothing was seen).
fn rate_code(tenths: u32) -> u8 {
    const RATES: [(u32, u8); 21] = [
        (25, 2),
        (50, 5),
        (100, 3),
        (140, 11),
        (200, 6),
        (250, 15),
        (280, 19),
        (300, 4),
        (400, 7),
        (500, 20),
        (560, 12),
        (600, 8),
        (800, 9),
        (1000, 16),
        (1120, 13),
        (1200, 10),
        (1680, 14),
        (2000, 17),
        (3000, 18),
        (4000, 21),
        (6000, 22),
    ];
    if tenths == u32::MAX {
        return 3;
    }
    RATES
        .iter()
        .rev()
        .find(|(r, _)| *r <= tenths)
        .map_or(2, |(_, c)| *c)
}

/// Multicast groups joined through MCMemberRecord Set.
#[derive(Debug, Default)]
struct McStore {
    members: Vec<McMemberRecord>,
    next_mlid: u16,
    next_mgid: u32,
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
        Self {
            view: RwLock::new(Arc::new(view)),
            ..Self::default()
        }
    }

    /// Serves `view` from now on (after a re-sweep).
    pub fn update(&self, view: SubnetView) {
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
            AttributeId::SA_PKEY_TABLE_RECORD => v.pkey_records(lid),
            AttributeId::SA_SL2VL_RECORD => v.sl2vl_records(lid),
            AttributeId::SA_VLARB_RECORD => v.vlarb_records(lid),
            AttributeId::SA_SMINFO_RECORD => v.sm_info_records(lid),
            AttributeId::SA_PATH_RECORD => v.path_records(q),
            // SM-lite programs no multicast forwarding tables.
            AttributeId::SA_MFT_RECORD => Vec::new(),
            AttributeId::SA_SERVICE_RECORD => lock(&self.services)
                .iter()
                .filter_map(|r| r.to_vec().ok())
                .collect(),
            AttributeId::SA_MCMEMBER_RECORD => lock(&self.mcast)
                .members
                .iter()
                .filter_map(|r| r.to_vec().ok())
                .collect(),
            _ => return None,
        };
        Some(recs)
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

impl FabricSa {
    /// MCMemberRecord Set: join (creating the group for a new or zero
    /// MGID).
    fn join(&self, q: &RecordQuery<'_>) -> Result<Vec<u8>, u16> {
        let mut r = McMemberRecord::parse(q.template).map_err(|_| MadStatus::SA_REQ_INVALID.0)?;
        if r.port_gid == [0u8; 16] || r.join_state == 0 {
            return Err(MadStatus::SA_REQ_INSUFFICIENT_COMPONENTS.0);
        }
        let mut mc = lock(&self.mcast);
        if mc.next_mlid == 0 {
            mc.next_mlid = 0xC001;
        }
        if r.mgid == [0u8; 16] {
            mc.next_mgid += 1;
            let mut g = [0u8; 16];
            g[..4].copy_from_slice(&[0xFF, 0x12, 0x40, 0x1B]);
            g[4..6].copy_from_slice(&[0xFF, 0xFF]);
            g[12..].copy_from_slice(&mc.next_mgid.to_be_bytes());
            r.mgid = g;
        }
        let group = mc.members.iter().find(|m| m.mgid == r.mgid).cloned();
        match group {
            Some(g) => {
                r.mlid = g.mlid;
                r.qkey = g.qkey;
                r.pkey = g.pkey;
                r.mtu_selector = g.mtu_selector;
                r.mtu = g.mtu;
                r.rate_selector = g.rate_selector;
                r.rate = g.rate;
                r.packet_life_time_selector = g.packet_life_time_selector;
                r.packet_life_time = g.packet_life_time;
                r.sl = g.sl;
                r.tclass = g.tclass;
                r.flow_label = g.flow_label;
                r.scope = g.scope;
            }
            None => {
                r.mlid = mc.next_mlid;
                mc.next_mlid = mc.next_mlid.saturating_add(1).min(0xFFFE);
                if r.pkey == 0 {
                    r.pkey = 0xFFFF;
                }
                r.mtu_selector = Selector::EXACTLY;
                r.mtu = 4;
                r.rate_selector = Selector::EXACTLY;
                r.rate = 3;
                r.packet_life_time_selector = Selector::EXACTLY;
                r.packet_life_time = PACKET_LIFE_TIME;
                r.scope = r.mgid[1] & 0x0F;
            }
        }
        match mc
            .members
            .iter_mut()
            .find(|m| m.mgid == r.mgid && m.port_gid == r.port_gid)
        {
            Some(m) => {
                m.join_state |= r.join_state;
                r = m.clone();
            }
            None => mc.members.push(r.clone()),
        }
        r.to_vec().map_err(|_| MadStatus::SA_REQ_INVALID.0)
    }

    /// MCMemberRecord Delete: leave (the JoinState bits given).
    fn leave(&self, q: &RecordQuery<'_>) -> Result<Vec<u8>, u16> {
        let r = McMemberRecord::parse(q.template).map_err(|_| MadStatus::SA_REQ_INVALID.0)?;
        let mut mc = lock(&self.mcast);
        let i = mc
            .members
            .iter()
            .position(|m| m.mgid == r.mgid && m.port_gid == r.port_gid)
            .ok_or(MadStatus::SA_REQ_INVALID.0)?;
        let leave = if r.join_state == 0 {
            0x0F
        } else {
            r.join_state
        };
        let mut m = mc.members[i].clone();
        m.join_state &= !leave;
        if m.join_state == 0 {
            mc.members.remove(i);
        } else {
            mc.members[i] = m.clone();
        }
        m.to_vec().map_err(|_| MadStatus::SA_REQ_INVALID.0)
    }
}
