//! `saquery` output (infiniband-diags 44 `saquery.c`): one function per
//! record dump, the node lists, `-s`, `-g`, `-m` and the SA
//! ClassPortInfo.
//!
//! Node descriptions are shown as `clean_nodedesc` leaves them (no
//! node-name map). Text fields that saquery prints raw (ServiceName) are
//! decoded as UTF-8 with U+FFFD for invalid bytes.

use super::dump::{self, inet_ntop6};
use super::smp::{portinfo_fields, NOT_DISPLAYED};
use mad_core::wire::attr::ClassPortInfo;
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, MftRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, ServiceRecord, Sl2VlRecord, SmInfoRecord,
    SwitchInfoRecord, VlArbRecord,
};

/// Bytes before the first record of an SA MAD (`IB_SA_DATA_OFFS`).
pub const SA_DATA_OFFSET: usize = 56;

/// SA ClassPortInfo CapabilityMask2 bit: MulticastFDBTop supported
/// (`UMAD_SA_CAP_MASK2_IS_MCAST_TOP_SUP`); saquery prints SwitchInfoRecord's
/// MulticastFDBTop only with it.
pub const SA_CAP2_IS_MCAST_TOP_SUP: u32 = 1 << 3;

/// How many records saquery takes from a response of `mad_len` bytes
/// (`sa_query` in `ibdiag_sa.c`): 1 for a Get, 0 for an error status or
/// an AttributeOffset of 0, else `(mad_len - 56) / (attr_offset * 8)`
/// for a GetTable. Under libumad2sim `mad_len` is 256 (one segment).
#[must_use]
pub fn result_count(mad_len: usize, status: u16, get_table: bool, attr_offset: u16) -> usize {
    if status != 0 {
        0
    } else if !get_table {
        1
    } else if attr_offset == 0 {
        0
    } else {
        mad_len.saturating_sub(SA_DATA_OFFSET) / (usize::from(attr_offset) * 8)
    }
}

/// The line saquery writes to **stderr** for an SA error status
/// (`sa_report_err`): `ERROR: Query result returned 0xSSSS, ` followed by
/// the MAD-status part (when the low byte is set) and ` SA(NAME)` (when
/// the SA status byte is set), e.g. `ERROR: Query result returned
/// 0x0200,  SA(SA_ERR_REQ_INVALID)` (two spaces: the empty MAD part).
#[must_use]
pub fn format_sa_report_err(status: u16) -> String {
    const SA_ERR: [&str; 10] = [
        "SA_NO_ERROR",
        "SA_ERR_NO_RESOURCES",
        "SA_ERR_REQ_INVALID",
        "SA_ERR_NO_RECORDS",
        "SA_ERR_TOO_MANY_RECORDS",
        "SA_ERR_REQ_INVALID_GID",
        "SA_ERR_REQ_INSUFFICIENT_COMPONENTS",
        "SA_ERR_REQ_DENIED",
        "SA_ERR_STATUS_PRIO_SUGGESTED",
        "SA_ERR_UNKNOWN",
    ];
    const MAD_ERR: [&str; 9] = [
        "MAD No invalid fields",
        "MAD Bad version",
        "MAD Method specified is not supported",
        "MAD Method/Attribute combination is not supported",
        "MAD Reserved",
        "MAD Reserved",
        "MAD Reserved",
        "MAD Invalid value in Attribute field(s) or Attribute Modifier",
        "MAD UNKNOWN ERROR",
    ];
    let st = status & 0xFF;
    let mad = if st != 0 {
        format!(
            " ({}; {}; {})",
            if st & 1 != 0 { "BUSY" } else { "" },
            if st & 2 != 0 {
                "Redirection Required"
            } else {
                ""
            },
            MAD_ERR[usize::from(st >> 2).min(MAD_ERR.len() - 1)]
        )
    } else {
        String::new()
    };
    let sa = status >> 8;
    let sa = if sa != 0 {
        format!(" SA({})", SA_ERR[usize::from(sa).min(SA_ERR.len() - 1)])
    } else {
        String::new()
    };
    format!("ERROR: Query result returned 0x{status:04x}, {mad}{sa}\n")
}

/// Concatenates `f` over `records`, as saquery's `dump_results` does.
#[must_use]
pub fn format_all<R>(records: &[R], f: impl Fn(&R) -> String) -> String {
    records.iter().map(f).collect()
}

