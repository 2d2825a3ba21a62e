//! `smpquery` and `sminfo` output (infiniband-diags 44 `smpquery.c`,
//! `sminfo.c`, `ibdiag_common.c` `dump_portinfo`).

use super::dump::{self, field};
use super::PortIdText;
use mad_core::wire::attr::{
    GuidInfo, NodeDescription, NodeInfo, PKeyTable, PortInfo, SlToVlTable, SmInfo, SwitchInfo,
    VlArbTable,
};

/// What infiniband-diags prints instead of an M_Key or other key unless
/// `--show_keys` (`-K`) is given.
pub const NOT_DISPLAYED: &str = "<not displayed>";

fn push_line(out: &mut String, tabs: usize, name: &str, value: &str) {
    out.push_str(&"\t".repeat(tabs));
    out.push_str(&field(name, value));
    out.push('\n');
}

/// The NodeInfo field lines (`mad_dump_nodeinfo`), each ending in a
/// newline.
#[must_use]
pub fn nodeinfo_fields(ni: &NodeInfo) -> String {
    let mut s = String::new();
    let mut l = |n: &str, v: String| push_line(&mut s, 0, n, &v);
    l("BaseVers", dump::uint(ni.base_version.into()));
    l("ClassVers", dump::uint(ni.class_version.into()));
    l("NodeType", dump::node_type(ni.node_type.0));
    l("NumPorts", dump::uint(ni.num_ports.into()));
    l("SystemGuid", dump::hex(ni.system_image_guid, 8));
    l("Guid", dump::hex(ni.node_guid, 8));
    l("PortGuid", dump::hex(ni.port_guid, 8));
    l("PartCap", dump::uint(ni.partition_cap.into()));
    l("DevId", dump::hex(ni.device_id.into(), 2));
    l("Revision", dump::hex(ni.revision.into(), 4));
    l("LocalPort", dump::uint(ni.local_port_num.into()));
    l("VendorId", dump::hex(ni.vendor_id.into(), 3));
    s
}

/// `smpquery nodeinfo`: `# Node info: PORTID` and the NodeInfo fields.
#[must_use]
pub fn format_nodeinfo(portid: &PortIdText, ni: &NodeInfo) -> String {
    format!("# Node info: {portid}\n{}", nodeinfo_fields(ni))
}

/// The PortInfo field lines as `dump_portinfo(pi, tabs)` prints them:
/// `tabs` tab characters before each field (not before the capability
/// mask's continuation lines), the M_Key as `<not displayed>` unless
/// `show_keys`, the IB_PORT_* fields up to RoundTrip, then CapabilityMask2
/// and the three LinkSpeedExt* fields.
#[must_use]
pub fn portinfo_fields(pi: &PortInfo, tabs: usize, show_keys: bool) -> String {
    let mut s = String::new();
    for n in PORTINFO_FIELDS {
        if let Some(v) = portinfo_value(pi, n, show_keys) {
            push_line(&mut s, tabs, n, &v);
        }
    }
    s
}

/// The PortInfo field labels in `dump_portinfo`'s order (the lines of
/// [`portinfo_fields`]).
pub const PORTINFO_FIELDS: &[&str] = &[
    "Mkey",
    "GidPrefix",
    "Lid",
    "SMLid",
    "CapMask",
    "DiagCode",
    "MkeyLeasePeriod",
    "LocalPort",
    "LinkWidthEnabled",
    "LinkWidthSupported",
    "LinkWidthActive",
    "LinkSpeedSupported",
    "LinkState",
    "PhysLinkState",
    "LinkDownDefState",
    "ProtectBits",
    "LMC",
    "LinkSpeedActive",
    "LinkSpeedEnabled",
    "NeighborMTU",
    "SMSL",
    "VLCap",
    "InitType",
    "VLHighLimit",
    "VLArbHighCap",
    "VLArbLowCap",
    "InitReply",
    "MtuCap",
    "VLStallCount",
    "HoqLife",
    "OperVLs",
    "PartEnforceInb",
    "PartEnforceOutb",
    "FilterRawInb",
    "FilterRawOutb",
    "MkeyViolations",
    "PkeyViolations",
    "QkeyViolations",
    "GuidCap",
    "ClientReregister",
    "McastPkeyTrapSuppressionEnabled",
    "SubnetTimeout",
    "RespTimeVal",
    "LocalPhysErr",
    "OverrunErr",
    "MaxCreditHint",
    "RoundTrip",
    "CapabilityMask2",
    "LinkSpeedExtActive",
    "LinkSpeedExtSupported",
    "LinkSpeedExtEnabled",
];

