//! Nodes, ports and switches of the fabric, and the attribute values they
//! start with.
//!
//! # Defaults (what ibsim 0.10 reports for the same file)
//! The starting PortInfo, NodeInfo and SwitchInfo are ibsim's templates
//! (`sim_net.c`) with ibsim's live overlays (`update_portinfo`), so an
//! unconfigured fabric answers a sweep with the same values. Checked
//! against a running ibsim by `tests/ibsim_compare.rs`. Fields that
//! deliberately differ are listed in [`crate::fabric`]'s module docs.

use std::collections::HashMap;

use mad_core::wire::attr::{
    port_cap, port_cap2, NodeInfo, PhysPortState, PortCounters, PortCountersExt, PortInfo,
    PortState, SmInfo, SwitchInfo,
};

use crate::topology::{speed, width, NodeKind, TopoNode, TopoPort};

/// NodeInfo Revision ibsim reports.
pub const REVISION: u32 = 0xA1;
/// P_Key table size of a CA / router port (NodeInfo PartitionCap).
pub const CA_PARTITION_CAP: u16 = 64;
/// P_Key table size of a switch's port 0 (NodeInfo PartitionCap).
pub const SWITCH_PARTITION_CAP: u16 = 8;
/// P_Key table size of a switch's external ports
/// (SwitchInfo PartitionEnforcementCap).
pub const SWITCH_PARTITION_ENFORCEMENT_CAP: u16 = 64;
/// GUIDInfo entries of a CA port (PortInfo GUIDCap).
pub const CA_GUID_CAP: u8 = 32;
pub use mad_core::wire::attr::DEFAULT_SL2VL;
/// CapabilityMask of a switch's port 0.
pub const SWITCH_PORT0_CAPMASK: u32 =
    port_cap::HAS_TRAP | port_cap::HAS_SL_MAP | port_cap::HAS_EXT_SPEEDS | port_cap::HAS_CAP_MASK2;
/// CapabilityMask of a connected CA port.
pub const CA_CAPMASK: u32 = SWITCH_PORT0_CAPMASK | port_cap::HAS_VEND_CLS | port_cap::HAS_CAP_NTC;
/// CapabilityMask of an unconnected CA port (ibsim's "down" template
/// lacks IsCapabilityMaskNoticeSupported).
pub const CA_DOWN_CAPMASK: u32 = SWITCH_PORT0_CAPMASK | port_cap::HAS_VEND_CLS;
/// CapabilityMask2 of switch port 0 and CA ports (ibsim 0.10).
pub const CAPMASK2: u16 =
    port_cap2::IS_LINK_WIDTH_2X_SUPPORTED | port_cap2::IS_LINK_SPEED_HDR_SUPPORTED;
/// M_KeyLeasePeriod ibsim starts with on management ports.
pub const DEFAULT_MKEY_LEASE: u16 = 4089;
/// VLCap (VL0-7) and the initial OperationalVLs.
pub const VL_CAP: u8 = 4;
/// VLArbitration high / low capacity.
pub const VL_ARB_CAP: u8 = 8;

/// Per-port state.
#[derive(Debug, Clone)]
pub(crate) struct Port {
    pub guid: u64,
    /// Every PortInfo field as the port would report it (LocalPortNum is
    /// filled per request).
    pub info: PortInfo,
    /// The other end of the cable (node index, port).
    pub remote: Option<(u32, u8)>,
    /// The P_Key table (entries past the end are 0).
    pub pkeys: Vec<u16>,
    /// P_Key table capacity.
    pub pkey_cap: u16,
    /// GUIDInfo entries set by Set(GUIDInfo); entry 0 is always `guid`.
    pub guids: Vec<u64>,
    /// VLArbitration low (0..64) and high (64..128) entries once set.
    pub vlarb: Option<Box<[u16; 128]>>,
    /// SLtoVL table of a CA / router port.
    pub sl2vl: [u8; 8],
    pub counters: PortCounters,
    pub counters_ext: PortCountersExt,
    /// The PerfMgt counters beyond PortCounters (per SL / VL, details).
    pub(crate) perf: super::pma_ext::PerfExtra,
    /// Packets that crossed the port and are not yet in `counters`,
    /// `counters_ext` and `perf` ([`Port::settle`] adds them).
    pub(crate) traffic: Traffic,
    /// When a failed M_Key check started the lease timer, when it ends.
    pub mkey_lease_end: Option<std::time::Duration>,
    /// SMInfo this port answers with (an SM lives here; boxed: few
    /// ports of a big fabric have one).
    pub sm_info: Option<Box<SmInfo>>,
    /// Extended link speeds this port can run, whatever PortInfo says.
    pub speed_ext_capable: u8,
    /// The cable is pulled ([`crate::Fabric::link_down`]): the link cannot
    /// train, whatever the ports are told.
    pub unplugged: bool,
}