fn node_name(nr: &NodeRecord) -> String {
    dump::clean_nodedesc(&nr.node_desc)
}

/// `dump_node_record` (`saquery`, `saquery NR`, `saquery -N`).
#[must_use]
pub fn format_node_record(nr: &NodeRecord) -> String {
    let ni = &nr.node_info;
    format!(
        "NodeRecord dump:\n\
         \t\tlid.....................{}\n\
         \t\treserved................0x{:X}\n\
         \t\tbase_version............0x{:X}\n\
         \t\tclass_version...........0x{:X}\n\
         \t\tnode_type...............{}\n\
         \t\tnum_ports...............{}\n\
         \t\tsys_guid................0x{:016x}\n\
         \t\tnode_guid...............0x{:016x}\n\
         \t\tport_guid...............0x{:016x}\n\
         \t\tpartition_cap...........0x{:X}\n\
         \t\tdevice_id...............0x{:X}\n\
         \t\trevision................0x{:X}\n\
         \t\tport_num................{}\n\
         \t\tvendor_id...............0x{:X}\n\
         \t\tNodeDescription.........{}\n",
        nr.lid,
        nr.reserved,
        ni.base_version,
        ni.class_version,
        dump::node_type_str(ni.node_type.0),
        ni.num_ports,
        ni.system_image_guid,
        ni.node_guid,
        ni.port_guid,
        ni.partition_cap,
        ni.device_id,
        ni.revision,
        ni.local_port_num,
        ni.vendor_id,
        node_name(nr)
    )
}

/// `saquery -D` (`--list`): the header and one `%6d  "name"` line per
/// channel adapter (other node types are skipped).
#[must_use]
pub fn format_node_list(records: &[NodeRecord]) -> String {
    let mut s = String::from("   LID \"name\"\n================\n");
    for nr in records {
        if nr.node_info.node_type.0 == 1 {
            s.push_str(&format!("{:6}  \"{}\"\n", nr.lid, node_name(nr)));
        }
    }
    s
}

/// `saquery -L NAME` / `-l NAME` line for a matching record: the LID.
#[must_use]
pub fn format_node_lid(nr: &NodeRecord) -> String {
    format!("{}\n", nr.lid)
}

/// `saquery -G NAME` line for a matching record: the port GUID.
#[must_use]
pub fn format_node_port_guid(nr: &NodeRecord) -> String {
    format!("0x{:016x}\n", nr.node_info.port_guid)
}

/// `saquery -O LID` / `-U GUID` line for a matching record: the name.
#[must_use]
pub fn format_node_name(nr: &NodeRecord) -> String {
    format!("{}\n", node_name(nr))
}

/// `dump_path_record` (`saquery PR`, `-p`, `--src-to-dst`): the raw
/// `hop_flow_raw`, `num_path`, `mtu`, `rate`, `pkt_life` bytes (selectors
/// included) and the six trailing reserved bytes.
#[must_use]
pub fn format_path_record(pr: &PathRecord) -> String {
    let hop_flow_raw = (u32::from(pr.raw_traffic) << 31)
        | (u32::from(pr.reserved & 0x7) << 28)
        | ((pr.flow_label & 0xF_FFFF) << 8)
        | u32::from(pr.hop_limit);
    let num_path = (u8::from(pr.reversible) << 7) | (pr.numb_path & 0x7F);
    let sel = |s: u8, v: u8| (s << 6) | (v & 0x3F);
    let r1 = pr.reserved1 & 0x3FFF;
    let resv2 = [
        ((pr.reverse_path_pkey_member_bit & 0x3) << 6) | (r1 >> 8) as u8,
        (r1 & 0xFF) as u8,
    ];
    let r2 = pr.reserved2.to_be_bytes();
    format!(
        "PathRecord dump:\n\
         \t\tservice_id..............0x{:016x}\n\
         \t\tdgid....................{}\n\
         \t\tsgid....................{}\n\
         \t\tdlid....................{}\n\
         \t\tslid....................{}\n\
         \t\thop_flow_raw............0x{:X}\n\
         \t\ttclass..................0x{:X}\n\
         \t\tnum_path_revers.........0x{:X}\n\
         \t\tpkey....................0x{:X}\n\
         \t\tqos_class...............0x{:X}\n\
         \t\tsl......................0x{:X}\n\
         \t\tmtu.....................0x{:X}\n\
         \t\trate....................0x{:X}\n\
         \t\tpkt_life................0x{:X}\n\
         \t\tpreference..............0x{:X}\n\
         \t\tresv2...................0x{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}\n",
        pr.service_id,
        inet_ntop6(&pr.dgid),
        inet_ntop6(&pr.sgid),
        pr.dlid,
        pr.slid,
        hop_flow_raw,
        pr.tclass,
        num_path,
        pr.pkey,
        pr.qos_class,
        pr.sl,
        sel(pr.mtu_selector.0, pr.mtu),
        sel(pr.rate_selector.0, pr.rate),
        sel(pr.packet_life_time_selector.0, pr.packet_life_time),
        pr.preference,
        resv2[0],
        resv2[1],
        r2[0],
        r2[1],
        r2[2],
        r2[3]
    )
}