/// The value of the PortInfo field labelled `name` (one of
/// [`PORTINFO_FIELDS`]) as libibmad prints it, the M_Key as
/// `<not displayed>` unless `show_keys`; `None` for another name.
#[must_use]
pub fn portinfo_value(pi: &PortInfo, name: &str, show_keys: bool) -> Option<String> {
    Some(match name {
        "Mkey" => {
            if show_keys {
                dump::hex(pi.m_key, 8)
            } else {
                NOT_DISPLAYED.to_owned()
            }
        }
        "GidPrefix" => dump::hex(pi.gid_prefix, 8),
        "Lid" => dump::uint(pi.lid.into()),
        "SMLid" => dump::uint(pi.master_sm_lid.into()),
        "CapMask" => dump::port_cap_mask(pi.capability_mask),
        "DiagCode" => dump::hex(pi.diag_code.into(), 2),
        "MkeyLeasePeriod" => dump::uint(pi.m_key_lease_period.into()),
        "LocalPort" => dump::uint(pi.local_port_num.into()),
        "LinkWidthEnabled" => dump::link_width_enabled(pi.link_width_enabled),
        "LinkWidthSupported" => dump::link_width_supported(pi.link_width_supported),
        "LinkWidthActive" => dump::link_width(pi.link_width_active),
        "LinkSpeedSupported" => dump::link_speed_supported(pi.link_speed_supported),
        "LinkState" => dump::port_state(pi.port_state.0),
        "PhysLinkState" => dump::phys_port_state(pi.port_phys_state.0),
        "LinkDownDefState" => dump::link_down_def_state(pi.link_down_default_state),
        "ProtectBits" => dump::uint(pi.m_key_protect_bits.into()),
        "LMC" => dump::uint(pi.lmc.into()),
        "LinkSpeedActive" => dump::link_speed(pi.link_speed_active),
        "LinkSpeedEnabled" => dump::link_speed_enabled(pi.link_speed_enabled),
        "NeighborMTU" => dump::mtu(pi.neighbor_mtu),
        "SMSL" => dump::uint(pi.master_sm_sl.into()),
        "VLCap" => dump::vl_cap(pi.vl_cap),
        "InitType" => dump::hex(pi.init_type.into(), 1),
        "VLHighLimit" => dump::uint(pi.vl_high_limit.into()),
        "VLArbHighCap" => dump::uint(pi.vl_arb_high_cap.into()),
        "VLArbLowCap" => dump::uint(pi.vl_arb_low_cap.into()),
        "InitReply" => dump::hex(pi.init_type_reply.into(), 1),
        "MtuCap" => dump::mtu(pi.mtu_cap),
        "VLStallCount" => dump::uint(pi.vl_stall_count.into()),
        "HoqLife" => dump::uint(pi.hoq_life.into()),
        "OperVLs" => dump::oper_vls(pi.operational_vls),
        "PartEnforceInb" => dump::uint(pi.partition_enforcement_inbound.into()),
        "PartEnforceOutb" => dump::uint(pi.partition_enforcement_outbound.into()),
        "FilterRawInb" => dump::uint(pi.filter_raw_inbound.into()),
        "FilterRawOutb" => dump::uint(pi.filter_raw_outbound.into()),
        "MkeyViolations" => dump::uint(pi.m_key_violations.into()),
        "PkeyViolations" => dump::uint(pi.p_key_violations.into()),
        "QkeyViolations" => dump::uint(pi.q_key_violations.into()),
        "GuidCap" => dump::uint(pi.guid_cap.into()),
        "ClientReregister" => dump::uint(pi.client_reregister.into()),
        "McastPkeyTrapSuppressionEnabled" => {
            dump::uint(pi.mcast_pkey_trap_suppression_enabled.into())
        }
        "SubnetTimeout" => dump::uint(pi.subnet_timeout.into()),
        "RespTimeVal" => dump::uint(pi.resp_time_value.into()),
        "LocalPhysErr" => dump::uint(pi.local_phy_errors.into()),
        "OverrunErr" => dump::uint(pi.overrun_errors.into()),
        "MaxCreditHint" => dump::uint(pi.max_credit_hint.into()),
        "RoundTrip" => dump::uint(pi.link_round_trip_latency.into()),
        "CapabilityMask2" => dump::port_cap_mask2(pi.capability_mask2),
        "LinkSpeedExtActive" => dump::link_speed_ext(pi.link_speed_ext_active),
        "LinkSpeedExtSupported" => dump::link_speed_ext_supported(pi.link_speed_ext_supported),
        "LinkSpeedExtEnabled" => dump::link_speed_ext_enabled(pi.link_speed_ext_enabled),
        _ => return None,
    })
}

