//! Our records as saquery prints them: field names and values, and the
//! decoding of an answer into them.

use std::net::Ipv6Addr;

use mad_agents::sa::client::{parse_record, parse_table};
use mad_core::wire::attr::ClassPortInfo;
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, SaRecord, ServiceRecord, SmInfoRecord,
    SwitchInfoRecord,
};
use mad_core::wire::{AttributeId, Method, Repr};

pub(crate) type Fields = Vec<(String, String)>;

/// What an answer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Records as saquery labels and values, and whether the answer was
    /// cut to one MAD.
    Records(Vec<Fields>, bool),
    /// A non-zero SA status.
    Status(u16),
}

pub(crate) fn f(label: &str, v: impl ToString) -> (String, String) {
    (label.to_owned(), v.to_string())
}

pub(crate) fn gid(b: &[u8; 16]) -> String {
    Ipv6Addr::from(*b).to_string()
}

pub(crate) fn text(b: &[u8]) -> String {
    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

pub(crate) fn node_fields(r: &NodeRecord) -> Fields {
    let n = &r.node_info;
    vec![
        f("lid", r.lid),
        f("reserved", r.reserved),
        f("base_version", n.base_version),
        f("class_version", n.class_version),
        f("node_type", n.node_type.name().unwrap_or("?")),
        f("num_ports", n.num_ports),
        f("sys_guid", n.system_image_guid),
        f("node_guid", n.node_guid),
        f("port_guid", n.port_guid),
        f("partition_cap", n.partition_cap),
        f("device_id", n.device_id),
        f("revision", n.revision),
        f("port_num", n.local_port_num),
        f("vendor_id", n.vendor_id),
        f("NodeDescription", text(&r.node_desc.desc)),
    ]
}

pub(crate) fn mtu_name(code: u8) -> String {
    match code {
        1..=5 => (128u32 << code).to_string(),
        c => format!("undefined ({c})"),
    }
}

pub(crate) fn vls_name(code: u8) -> String {
    match code {
        1 => "VL0".to_owned(),
        2..=5 => format!("VL0-{}", (1u32 << (code - 1)) - 1),
        c => format!("undefined ({c})"),
    }
}

pub(crate) fn width_name(w: u8) -> String {
    match w {
        1 => "1X",
        2 => "4X",
        4 => "8X",
        8 => "12X",
        16 => "2X",
        w => return format!("undefined ({w})"),
    }
    .to_owned()
}

pub(crate) fn speed_name(s: u8) -> String {
    match s {
        0 => "Extended speed",
        1 => "2.5 Gbps",
        2 => "5.0 Gbps",
        4 => "10.0 Gbps",
        s => return format!("undefined ({s})"),
    }
    .to_owned()
}

/// PortInfo fields as libibmad prints them; codes without a defined
/// meaning (a down port's MTU 0, ...) are left out, libibmad spells those
/// differently per field.
pub(crate) fn port_info_fields(r: &PortInfoRecord) -> Fields {
    let mut v = port_info_fields_all(r);
    v.retain(|(_, val)| !val.starts_with("undefined"));
    v
}

pub(crate) fn port_info_fields_all(r: &PortInfoRecord) -> Fields {
    let p = &r.port_info;
    vec![
        f("EndPortLid", r.lid),
        f("PortNum", r.port_num),
        f("Options", r.options),
        f("GidPrefix", p.gid_prefix),
        f("Lid", p.lid),
        f("SMLid", p.master_sm_lid),
        f("CapMask", p.capability_mask),
        f("DiagCode", p.diag_code),
        f("MkeyLeasePeriod", p.m_key_lease_period),
        f("LocalPort", p.local_port_num),
        f("LinkWidthEnabled", width_name(p.link_width_enabled)),
        f("LinkWidthActive", width_name(p.link_width_active)),
        f("LinkState", p.port_state.name().unwrap_or("?")),
        f("PhysLinkState", p.port_phys_state.name().unwrap_or("?")),
        f("ProtectBits", p.m_key_protect_bits),
        f("LMC", p.lmc),
        f("LinkSpeedActive", speed_name(p.link_speed_active)),
        f("NeighborMTU", mtu_name(p.neighbor_mtu)),
        f("SMSL", p.master_sm_sl),
        f("VLCap", vls_name(p.vl_cap)),
        f("InitType", p.init_type),
        f("VLHighLimit", p.vl_high_limit),
        f("VLArbHighCap", p.vl_arb_high_cap),
        f("VLArbLowCap", p.vl_arb_low_cap),
        f("InitReply", p.init_type_reply),
        f("MtuCap", mtu_name(p.mtu_cap)),
        f("VLStallCount", p.vl_stall_count),
        f("HoqLife", p.hoq_life),
        f("OperVLs", vls_name(p.operational_vls)),
        f("PartEnforceInb", u8::from(p.partition_enforcement_inbound)),
        f(
            "PartEnforceOutb",
            u8::from(p.partition_enforcement_outbound),
        ),
        f("FilterRawInb", u8::from(p.filter_raw_inbound)),
        f("FilterRawOutb", u8::from(p.filter_raw_outbound)),
        f("MkeyViolations", p.m_key_violations),
        f("PkeyViolations", p.p_key_violations),
        f("QkeyViolations", p.q_key_violations),
        f("GuidCap", p.guid_cap),
        f("ClientReregister", u8::from(p.client_reregister)),
        f(
            "McastPkeyTrapSuppressionEnabled",
            p.mcast_pkey_trap_suppression_enabled,
        ),
        f("SubnetTimeout", p.subnet_timeout),
        f("RespTimeVal", p.resp_time_value),
        f("LocalPhysErr", p.local_phy_errors),
        f("OverrunErr", p.overrun_errors),
        f("MaxCreditHint", p.max_credit_hint),
        f("RoundTrip", p.link_round_trip_latency),
        f("CapabilityMask2", p.capability_mask2),
    ]
}

pub(crate) fn link_fields(r: &LinkRecord) -> Fields {
    vec![
        f("FromLID", r.from_lid),
        f("FromPort", r.from_port),
        f("ToPort", r.to_port),
        f("ToLID", r.to_lid),
    ]
}

pub(crate) fn path_fields(r: &PathRecord) -> Fields {
    let hop_flow_raw =
        (u32::from(r.raw_traffic) << 31) | (r.flow_label << 8) | u32::from(r.hop_limit);
    let resv2 = (u64::from(r.reverse_path_pkey_member_bit) << 46)
        | (u64::from(r.reserved1) << 32)
        | u64::from(r.reserved2);
    vec![
        f("service_id", r.service_id),
        f("dgid", gid(&r.dgid)),
        f("sgid", gid(&r.sgid)),
        f("dlid", r.dlid),
        f("slid", r.slid),
        f("hop_flow_raw", hop_flow_raw),
        f("tclass", r.tclass),
        f(
            "num_path_revers",
            (u8::from(r.reversible) << 7) | r.numb_path,
        ),
        f("pkey", r.pkey),
        f("qos_class", r.qos_class),
        f("sl", r.sl),
        f("mtu", (r.mtu_selector.0 << 6) | r.mtu),
        f("rate", (r.rate_selector.0 << 6) | r.rate),
        f(
            "pkt_life",
            (r.packet_life_time_selector.0 << 6) | r.packet_life_time,
        ),
        f("preference", r.preference),
        f("resv2", resv2),
    ]
}

pub(crate) fn switch_fields(r: &SwitchInfoRecord) -> Fields {
    let s = &r.switch_info;
    let lpo =
        (s.life_time_value << 3) | (u8::from(s.port_state_change) << 2) | s.opt_sl_to_vl_mapping;
    let flags = (u8::from(s.inbound_enforcement_cap) << 7)
        | (u8::from(s.outbound_enforcement_cap) << 6)
        | (u8::from(s.filter_raw_inbound_cap) << 5)
        | (u8::from(s.filter_raw_outbound_cap) << 4)
        | (u8::from(s.enhanced_port0) << 3)
        | ((s.reserved >> 8) as u8 & 7);
    vec![
        f("LID", r.lid),
        f("LinearFDBCap", s.linear_fdb_cap),
        f("RandomFDBCap", s.random_fdb_cap),
        f("MulticastFDBCap", s.multicast_fdb_cap),
        f("LinearFDBTop", s.linear_fdb_top),
        f("DefaultPort", s.default_port),
        f("DefaultMulticastPrimaryPort", s.default_mcast_primary_port),
        f(
            "DefaultMulticastNotPrimaryPort",
            s.default_mcast_not_primary_port,
        ),
        f("LifeTimeValue/PortStateChange/OpSL2VL", lpo),
        f("LIDsPerPort", s.lids_per_port),
        f("PartitionEnforcementCap", s.partition_enforcement_cap),
        f("flags", flags),
        f("MulticastFDBTop", s.multicast_fdb_top),
    ]
}

pub(crate) fn sminfo_fields(r: &SmInfoRecord) -> Fields {
    let s = &r.sm_info;
    vec![
        f("LID", r.lid),
        f("GUID", s.guid),
        f("SM_Key", s.sm_key),
        f("ActCount", s.act_count),
        f("Priority", s.priority),
        f("SMState", s.sm_state.0),
    ]
}

pub(crate) fn guid_fields(r: &GuidInfoRecord) -> Fields {
    let mut v = vec![f("LID", r.lid), f("Block", r.block_num)];
    for (i, g) in r.guid_info.guids.iter().enumerate() {
        v.push(f(&format!("GUID {i}"), g));
    }
    v
}

pub(crate) fn lft_fields(r: &LftRecord) -> Fields {
    let mut v = vec![f("LID", r.lid), f("Block", r.block_num)];
    for (i, p) in r.lft.ports.iter().enumerate() {
        v.push(f(&format!("LFT[{}]", usize::from(r.block_num) * 64 + i), p));
    }
    v
}

pub(crate) fn mcmember_fields(r: &McMemberRecord) -> Fields {
    vec![
        f("MGID", gid(&r.mgid)),
        f("PortGid", gid(&r.port_gid)),
        f("qkey", r.qkey),
        f("mlid", r.mlid),
        f("mtu", (r.mtu_selector.0 << 6) | r.mtu),
        f("TClass", r.tclass),
        f("pkey", r.pkey),
        f("rate", (r.rate_selector.0 << 6) | r.rate),
        f(
            "pkt_life",
            (r.packet_life_time_selector.0 << 6) | r.packet_life_time,
        ),
        f("SL", r.sl),
        f("FlowLabel", r.flow_label),
        f("HopLimit", r.hop_limit),
        f("Scope", r.scope),
        f("JoinState", r.join_state),
        f("ProxyJoin", u8::from(r.proxy_join)),
    ]
}

pub(crate) fn service_fields(r: &ServiceRecord) -> Fields {
    vec![
        f("id", r.service_id),
        f("gid", gid(&r.service_gid)),
        f("pkey", r.service_pkey),
        f("lease", r.service_lease),
        f("name", text(&r.service_name)),
    ]
}

pub(crate) fn inform_fields(r: &InformInfoRecord) -> Fields {
    let i = &r.inform_info;
    vec![
        f("SubscriberGID", gid(&r.subscriber_gid)),
        f("SubscriberEnum", r.enumeration),
        f("gid", gid(&i.gid)),
        f("lid_range_begin", i.lid_range_begin),
        f("lid_range_end", i.lid_range_end),
        f("is_generic", i.is_generic),
        f("subscribe", i.subscribe),
        f("trap_type", i.trap_type),
        f("trap_num", i.trap_number_or_device_id),
        f("resp_time_val", i.resp_time_value),
        f("node_type", i.producer_type_or_vendor_id),
    ]
}

pub(crate) fn pkey_fields(r: &PKeyTableRecord) -> Fields {
    vec![
        f("LID", r.lid),
        f("PortNum", r.port_num),
        f("Block", r.block_num),
    ]
}

pub(crate) fn cpi_fields(c: &ClassPortInfo) -> Fields {
    let tsf = |tc: u8, sl: u8, fl: u32| (u32::from(tc) << 24) | (u32::from(sl) << 20) | fl;
    vec![
        f("Base version", c.base_version),
        f("Class version", c.class_version),
        f("Capability mask", c.capability_mask),
        f("Capability mask 2", c.capability_mask2),
        f("Response time value", c.resp_time_value),
        f("Redirect GID", gid(&c.redirect_gid)),
        f(
            "Redirect TC/SL/FL",
            tsf(c.redirect_tc, c.redirect_sl, c.redirect_fl),
        ),
        f("Redirect LID", c.redirect_lid),
        f("Redirect PKey", c.redirect_pkey),
        f("Redirect QP", c.redirect_qp),
        f("Redirect QKey", c.redirect_qkey),
        f("Trap GID", gid(&c.trap_gid)),
        f("Trap TC/SL/FL", tsf(c.trap_tc, c.trap_sl, c.trap_fl)),
        f("Trap LID", c.trap_lid),
        f("Trap PKey", c.trap_pkey),
        f("Trap HL/QP", (u32::from(c.trap_hl) << 24) | c.trap_qp),
        f("Trap QKey", c.trap_qkey),
    ]
}

pub(crate) fn mad_status(mad: &[u8]) -> u16 {
    mad_testkit::header::of(mad).status.0
}

pub(crate) fn records_of<R: SaRecord>(
    mad: &[u8],
    fields: fn(&R) -> Fields,
) -> Result<Answer, String> {
    if mad.len() < 56 {
        return Err(format!("{} bytes are no SA MAD", mad.len()));
    }
    let status = mad_status(mad);
    if status != 0 {
        return Ok(Answer::Status(status));
    }
    let h = mad_testkit::header::of(mad);
    if (h.method, h.response) == (Method::GET_TABLE, true) {
        let t = parse_table::<R>(mad).map_err(|e| e.to_string())?;
        Ok(Answer::Records(
            t.records.iter().map(fields).collect(),
            t.truncated,
        ))
    } else {
        let r = parse_record::<R>(mad).map_err(|e| e.to_string())?;
        Ok(Answer::Records(vec![fields(&r)], false))
    }
}

/// Decodes an answer of attribute `attr` into saquery's labels.
pub(crate) fn decode(attr: AttributeId, mad: &[u8]) -> Result<Answer, String> {
    match attr {
        AttributeId::SA_NODE_RECORD => records_of(mad, node_fields),
        AttributeId::SA_PORTINFO_RECORD => records_of(mad, port_info_fields),
        AttributeId::SA_LINK_RECORD => records_of(mad, link_fields),
        AttributeId::SA_PATH_RECORD => records_of(mad, path_fields),
        AttributeId::SA_SWITCHINFO_RECORD => records_of(mad, switch_fields),
        AttributeId::SA_SMINFO_RECORD => records_of(mad, sminfo_fields),
        AttributeId::SA_GUIDINFO_RECORD => records_of(mad, guid_fields),
        AttributeId::SA_LFT_RECORD => records_of(mad, lft_fields),
        AttributeId::SA_MCMEMBER_RECORD => records_of(mad, mcmember_fields),
        AttributeId::SA_SERVICE_RECORD => records_of(mad, service_fields),
        AttributeId::SA_INFORMINFO_RECORD => records_of(mad, inform_fields),
        AttributeId::SA_PKEY_TABLE_RECORD => records_of(mad, pkey_fields),
        AttributeId::CLASS_PORT_INFO => {
            let status = mad_status(mad);
            if status != 0 {
                return Ok(Answer::Status(status));
            }
            let c =
                ClassPortInfo::parse(mad.get(56..).unwrap_or(&[])).map_err(|e| e.to_string())?;
            Ok(Answer::Records(vec![cpi_fields(&c)], false))
        }
        a => Err(format!("no decoder for attribute {a:?}")),
    }
}