/// `dump_class_port_info` (`saquery -c`, `saquery CPI`): TC/SL/FL and
/// HL/QP as the 32-bit words they share, RedirectQP with the reserved
/// byte before it.
#[must_use]
pub fn format_class_port_info(cpi: &ClassPortInfo) -> String {
    let tc_sl_fl = |tc: u8, sl: u8, fl: u32| {
        (u32::from(tc) << 24) | (u32::from(sl & 0xF) << 20) | (fl & 0xF_FFFF)
    };
    format!(
        "SA ClassPortInfo:\n\
         \t\tBase version.............{}\n\
         \t\tClass version............{}\n\
         \t\tCapability mask..........0x{:04X}\n\
         \t\tCapability mask 2........0x{:08X}\n\
         \t\tResponse time value......0x{:02X}\n\
         \t\tRedirect GID.............{}\n\
         \t\tRedirect TC/SL/FL........0x{:08X}\n\
         \t\tRedirect LID.............{}\n\
         \t\tRedirect PKey............0x{:04X}\n\
         \t\tRedirect QP..............0x{:08X}\n\
         \t\tRedirect QKey............0x{:08X}\n\
         \t\tTrap GID.................{}\n\
         \t\tTrap TC/SL/FL............0x{:08X}\n\
         \t\tTrap LID.................{}\n\
         \t\tTrap PKey................0x{:04X}\n\
         \t\tTrap HL/QP...............0x{:08X}\n\
         \t\tTrap QKey................0x{:08X}\n",
        cpi.base_version,
        cpi.class_version,
        cpi.capability_mask,
        cpi.capability_mask2,
        cpi.resp_time_value,
        inet_ntop6(&cpi.redirect_gid),
        tc_sl_fl(cpi.redirect_tc, cpi.redirect_sl, cpi.redirect_fl),
        cpi.redirect_lid,
        cpi.redirect_pkey,
        (u32::from(cpi.reserved) << 24) | (cpi.redirect_qp & 0xFF_FFFF),
        cpi.redirect_qkey,
        inet_ntop6(&cpi.trap_gid),
        tc_sl_fl(cpi.trap_tc, cpi.trap_sl, cpi.trap_fl),
        cpi.trap_lid,
        cpi.trap_pkey,
        (u32::from(cpi.trap_hl) << 24) | (cpi.trap_qp & 0xFF_FFFF),
        cpi.trap_qkey
    )
}

/// `dump_portinfo_record`, the short form `saquery -s` prints.
#[must_use]
pub fn format_portinfo_record_brief(pir: &PortInfoRecord) -> String {
    format!(
        "PortInfoRecord dump:\n\
         \t\tEndPortLid..............{}\n\
         \t\tPortNum.................{}\n\
         \t\tbase_lid................{}\n\
         \t\tmaster_sm_base_lid......{}\n\
         \t\tcapability_mask.........0x{:X}\n",
        pir.lid,
        pir.port_num,
        pir.port_info.lid,
        pir.port_info.master_sm_lid,
        pir.port_info.capability_mask
    )
}

/// `saquery -s`: the IsSM records, then the IsSMdisabled ones.
#[must_use]
pub fn format_issm(is_sm: &[PortInfoRecord], sm_disabled: &[PortInfoRecord]) -> String {
    format!(
        "IsSM ports\n{}\nIsSMdisabled ports\n{}",
        format_all(is_sm, format_portinfo_record_brief),
        format_all(sm_disabled, format_portinfo_record_brief)
    )
}