/// `smpquery portinfo`: `# Port info: PORTID port N` and the PortInfo
/// fields. `port` is the port argument as given (0 when omitted; the
/// `-x` extended-speeds bit is not part of it).
#[must_use]
pub fn format_portinfo(portid: &PortIdText, port: i32, pi: &PortInfo, show_keys: bool) -> String {
    format!(
        "# Port info: {portid} port {port}\n{}",
        portinfo_fields(pi, 0, show_keys)
    )
}

/// The SwitchInfo field lines (`mad_dump_switchinfo`).
#[must_use]
pub fn switchinfo_fields(si: &SwitchInfo) -> String {
    let mut s = String::new();
    let mut l = |n: &str, v: String| push_line(&mut s, 0, n, &v);
    l("LinearFdbCap", dump::uint(si.linear_fdb_cap.into()));
    l("RandomFdbCap", dump::uint(si.random_fdb_cap.into()));
    l("McastFdbCap", dump::uint(si.multicast_fdb_cap.into()));
    l("LinearFdbTop", dump::uint(si.linear_fdb_top.into()));
    l("DefPort", dump::uint(si.default_port.into()));
    l(
        "DefMcastPrimPort",
        dump::uint(si.default_mcast_primary_port.into()),
    );
    l(
        "DefMcastNotPrimPort",
        dump::uint(si.default_mcast_not_primary_port.into()),
    );
    l("LifeTime", dump::uint(si.life_time_value.into()));
    l("StateChange", dump::uint(si.port_state_change.into()));
    l(
        "OptSLtoVLMapping",
        dump::uint(si.opt_sl_to_vl_mapping.into()),
    );
    l("LidsPerPort", dump::uint(si.lids_per_port.into()));
    l(
        "PartEnforceCap",
        dump::uint(si.partition_enforcement_cap.into()),
    );
    l(
        "InboundPartEnf",
        dump::uint(si.inbound_enforcement_cap.into()),
    );
    l(
        "OutboundPartEnf",
        dump::uint(si.outbound_enforcement_cap.into()),
    );
    l(
        "FilterRawInbound",
        dump::uint(si.filter_raw_inbound_cap.into()),
    );
    l(
        "FilterRawOutbound",
        dump::uint(si.filter_raw_outbound_cap.into()),
    );
    l("EnhancedPort0", dump::uint(si.enhanced_port0.into()));
    l("MulticastFDBTop", dump::hex(si.multicast_fdb_top.into(), 2));
    s
}

/// `smpquery switchinfo`: `# Switch info: PORTID` and the fields.
#[must_use]
pub fn format_switchinfo(portid: &PortIdText, si: &SwitchInfo) -> String {
    format!("# Switch info: {portid}\n{}", switchinfo_fields(si))
}