/// Packets of one kind that crossed a port and are not yet in its
/// counters (counted in runs: [`super::traffic`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    /// The kind ([`super::traffic::kind`]); 0 while nothing is pending.
    pub(super) kind: u32,
    /// Packets sent of that kind.
    pub(super) xmit: u32,
    /// Packets received of that kind.
    pub(super) rcv: u32,
}

/// Per-switch state.
#[derive(Debug, Clone)]
pub(crate) struct SwitchState {
    pub info: SwitchInfo,
    /// Linear forwarding table by block, grown on demand, identical
    /// blocks shared fabric-wide ([`mad_sm::lft`]); missing entries are
    /// 0xFF.
    pub lft: Vec<std::sync::Arc<mad_sm::lft::Block>>,
    /// Multicast table: `(mlid index * positions + position)` → mask.
    pub mft: Vec<u16>,
    /// SLtoVL tables that were set, by (input port, output port).
    pub sl2vl: HashMap<(u8, u8), [u8; 8]>,
}

/// A node.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub id: String,
    pub desc: [u8; 64],
    /// NodeInfo as the node reports it (PortGUID / LocalPortNum filled
    /// per request).
    pub info: NodeInfo,
    /// Ports 0..=n on a switch, 1..=n otherwise (`port(n)` maps).
    pub ports: Vec<Port>,
    pub sw: Option<Box<SwitchState>>,
    /// The Congestion Control agent's state, made by the first
    /// Congestion Control MAD for the node (until then it is
    /// [`super::cc::CcState::new`]'s; few nodes of a big fabric get one,
    /// and a node's hot fields stay close together without it).
    pub(crate) cc: Option<Box<super::cc::CcState>>,
}

impl Node {
    pub fn is_switch(&self) -> bool {
        self.kind == NodeKind::Switch
    }
    pub fn num_ports(&self) -> u8 {
        self.info.num_ports
    }
    pub fn first_port(&self) -> u8 {
        u8::from(!self.is_switch())
    }
    /// Port `n`, if it exists.
    pub fn port(&self, n: u8) -> Option<&Port> {
        let i = usize::from(n.checked_sub(self.first_port())?);
        self.ports.get(i)
    }
    pub fn port_mut(&mut self, n: u8) -> Option<&mut Port> {
        let i = usize::from(n.checked_sub(self.first_port())?);
        self.ports.get_mut(i)
    }
    /// The port that holds management state (M_Key, SMInfo, LID of a
    /// switch): port 0 of a switch, else `in_port`.
    pub fn mgmt_port(&self, in_port: u8) -> u8 {
        if self.is_switch() {
            0
        } else {
            in_port
        }
    }
}

/// The LinkWidthSupported ibsim reports (every width).
const WIDTH_SUPPORTED: u8 = width::ALL;

/// Builds a node from its topology record (a switch with LinearFDBCap
/// `linear_fdb_cap`).
pub(crate) fn build_node(t: &TopoNode, cfg: &super::FabricConfig, linear_fdb_cap: u16) -> Node {
    let is_switch = t.kind == NodeKind::Switch;
    let info = NodeInfo {
        base_version: 1,
        class_version: 1,
        node_type: t.kind.node_type(),
        num_ports: t.num_ports,
        system_image_guid: t.system_image_guid,
        node_guid: t.node_guid,
        port_guid: t.node_guid,
        partition_cap: if is_switch {
            SWITCH_PARTITION_CAP
        } else {
            CA_PARTITION_CAP
        },
        device_id: t.device_id,
        revision: REVISION,
        local_port_num: 0,
        vendor_id: t.vendor_id & 0x00FF_FFFF,
    };
    let mut desc = [0u8; 64];
    let d = t.description.as_bytes();
    let n = d.len().min(63);
    desc[..n].copy_from_slice(&d[..n]);
    let ports = t.existing_ports().map(|p| build_port(t.kind, p)).collect();
    let sw = is_switch.then(|| {
        let mut info = SwitchInfo {
            linear_fdb_cap,
            random_fdb_cap: 0,
            multicast_fdb_cap: cfg.multicast_fdb_cap,
            linear_fdb_top: 0,
            partition_enforcement_cap: SWITCH_PARTITION_ENFORCEMENT_CAP,
            filter_raw_inbound_cap: true,
            filter_raw_outbound_cap: true,
            ..SwitchInfo::default()
        };
        info.enhanced_port0 = t.enhanced_port0.unwrap_or(false);
        // ibsim sets PortStateChange when it links any port of the switch.
        info.port_state_change = t.existing_ports().any(|p| p.remote.is_some());
        Box::new(SwitchState {
            info,
            lft: Vec::new(),
            mft: Vec::new(),
            sl2vl: HashMap::new(),
        })
    });
    Node {
        kind: t.kind,
        id: t.id.clone(),
        desc,
        cc: None,
        info,
        ports,
        sw,
    }
}