/// `dump_one_portinfo_record` (`saquery PIR`): the RID, then the PortInfo
/// fields with two tabs (see [`portinfo_fields`]).
#[must_use]
pub fn format_portinfo_record(pir: &PortInfoRecord, show_keys: bool) -> String {
    format!(
        "PortInfoRecord dump:\n\
         \tRID\n\
         \t\tEndPortLid..............{}\n\
         \t\tPortNum.................{}\n\
         \t\tOptions.................0x{:x}\n\
         \tPortInfo dump:\n{}",
        pir.lid,
        pir.port_num,
        pir.options,
        portinfo_fields(&pir.port_info, 2, show_keys)
    )
}

/// saquery reads ProxyJoin through the C bit-field `uint8_t proxy_join:1`,
/// which GCC on little-endian hosts places in the *least* significant
/// bit of byte 49, while the IBA field is the most significant one. The
/// printed value is therefore bit 0 of that byte (here bit 16 of
/// `reserved`), not [`McMemberRecord::proxy_join`].
fn proxy_join_as_printed(mr: &McMemberRecord) -> u8 {
    ((mr.reserved >> 16) & 1) as u8
}

fn scope_state(mr: &McMemberRecord) -> u8 {
    ((mr.scope & 0xF) << 4) | (mr.join_state & 0xF)
}

fn selector_byte(sel: u8, v: u8) -> u8 {
    (sel << 6) | (v & 0x3F)
}

/// `dump_one_mcmember_record` (`saquery MCMR`). ProxyJoin follows
/// saquery's bit-field quirk (see the module source).
#[must_use]
pub fn format_mcmember_record(mr: &McMemberRecord) -> String {
    format!(
        "MCMember Record dump:\n\
         \t\tMGID....................{}\n\
         \t\tPortGid.................{}\n\
         \t\tqkey....................0x{:x}\n\
         \t\tmlid....................0x{:x}\n\
         \t\tmtu.....................0x{:x}\n\
         \t\tTClass..................0x{:x}\n\
         \t\tpkey....................0x{:x}\n\
         \t\trate....................0x{:x}\n\
         \t\tpkt_life................0x{:x}\n\
         \t\tSL......................0x{:x}\n\
         \t\tFlowLabel...............0x{:x}\n\
         \t\tHopLimit................0x{:x}\n\
         \t\tScope...................0x{:x}\n\
         \t\tJoinState...............0x{:x}\n\
         \t\tProxyJoin...............0x{:x}\n",
        inet_ntop6(&mr.mgid),
        inet_ntop6(&mr.port_gid),
        mr.qkey,
        mr.mlid,
        selector_byte(mr.mtu_selector.0, mr.mtu),
        mr.tclass,
        mr.pkey,
        selector_byte(mr.rate_selector.0, mr.rate),
        selector_byte(mr.packet_life_time_selector.0, mr.packet_life_time),
        mr.sl,
        mr.flow_label & 0xF_FFFF,
        mr.hop_limit,
        mr.scope,
        mr.join_state,
        proxy_join_as_printed(mr)
    )
}

/// `dump_multicast_group_record` (`saquery -g`).
#[must_use]
pub fn format_mcgroup_record(mr: &McMemberRecord) -> String {
    format!(
        "MCMemberRecord group dump:\n\
         \t\tMGID....................{}\n\
         \t\tMlid....................0x{:X}\n\
         \t\tMtu.....................0x{:X}\n\
         \t\tpkey....................0x{:X}\n\
         \t\tRate....................0x{:X}\n\
         \t\tSL......................0x{:X}\n",
        inet_ntop6(&mr.mgid),
        mr.mlid,
        selector_byte(mr.mtu_selector.0, mr.mtu),
        mr.pkey,
        selector_byte(mr.rate_selector.0, mr.rate),
        mr.sl
    )
}