/// `smpquery nodedesc` for an already cleaned or name-mapped `name`.
///
/// Quirk kept: the dots pad by the length of the *name*, not of the label
/// (`32 - strlen(name)` dots, or one dot for names of 32 characters or
/// more).
#[must_use]
pub fn format_nodedesc_name(name: &str) -> String {
    let dots = if name.len() < 32 { 32 - name.len() } else { 1 };
    format!("Node Description:{}{name}\n", ".".repeat(dots))
}

/// `smpquery nodedesc` (no node-name map): the description cleaned as
/// `clean_nodedesc` does.
#[must_use]
pub fn format_nodedesc(nd: &NodeDescription) -> String {
    format_nodedesc_name(&dump::clean_nodedesc(nd))
}

/// `smpquery pkeys`: `capacity` is PartitionCap (NodeInfo) or, for a
/// switch port other than 0, PartitionEnforcementCap (SwitchInfo);
/// `blocks` are the P_KeyTable blocks 0, 1, ... The last block prints
/// only its entries up to the capacity rounded up to 8. If fewer blocks
/// are given than the capacity needs, the text stops after the last one
/// given (smpquery exits with an error there) and the capacity line is
/// left out.
#[must_use]
pub fn format_pkeys(capacity: u16, blocks: &[PKeyTable]) -> String {
    let n = usize::from(capacity);
    let nblocks = n.div_ceil(32);
    let mut s = String::new();
    for i in 0..nblocks {
        let Some(b) = blocks.get(i) else { return s };
        let k = if i + 1 == nblocks {
            ((n + 7 - i * 32) / 8) * 8
        } else {
            32
        };
        for j in (0..k.min(32)).step_by(8) {
            s.push_str(&format!("{:4}:", i * 32 + j));
            for p in &b.pkeys[j..j + 8] {
                s.push_str(&format!(" 0x{p:04x}"));
            }
            s.push('\n');
        }
    }
    s.push_str(&format!("{n} pkeys capacity for this port\n"));
    s
}

/// The two header lines of `smpquery sl2vl`.
#[must_use]
pub fn sl2vl_header(portid: &PortIdText) -> String {
    let mut s = format!("# SL2VL table: {portid}\n#                 SL: |");
    for i in 0..16 {
        s.push_str(&format!("{i:2}|"));
    }
    s.push('\n');
    s
}

/// One `ports: in  I, out  O: | v| v|...` line of `smpquery sl2vl`.
#[must_use]
pub fn sl2vl_row(in_port: u8, out_port: u8, t: &SlToVlTable) -> String {
    format!(
        "ports: in {in_port:2}, out {out_port:2}: {}",
        dump::sl_to_vl(t)
    )
}

/// `smpquery sl2vl`: the header, then one row per `(in, out, table)`
/// (for a CA the single row `(0, 0)`; for a switch input ports 0..=N
/// with the requested output port).
#[must_use]
pub fn format_sl2vl(portid: &PortIdText, rows: &[(u8, u8, SlToVlTable)]) -> String {
    let mut s = sl2vl_header(portid);
    for (i, o, t) in rows {
        s.push_str(&sl2vl_row(*i, *o, t));
    }
    s
}

/// `smpquery vlarb` on switch port 0 without enhanced port 0.
#[must_use]
pub fn format_vlarb_no_bsp0(portid: &PortIdText) -> String {
    format!("# No VLArbitration tables (BSP0): {portid} port 0\n")
}

fn vlarb_table(s: &mut String, name: &str, cap: u8, blocks: &[VlArbTable]) -> bool {
    s.push_str(&format!("# {name} priority VL Arbitration Table:"));
    let cap = usize::from(cap);
    let Some(first) = blocks.first() else {
        return false;
    };
    s.push_str(&dump::vl_arbitration(first, cap.min(32)));
    if cap > 32 {
        // smpquery passes `cap - 32` entries for the second block, reading
        // past the 64 data bytes when cap > 64; only 32 exist here.
        let Some(second) = blocks.get(1) else {
            return false;
        };
        s.push_str(&dump::vl_arbitration(second, cap - 32));
    }
    true
}