/// A port's starting PortInfo (ibsim's `smaport` / `swport` /
/// `swport_down` / `hcaport` / `hcaport_down` plus `update_portinfo`).
fn build_port(kind: NodeKind, p: &TopoPort) -> Port {
    let is_switch = kind == NodeKind::Switch;
    let linked = p.remote.is_some();
    let sma = is_switch && p.num == 0;
    let mut i = PortInfo {
        lid: p.lid,
        lmc: p.lmc,
        link_width_enabled: p.width_enabled,
        link_width_supported: WIDTH_SUPPORTED,
        link_width_active: p.width_active,
        link_speed_supported: speed::ALL,
        link_speed_active: p.speed_active,
        link_speed_enabled: p.speed_enabled,
        link_down_default_state: 2,
        vl_cap: VL_CAP,
        operational_vls: VL_CAP,
        vl_arb_high_cap: VL_ARB_CAP,
        vl_arb_low_cap: VL_ARB_CAP,
        ..PortInfo::default()
    };
    if p.speed_ext_active != 0 {
        i.link_speed_ext_enabled = p.speed_ext_enabled;
        i.link_speed_ext_supported = speed::EXT_ALL;
        i.link_speed_ext_active = p.speed_ext_active;
    }
    if sma {
        i.capability_mask = SWITCH_PORT0_CAPMASK;
        i.m_key_lease_period = DEFAULT_MKEY_LEASE;
        i.port_state = PortState::ACTIVE;
        i.port_phys_state = PhysPortState::LINK_UP;
        i.neighbor_mtu = 1;
        i.mtu_cap = 3;
        i.guid_cap = 1;
        i.subnet_timeout = 31;
        i.resp_time_value = 8;
        i.capability_mask2 = CAPMASK2;
    } else {
        i.neighbor_mtu = 4;
        i.mtu_cap = 4;
        i.vl_stall_count = 7;
        if linked {
            i.port_state = PortState::INIT;
            i.port_phys_state = PhysPortState::LINK_UP;
        } else {
            i.port_state = PortState::DOWN;
            i.port_phys_state = PhysPortState::POLLING;
        }
        if is_switch {
            if !linked {
                i.local_phy_errors = 4;
            }
        } else {
            i.capability_mask = if linked { CA_CAPMASK } else { CA_DOWN_CAPMASK };
            i.m_key_lease_period = DEFAULT_MKEY_LEASE;
            i.local_port_num = p.num;
            i.guid_cap = CA_GUID_CAP;
            i.subnet_timeout = 31;
            i.capability_mask2 = CAPMASK2;
        }
    }
    let pkey_cap = if is_switch && p.num > 0 {
        SWITCH_PARTITION_ENFORCEMENT_CAP
    } else if is_switch {
        SWITCH_PARTITION_CAP
    } else {
        CA_PARTITION_CAP
    };
    Port {
        guid: p.guid,
        info: i,
        remote: p.remote.map(|r| (r.node as u32, r.port)),
        pkeys: vec![0xFFFF],
        pkey_cap,
        guids: Vec::new(),
        vlarb: None,
        sl2vl: DEFAULT_SL2VL,
        counters: PortCounters::default(),
        counters_ext: PortCountersExt::default(),
        perf: super::pma_ext::PerfExtra::default(),
        traffic: Traffic::default(),
        mkey_lease_end: None,
        sm_info: None,
        speed_ext_capable: speed::EXT_ALL,
        unplugged: false,
    }
}

pub(crate) use mad_core::wire::attr::default_vlarb;