/// `saquery -m [MLID]`: for each MCMemberRecord, the member dump with the
/// node description of the NodeRecord whose PortGUID is the member's GID
/// interface ID (`<unknown>` if none). With `requested` (the argument,
/// parsed with C `strtol(.., 0)`), only `PortGid (name)` lines of the
/// group with that MLID.
#[must_use]
pub fn format_mcmember_members(
    members: &[McMemberRecord],
    nodes: &[NodeRecord],
    requested: Option<&str>,
) -> String {
    let mut s = String::new();
    for mr in members {
        let mut iid = [0u8; 8];
        iid.copy_from_slice(&mr.port_gid[8..]);
        let iid = u64::from_be_bytes(iid);
        let name = nodes
            .iter()
            .find(|nr| nr.node_info.port_guid == iid)
            .map_or_else(|| "<unknown>".to_owned(), node_name);
        match requested {
            Some(r) => {
                if crate::cnum::c_strtol(r) == i64::from(mr.mlid) {
                    s.push_str(&format!(
                        "\t\tPortGid.................{} ({name})\n",
                        inet_ntop6(&mr.port_gid)
                    ));
                }
            }
            None => s.push_str(&format!(
                "MCMemberRecord member dump:\n\
                 \t\tMGID....................{}\n\
                 \t\tMlid....................0x{:X}\n\
                 \t\tPortGid.................{}\n\
                 \t\tScopeState..............0x{:X}\n\
                 \t\tProxyJoin...............0x{:X}\n\
                 \t\tNodeDescription.........{name}\n",
                inet_ntop6(&mr.mgid),
                mr.mlid,
                inet_ntop6(&mr.port_gid),
                scope_state(mr),
                proxy_join_as_printed(mr)
            )),
        }
    }
    s
}

/// `dump_service_record` (`saquery SR`, `-S`); the ServiceKey is
/// `<not displayed>` unless `show_keys`.
#[must_use]
pub fn format_service_record(sr: &ServiceRecord, show_keys: bool) -> String {
    let key = if show_keys {
        format!("0x{}", dump::array(&sr.service_key))
    } else {
        NOT_DISPLAYED.to_owned()
    };
    let mut s = format!(
        "ServiceRecord dump:\n\
         \t\tServiceID...............0x{:016x}\n\
         \t\tServiceGID..............{}\n\
         \t\tServiceP_Key............0x{:X}\n\
         \t\tServiceLease............0x{:X}\n\
         \t\tServiceKey..............{key}\n\
         \t\tServiceName.............{}\n",
        sr.service_id,
        inet_ntop6(&sr.service_gid),
        sr.service_pkey,
        sr.service_lease,
        sr.name()
    );
    // The labels are padded to 24 characters after the two tabs.
    let mut data = |label: String, value: String| {
        let dots = 24usize.saturating_sub(label.len());
        s.push_str(&format!("\t\t{label}{}{value}\n", ".".repeat(dots)));
    };
    for (i, v) in sr.service_data8.iter().enumerate() {
        data(format!("ServiceData8.{}", i + 1), format!("0x{v:X}"));
    }
    for (i, v) in sr.service_data16.iter().enumerate() {
        data(format!("ServiceData16.{}", i + 1), format!("0x{v:X}"));
    }
    for (i, v) in sr.service_data32.iter().enumerate() {
        data(format!("ServiceData32.{}", i + 1), format!("0x{v:X}"));
    }
    for (i, v) in sr.service_data64.iter().enumerate() {
        data(format!("ServiceData64.{}", i + 1), format!("0x{v:016x}"));
    }
    s
}

/// `dump_sm_info_record` (`saquery SMIR`).
#[must_use]
pub fn format_sm_info_record(r: &SmInfoRecord) -> String {
    format!(
        "SMInfoRecord dump:\n\
         \t\tRID\n\
         \t\tLID...................{}\n\
         \t\tSMInfo dump:\n\
         \t\tGUID..................0x{:016x}\n\
         \t\tSM_Key................0x{:016x}\n\
         \t\tActCount..............{}\n\
         \t\tPriority..............{}\n\
         \t\tSMState...............{}\n",
        r.lid,
        r.sm_info.guid,
        r.sm_info.sm_key,
        r.sm_info.act_count,
        r.sm_info.priority,
        r.sm_info.sm_state.0
    )
}