/// `smpquery vlarb`: the header with PortInfo's VLArbLowCap / HighCap,
/// then the low table (blocks 1, 2 as `low`) if `low_cap > 0` and the
/// high table (blocks 3, 4 as `high`) if `high_cap > 0`. A missing block
/// ends the text where smpquery would fail.
#[must_use]
pub fn format_vlarb(
    portid: &PortIdText,
    port: i32,
    low_cap: u8,
    high_cap: u8,
    low: &[VlArbTable],
    high: &[VlArbTable],
) -> String {
    let mut s = format!(
        "# VLArbitration tables: {portid} port {port} LowCap {low_cap} HighCap {high_cap}\n"
    );
    if low_cap > 0 && !vlarb_table(&mut s, "Low", low_cap, low) {
        return s;
    }
    if high_cap > 0 {
        vlarb_table(&mut s, "High", high_cap, high);
    }
    s
}

/// `smpquery guids`: `capacity` is PortInfo.GUIDCap (of port 0);
/// `blocks` the GUIDInfo blocks 0, 1, ... Pairs per line, the last block
/// up to the capacity rounded up to 2. Missing blocks end the text as in
/// [`format_pkeys`].
#[must_use]
pub fn format_guids(capacity: u8, blocks: &[GuidInfo]) -> String {
    let n = usize::from(capacity);
    let nblocks = n.div_ceil(8);
    let mut s = String::new();
    for i in 0..nblocks {
        let Some(b) = blocks.get(i) else { return s };
        let k = if i + 1 == nblocks {
            ((n + 1 - i * 8) / 2) * 2
        } else {
            8
        };
        for j in (0..k.min(8)).step_by(2) {
            s.push_str(&format!(
                "{:4}: 0x{:016x} 0x{:016x}\n",
                i * 8 + j,
                b.guids[j],
                b.guids[j + 1]
            ));
        }
    }
    s.push_str(&format!("{n} guids capacity for this port\n"));
    s
}

/// `smpquery mlnxextportinfo` from the raw 64-byte attribute data
/// (Mellanox vendor attribute 0xFF90; missing bytes read as 0).
#[must_use]
pub fn format_mlnx_ext_port_info(portid: &PortIdText, port: i32, data: &[u8]) -> String {
    let b = |i: usize| u64::from(data.get(i).copied().unwrap_or(0));
    let mut s = format!("# MLNX ext Port info: {portid} port {port}\n");
    push_line(&mut s, 0, "StateChangeEnable", &dump::hex(b(3), 1));
    push_line(&mut s, 0, "LinkSpeedSupported", &dump::hex(b(7), 1));
    push_line(&mut s, 0, "LinkSpeedEnabled", &dump::hex(b(11), 1));
    push_line(&mut s, 0, "LinkSpeedActive", &dump::hex(b(15), 1));
    s
}

/// sminfo's `STATESTR`.
#[must_use]
pub fn sminfo_state_str(state: u8) -> &'static str {
    match state {
        0 => "SMINFO_NOTACT",
        1 => "SMINFO_DISCOVER",
        2 => "SMINFO_STANDBY",
        3 => "SMINFO_MASTER",
        _ => "???",
    }
}