/// `dump_switch_info_record` (`saquery SWIR`): `sa_cap_mask2` is the SA
/// ClassPortInfo CapabilityMask2 (27 bits); MulticastFDBTop is printed
/// only when it has [`SA_CAP2_IS_MCAST_TOP_SUP`]. The LifeTime byte and
/// the flags byte are printed raw.
#[must_use]
pub fn format_switch_info_record(r: &SwitchInfoRecord, sa_cap_mask2: u32) -> String {
    let si = &r.switch_info;
    let life_state = ((si.life_time_value & 0x1F) << 3)
        | (u8::from(si.port_state_change) << 2)
        | (si.opt_sl_to_vl_mapping & 0x3);
    let flags = (u8::from(si.inbound_enforcement_cap) << 7)
        | (u8::from(si.outbound_enforcement_cap) << 6)
        | (u8::from(si.filter_raw_inbound_cap) << 5)
        | (u8::from(si.filter_raw_outbound_cap) << 4)
        | (u8::from(si.enhanced_port0) << 3)
        | ((si.reserved >> 8) & 0x7) as u8;
    let mut s = format!(
        "SwitchInfoRecord dump:\n\
         \t\tRID\n\
         \t\tLID.....................................{}\n\
         \t\tSwitchInfo dump:\n\
         \t\tLinearFDBCap............................0x{:X}\n\
         \t\tRandomFDBCap............................0x{:X}\n\
         \t\tMulticastFDBCap.........................0x{:X}\n\
         \t\tLinearFDBTop............................0x{:X}\n\
         \t\tDefaultPort.............................{}\n\
         \t\tDefaultMulticastPrimaryPort.............{}\n\
         \t\tDefaultMulticastNotPrimaryPort..........{}\n\
         \t\tLifeTimeValue/PortStateChange/OpSL2VL...0x{:X}\n\
         \t\tLIDsPerPort.............................0x{:X}\n\
         \t\tPartitionEnforcementCap.................0x{:X}\n\
         \t\tflags...................................0x{:X}\n",
        r.lid,
        si.linear_fdb_cap,
        si.random_fdb_cap,
        si.multicast_fdb_cap,
        si.linear_fdb_top,
        si.default_port,
        si.default_mcast_primary_port,
        si.default_mcast_not_primary_port,
        life_state,
        si.lids_per_port,
        si.partition_enforcement_cap,
        flags
    );
    if sa_cap_mask2 & SA_CAP2_IS_MCAST_TOP_SUP != 0 {
        s.push_str(&format!(
            "\t\tMulticastFDBTop.........................0x{:X}\n",
            si.multicast_fdb_top
        ));
    }
    s
}

/// `dump_inform_info_record` (`saquery IIR`, `-I`): the generic or the
/// vendor form by IsGeneric; the QPN is `<not displayed>` unless
/// `show_keys`.
#[must_use]
pub fn format_inform_info_record(r: &InformInfoRecord, show_keys: bool) -> String {
    let ii = &r.inform_info;
    let generic = ii.is_generic != 0;
    let mut s = format!(
        "InformInfoRecord dump:\n\
         \t\tRID\n\
         \t\tSubscriberGID...........{}\n\
         \t\tSubscriberEnum..........0x{:X}\n\
         \t\tInformInfo dump:\n\
         \t\tgid.....................{}\n\
         \t\tlid_range_begin.........{}\n\
         \t\tlid_range_end...........{}\n\
         \t\tis_generic..............0x{:X}\n\
         \t\tsubscribe...............0x{:X}\n\
         \t\ttrap_type...............0x{:X}\n",
        inet_ntop6(&r.subscriber_gid),
        r.enumeration,
        inet_ntop6(&ii.gid),
        ii.lid_range_begin,
        ii.lid_range_end,
        ii.is_generic,
        ii.subscribe,
        ii.trap_type
    );
    if generic {
        s.push_str(&format!(
            "\t\ttrap_num................{}\n",
            ii.trap_number_or_device_id
        ));
    } else {
        s.push_str(&format!(
            "\t\tdev_id..................0x{:X}\n",
            ii.trap_number_or_device_id
        ));
    }
    if show_keys {
        s.push_str(&format!(
            "\t\tqpn.....................0x{:06X}\n",
            ii.qpn & 0xFF_FFFF
        ));
    } else {
        s.push_str(&format!("\t\tqpn.....................{NOT_DISPLAYED}\n"));
    }
    s.push_str(&format!(
        "\t\tresp_time_val...........0x{:X}\n",
        ii.resp_time_value & 0x1F
    ));
    let label = if generic {
        "node_type..............."
    } else {
        "vendor_id..............."
    };
    s.push_str(&format!(
        "\t\t{label}0x{:06X}\n",
        ii.producer_type_or_vendor_id & 0xFF_FFFF
    ));
    s
}

/// `dump_one_link_record` (`saquery LR`, `-x`).
#[must_use]
pub fn format_link_record(r: &LinkRecord) -> String {
    format!(
        "LinkRecord dump:\n\
         \t\tFromLID....................{}\n\
         \t\tFromPort...................{}\n\
         \t\tToPort.....................{}\n\
         \t\tToLID......................{}\n",
        r.from_lid, r.from_port, r.to_port, r.to_lid
    )
}

/// `dump_one_slvl_record` (`saquery SL2VL`).
#[must_use]
pub fn format_sl2vl_record(r: &Sl2VlRecord) -> String {
    let mut s = format!(
        "SL2VLTableRecord dump:\n\
         \t\tLID........................{}\n\
         \t\tInPort.....................{}\n\
         \t\tOutPort....................{}\n\
         \t\tSL: 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|\n\
         \t\tVL:",
        r.lid, r.input_port, r.output_port
    );
    for vl in r.sl2vl.vl {
        s.push_str(&format!("{vl:2}|"));
    }
    s.push('\n');
    s
}

/// `dump_one_vlarb_record` (`saquery VLAR`): two rows of 16, each VL
/// shown as its whole byte (reserved high nibble included, as saquery
/// prints the `vl` byte of `ib_vl_arb_element_t`).
#[must_use]
pub fn format_vlarb_record(r: &VlArbRecord) -> String {
    let mut s = format!(
        "VLArbTableRecord dump:\n\
         \t\tLID........................{}\n\
         \t\tPort.......................{}\n\
         \t\tBlock......................{}\n",
        r.lid, r.output_port, r.block_num
    );
    for half in r.vl_arb.entries.chunks(16) {
        s.push_str("\t\tVL    :");
        for e in half {
            s.push_str(&format!("{:2}|", e >> 8));
        }
        s.push_str("\n\t\tWeight:");
        for e in half {
            s.push_str(&format!("{:2}|", e & 0xFF));
        }
        s.push('\n');
    }
    s
}

/// `dump_one_pkey_tbl_record` (`saquery PKTR`): four rows of eight, then
/// an empty line.
#[must_use]
pub fn format_pkey_table_record(r: &PKeyTableRecord) -> String {
    let mut s = format!(
        "PKeyTableRecord dump:\n\
         \t\tLID........................{}\n\
         \t\tPort.......................{}\n\
         \t\tBlock......................{}\n\
         \t\tPKey Table:\n",
        r.lid, r.port_num, r.block_num
    );
    for row in r.pkey_table.pkeys.chunks(8) {
        let keys: Vec<String> = row.iter().map(|k| format!("0x{k:04x}")).collect();
        s.push_str(&format!("\t\t{}\n", keys.join(" ")));
    }
    s.push('\n');
    s
}

/// `dump_one_lft_record` (`saquery LFTR`): one `LID<TAB>port` line per
/// entry of the block, then an empty line.
#[must_use]
pub fn format_lft_record(r: &LftRecord) -> String {
    let block = u32::from(r.block_num);
    let mut s = format!(
        "LFT Record dump:\n\
         \t\tLID........................{}\n\
         \t\tBlock......................{}\n\
         \t\tLFT:\n\t\tLID\tPort Number\n",
        r.lid, block
    );
    for (i, p) in r.lft.ports.iter().enumerate() {
        s.push_str(&format!("\t\t{}\t{p}\n", block * 64 + i as u32));
    }
    s.push('\n');
    s
}

/// `dump_one_guidinfo_record` (`saquery GIR`).
#[must_use]
pub fn format_guidinfo_record(r: &GuidInfoRecord) -> String {
    let mut s = format!(
        "GUIDInfo Record dump:\n\
         \t\tLID........................{}\n\
         \t\tBlock......................{}\n",
        r.lid, r.block_num
    );
    for (i, g) in r.guid_info.guids.iter().enumerate() {
        s.push_str(&format!("\t\tGUID {i}.....................0x{g:016x}\n"));
    }
    s
}

/// `dump_one_mft_record` (`saquery MFTR`): one `MLID<TAB>mask` line per
/// entry (MLIDs from `0xC000 + block * 32`), then an empty line.
#[must_use]
pub fn format_mft_record(r: &MftRecord) -> String {
    let block = u32::from(r.block_num & 0x1FF);
    let mut s = format!(
        "MFT Record dump:\n\
         \t\tLID........................{}\n\
         \t\tPosition...................{}\n\
         \t\tBlock......................{}\n\
         \t\tMFT:\n\t\tMLID\tPort Mask\n",
        r.lid, r.position, block
    );
    let offset = 0xC000 + block * 32;
    for (i, m) in r.mft.masks.iter().enumerate() {
        s.push_str(&format!("\t\t0x{:04x}\t0x{m:04x}\n", offset + i as u32));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests;