/// `sminfo`: `lid` is the LID of the destination as resolved (0 for a
/// directed route).
#[must_use]
pub fn format_sminfo(lid: u16, sm: &SmInfo) -> String {
    format!(
        "sminfo: sm lid {lid} sm guid 0x{:x}, activity count {} priority {} state {} {}\n",
        sm.guid,
        sm.act_count,
        sm.priority,
        sm.sm_state.0,
        sminfo_state_str(sm.sm_state.0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::wire::attr::{NodeType, PhysPortState, PortState, SmState};

    fn dr0() -> PortIdText {
        PortIdText::dr(&[0])
    }

    #[test]
    fn nodeinfo_of_an_ibsim_switch() {
        let ni = NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::SWITCH,
            num_ports: 8,
            system_image_guid: 0x20_0000,
            node_guid: 0x20_0000,
            port_guid: 0x20_0000,
            partition_cap: 8,
            revision: 0xa1,
            ..NodeInfo::default()
        };
        let want = "# Node info: DR path slid 65535; dlid 65535; 0\n\
BaseVers:........................1\n\
ClassVers:.......................1\n\
NodeType:........................Switch\n\
NumPorts:........................8\n\
SystemGuid:......................0x0000000000200000\n\
Guid:............................0x0000000000200000\n\
PortGuid:........................0x0000000000200000\n\
PartCap:.........................8\n\
DevId:...........................0x0000\n\
Revision:........................0x000000a1\n\
LocalPort:.......................0\n\
VendorId:........................0x000000\n";
        assert_eq!(format_nodeinfo(&dr0(), &ni), want);
    }

    #[test]
    fn portinfo_hides_the_mkey_and_tabs_only_field_lines() {
        let pi = PortInfo {
            m_key: 0x1234,
            capability_mask: 0x2 | 0x8,
            link_width_enabled: 2,
            link_width_supported: 31,
            link_width_active: 2,
            link_speed_supported: 7,
            port_state: PortState::ACTIVE,
            port_phys_state: PhysPortState::LINK_UP,
            link_speed_active: 1,
            link_speed_enabled: 1,
            ..PortInfo::default()
        };
        let s = format_portinfo(&PortIdText::lid(1), 1, &pi, false);
        assert!(s.starts_with(
            "# Port info: Lid 1 port 1\nMkey:............................<not displayed>\n"
        ));
        assert!(s.contains(
            "CapMask:.........................0xa\n\t\t\t\tIsSM\n\t\t\t\tIsTrapSupported\nDiagCode"
        ));
        assert!(s.ends_with("LinkSpeedExtEnabled:.............0\n"));
        // Header, 51 fields, 2 capability-mask continuation lines.
        assert_eq!(s.lines().count(), 1 + 51 + 2);
        let shown = portinfo_fields(&pi, 2, true);
        assert!(shown.starts_with("\t\tMkey:............................0x0000000000001234\n"));
        assert!(shown.contains("\t\tCapMask:.........................0xa\n\t\t\t\tIsSM\n"));
    }

    #[test]
    fn nodedesc_dots_depend_on_the_name_length() {
        assert_eq!(
            format_nodedesc_name("Hca1"),
            "Node Description:............................Hca1\n"
        );
        let long = "n".repeat(40);
        assert_eq!(
            format_nodedesc_name(&long),
            format!("Node Description:.{long}\n")
        );
    }

    #[test]
    fn pkeys_print_the_capacity_rounded_to_eight() {
        let mut t = PKeyTable::default();
        t.pkeys[0] = 0xffff;
        t.pkeys[9] = 0x8001;
        assert_eq!(
            format_pkeys(8, &[t.clone()]),
            "   0: 0xffff 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000\n\
8 pkeys capacity for this port\n"
        );
        let s = format_pkeys(10, &[t.clone()]);
        assert_eq!(s.lines().count(), 3);
        assert!(s.contains("   8: 0x0000 0x8001 "));
        let s = format_pkeys(40, &[t.clone(), t.clone()]);
        assert_eq!(s.lines().count(), 4 + 1 + 1);
        assert!(s.contains("  32: 0xffff"));
        assert_eq!(format_pkeys(40, &[t]).lines().count(), 4);
        assert_eq!(format_pkeys(0, &[]), "0 pkeys capacity for this port\n");
    }

    #[test]
    fn guids_print_in_pairs() {
        let mut g = GuidInfo::default();
        g.guids[0] = 0x10_0001;
        assert_eq!(
            format_guids(1, &[g.clone()]),
            "   0: 0x0000000000100001 0x0000000000000000\n1 guids capacity for this port\n"
        );
        assert_eq!(format_guids(9, &[g.clone(), g]).lines().count(), 4 + 1 + 1);
    }

    #[test]
    fn sl2vl_and_vlarb_layout() {
        let t = SlToVlTable {
            vl: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7],
        };
        assert_eq!(
            format_sl2vl(&PortIdText::dr(&[0, 1]), &[(0, 0, t)]),
            "# SL2VL table: DR path slid 65535; dlid 65535; 0,1\n\
#                 SL: | 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|\n\
ports: in  0, out  0: | 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14| 7|\n"
        );
        let mut low = VlArbTable::default();
        let mut high = VlArbTable::default();
        for i in 0..8 {
            low.entries[i] = VlArbTable::entry(i as u8, if i == 0 { 0 } else { 4 });
            high.entries[i] = VlArbTable::entry(i as u8, if i == 0 { 4 } else { 0 });
        }
        assert_eq!(
            format_vlarb(&PortIdText::dr(&[0, 1]), 1, 8, 8, &[low.clone()], &[high.clone()]),
            "# VLArbitration tables: DR path slid 65535; dlid 65535; 0,1 port 1 LowCap 8 HighCap 8\n\
# Low priority VL Arbitration Table:\n\
VL    : |0x0 |0x1 |0x2 |0x3 |0x4 |0x5 |0x6 |0x7 |\n\
WEIGHT: |0x0 |0x4 |0x4 |0x4 |0x4 |0x4 |0x4 |0x4 |\n\
# High priority VL Arbitration Table:\n\
VL    : |0x0 |0x1 |0x2 |0x3 |0x4 |0x5 |0x6 |0x7 |\n\
WEIGHT: |0x4 |0x0 |0x0 |0x0 |0x0 |0x0 |0x0 |0x0 |\n"
        );
        assert_eq!(
            format_vlarb_no_bsp0(&dr0()),
            "# No VLArbitration tables (BSP0): DR path slid 65535; dlid 65535; 0 port 0\n"
        );
        // cap > 32 uses the second block.
        let s = format_vlarb(&dr0(), 1, 34, 0, &[low, high], &[]);
        assert_eq!(s.matches("VL    : |").count(), 2);
        assert!(s.ends_with("WEIGHT: |0x4 |0x0 |\n"));
    }

    #[test]
    fn sminfo_line() {
        let sm = SmInfo {
            guid: 0x20_0000,
            sm_key: 0,
            act_count: 86,
            priority: 0,
            sm_state: SmState::MASTER,
        };
        assert_eq!(
            format_sminfo(1, &sm),
            "sminfo: sm lid 1 sm guid 0x200000, activity count 86 priority 0 state 3 SMINFO_MASTER\n"
        );
        assert_eq!(sminfo_state_str(7), "???");
    }

    #[test]
    fn switchinfo_multicast_top_is_hex() {
        let si = SwitchInfo {
            linear_fdb_cap: 0x7800,
            multicast_fdb_cap: 0x400,
            linear_fdb_top: 4,
            life_time_value: 18,
            partition_enforcement_cap: 64,
            filter_raw_inbound_cap: true,
            ..SwitchInfo::default()
        };
        let s = format_switchinfo(&PortIdText::lid(1), &si);
        assert!(s.starts_with("# Switch info: Lid 1\nLinearFdbCap:....................30720\n"));
        assert!(s.contains("FilterRawInbound:................1\n"));
        assert!(s.ends_with("MulticastFDBTop:.................0x0000\n"));
    }

    #[test]
    fn mlnx_ext_port_info_fields() {
        let mut d = [0u8; 64];
        d[3] = 1;
        d[15] = 0x10;
        let s = format_mlnx_ext_port_info(&PortIdText::lid(3), 1, &d);
        assert_eq!(
            s,
            "# MLNX ext Port info: Lid 3 port 1\n\
StateChangeEnable:...............0x01\n\
LinkSpeedSupported:..............0x00\n\
LinkSpeedEnabled:................0x00\n\
LinkSpeedActive:.................0x10\n"
        );
    }
}
