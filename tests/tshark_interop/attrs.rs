//! The tshark field names of every attribute and their expectations.

use mad_core::wire::attr::*;
use mad_core::wire::field::Fields;

use crate::expect::*;

// ------------------------------------------------------------ attributes

pub(crate) const NODE_INFO: &[(&str, &str)] = &[
    ("infiniband.nodeinfo.baseversion", "base_version"),
    ("infiniband.nodeinfo.classversion", "class_version"),
    ("infiniband.nodeinfo.nodetype", "node_type"),
    ("infiniband.nodeinfo.numports", "num_ports"),
    ("infiniband.nodeinfo.systemimageguid", "system_image_guid"),
    ("infiniband.nodeinfo.nodeguid", "node_guid"),
    ("infiniband.nodeinfo.portguid", "port_guid"),
    ("infiniband.nodeinfo.partitioncap", "partition_cap"),
    ("infiniband.nodeinfo.deviceid", "device_id"),
    ("infiniband.nodeinfo.revision", "revision"),
    ("infiniband.nodeinfo.localportnum", "local_port_num"),
    ("infiniband.nodeinfo.vendorid", "vendor_id"),
];

pub(crate) const SWITCH_INFO: &[(&str, &str)] = &[
    ("infiniband.switchinfo.linearfdbcap", "linear_fdb_cap"),
    ("infiniband.switchinfo.randomfdbcap", "random_fdb_cap"),
    ("infiniband.switchinfo.multicastfdbcap", "multicast_fdb_cap"),
    ("infiniband.switchinfo.linearfdbtop", "linear_fdb_top"),
    ("infiniband.switchinfo.defaultport", "default_port"),
    (
        "infiniband.switchinfo.defaultmulticastprimaryport",
        "default_mcast_primary_port",
    ),
    (
        "infiniband.switchinfo.defaultmulticastnotprimaryport",
        "default_mcast_not_primary_port",
    ),
    ("infiniband.switchinfo.lifetimevalue", "life_time_value"),
    ("infiniband.switchinfo.portstatechange", "port_state_change"),
    (
        "infiniband.switchinfo.optimizedsltovlmappingprogramming",
        "opt_sl_to_vl_mapping",
    ),
    ("infiniband.switchinfo.lidsperport", "lids_per_port"),
    (
        "infiniband.switchinfo.partitionenforcementcap",
        "partition_enforcement_cap",
    ),
    (
        "infiniband.switchinfo.inboundenforcementcap",
        "inbound_enforcement_cap",
    ),
    (
        "infiniband.switchinfo.outboundenforcementcap",
        "outbound_enforcement_cap",
    ),
    (
        "infiniband.switchinfo.filterrawinboundcap",
        "filter_raw_inbound_cap",
    ),
    (
        "infiniband.switchinfo.filterrawoutboundcap",
        "filter_raw_outbound_cap",
    ),
    ("infiniband.switchinfo.enhancedportzero", "enhanced_port0"),
];

pub(crate) const PORT_INFO: &[(&str, &str)] = &[
    ("infiniband.portinfo.m_key", "m_key"),
    ("infiniband.portinfo.guid", "gid_prefix"),
    ("infiniband.portinfo.lid", "lid"),
    ("infiniband.portinfo.mastersmlid", "master_sm_lid"),
    ("infiniband.portinfo.capabilitymask", "capability_mask"),
    ("infiniband.portinfo.diagcode", "diag_code"),
    ("infiniband.portinfo.m_keyleaseperiod", "m_key_lease_period"),
    ("infiniband.portinfo.localportnum", "local_port_num"),
    ("infiniband.portinfo.linkwidthenabled", "link_width_enabled"),
    (
        "infiniband.portinfo.linkwidthsupported",
        "link_width_supported",
    ),
    ("infiniband.portinfo.linkwidthactive", "link_width_active"),
    (
        "infiniband.portinfo.linkspeedsupported",
        "link_speed_supported",
    ),
    ("infiniband.portinfo.portstate", "port_state"),
    ("infiniband.portinfo.portphysicalstate", "port_phys_state"),
    (
        "infiniband.portinfo.linkdowndefaultstate",
        "link_down_default_state",
    ),
    ("infiniband.portinfo.m_keyprotectbits", "m_key_protect_bits"),
    ("infiniband.portinfo.lmc", "lmc"),
    ("infiniband.portinfo.linkspeedactive", "link_speed_active"),
    ("infiniband.portinfo.linkspeedenabled", "link_speed_enabled"),
    ("infiniband.portinfo.neighbormtu", "neighbor_mtu"),
    ("infiniband.portinfo.mastersmsl", "master_sm_sl"),
    ("infiniband.portinfo.vlcap", "vl_cap"),
    ("infiniband.portinfo.inittype", "init_type"),
    ("infiniband.portinfo.vlhighlimit", "vl_high_limit"),
    (
        "infiniband.portinfo.vlarbitrationhighcap",
        "vl_arb_high_cap",
    ),
    ("infiniband.portinfo.vlarbitrationlowcap", "vl_arb_low_cap"),
    ("infiniband.portinfo.inittypereply", "init_type_reply"),
    ("infiniband.portinfo.mtucap", "mtu_cap"),
    ("infiniband.portinfo.vlstallcount", "vl_stall_count"),
    ("infiniband.portinfo.hoqlife", "hoq_life"),
    ("infiniband.portinfo.operationalvls", "operational_vls"),
    (
        "infiniband.portinfo.partitionenforcementinbound",
        "partition_enforcement_inbound",
    ),
    (
        "infiniband.portinfo.partitionenforcementoutbound",
        "partition_enforcement_outbound",
    ),
    ("infiniband.portinfo.filterrawinbound", "filter_raw_inbound"),
    (
        "infiniband.portinfo.filterrawoutbound",
        "filter_raw_outbound",
    ),
    ("infiniband.portinfo.m_keyviolations", "m_key_violations"),
    ("infiniband.portinfo.p_keyviolations", "p_key_violations"),
    ("infiniband.portinfo.q_keyviolations", "q_key_violations"),
    ("infiniband.portinfo.guidcap", "guid_cap"),
    ("infiniband.portinfo.clientreregister", "client_reregister"),
    ("infiniband.portinfo.subnettimeout", "subnet_timeout"),
    ("infiniband.portinfo.resptimevalue", "resp_time_value"),
    ("infiniband.portinfo.localphyerrors", "local_phy_errors"),
    ("infiniband.portinfo.overrunerrors", "overrun_errors"),
    ("infiniband.portinfo.maxcredithint", "max_credit_hint"),
    (
        "infiniband.portinfo.linkroundtriplatency",
        "link_round_trip_latency",
    ),
];

/// PortInfo:CapabilityMask bits as tshark names them, with bit numbers.
pub(crate) const PORT_CAP_BITS: &[(&str, u32)] = &[
    ("issm", 1),
    ("noticesupported", 2),
    ("trapsupported", 3),
    ("optionalipdsupported", 4),
    ("automaticmigrationsupported", 5),
    ("slmappingsupported", 6),
    ("mkeynvram", 7),
    ("pkeynvram", 8),
    ("ledinfosupported", 9),
    ("smdisabled", 10),
    ("systemimageguidsupported", 11),
    ("pkeyswitchexternalporttrapsupported", 12),
    ("communicationmanagementsupported", 16),
    ("snmptunnelingsupported", 17),
    ("reinitsupported", 18),
    ("devicemanagementsupported", 19),
    ("vendorclasssupported", 20),
    ("drnoticesupported", 21),
    ("capabilitymasknoticesupported", 22),
    ("bootmanagementsupported", 23),
    ("linkroundtriplatencysupported", 24),
    ("clientregistrationsupported", 25),
    ("otherlocalchangesnoticesupported", 26),
    ("linkspeedwidthpairstablesupported", 27),
];

pub(crate) fn expect_port_info(e: &mut Expect, obj: &dyn Fields, prefix: &str) {
    e.fields(obj, prefix, PORT_INFO);
    let cap = lookup_uint(obj, &format!("{prefix}capability_mask"));
    for (name, bit) in PORT_CAP_BITS {
        e.uint(
            &format!("infiniband.portinfo.capabilitymask.{name}"),
            (cap >> bit) & 1,
            format!("PortInfo.capability_mask bit {bit}"),
        );
    }
}

pub(crate) const SM_INFO: &[(&str, &str)] = &[
    ("infiniband.sminfo.guid", "guid"),
    ("infiniband.sminfo.sm_key", "sm_key"),
    ("infiniband.sminfo.actcount", "act_count"),
    ("infiniband.sminfo.priority", "priority"),
    ("infiniband.sminfo.smstate", "sm_state"),
];

pub(crate) fn expect_pkeys(e: &mut Expect, obj: &dyn Fields, path: &str) {
    e.field_xf(obj, "infiniband.p_keytable.membershiptype", path, |v| {
        v >> 15
    });
    e.field_xf(obj, "infiniband.p_keytable.p_keybase", path, |v| v & 0x7FFF);
}

pub(crate) const CLASS_PORT_INFO: &[(&str, &str)] = &[
    ("infiniband.classportinfo.baseversion", "base_version"),
    ("infiniband.classportinfo.classversion", "class_version"),
    ("infiniband.classportinfo.capabilitymask", "capability_mask"),
    (
        "infiniband.classportinfo.capabilitymask2",
        "capability_mask2",
    ),
    ("infiniband.classportinfo.resptimevalue", "resp_time_value"),
    ("infiniband.classportinfo.redirectgid", "redirect_gid"),
    ("infiniband.classportinfo.redirecttc", "redirect_tc"),
    ("infiniband.classportinfo.redirectsl", "redirect_sl"),
    ("infiniband.classportinfo.redirectfl", "redirect_fl"),
    ("infiniband.classportinfo.redirectlid", "redirect_lid"),
    ("infiniband.classportinfo.redirectpkey", "redirect_pkey"),
    ("infiniband.classportinfo.reserved", "reserved"),
    ("infiniband.classportinfo.redirectqp", "redirect_qp"),
    ("infiniband.classportinfo.redirectqkey", "redirect_qkey"),
    ("infiniband.classportinfo.trapgid", "trap_gid"),
    ("infiniband.classportinfo.traptc", "trap_tc"),
    ("infiniband.classportinfo.trapsl", "trap_sl"),
    ("infiniband.classportinfo.trapfl", "trap_fl"),
    ("infiniband.classportinfo.traplid", "trap_lid"),
    ("infiniband.classportinfo.trappkey", "trap_pkey"),
    // tshark labels IBA's TrapHL (byte 64) "Reserved".
    ("infiniband.classportinfo.reserved", "trap_hl"),
    ("infiniband.classportinfo.trapqp", "trap_qp"),
    ("infiniband.classportinfo.trapqkey", "trap_qkey"),
];

pub(crate) const PORT_COUNTERS: &[(&str, &str)] = &[
    ("infiniband.portcounters.portselect", "port_select"),
    ("infiniband.portcounters.counterselect", "counter_select"),
    (
        "infiniband.portcounters.symbolerrorcounter",
        "symbol_error_counter",
    ),
    (
        "infiniband.portcounters.linkerrorrecoverycounter",
        "link_error_recovery_counter",
    ),
    (
        "infiniband.portcounters.linkdownedcounter",
        "link_downed_counter",
    ),
    ("infiniband.portcounters.portrcverrors", "port_rcv_errors"),
    (
        "infiniband.portcounters.portrcvremotephysicalerrors",
        "port_rcv_remote_physical_errors",
    ),
    (
        "infiniband.portcounters.portrcvswitchrelayerrors",
        "port_rcv_switch_relay_errors",
    ),
    (
        "infiniband.portcounters.portxmitdiscards",
        "port_xmit_discards",
    ),
    (
        "infiniband.portcounters.portxmitconstrainterrors",
        "port_xmit_constraint_errors",
    ),
    (
        "infiniband.portcounters.portrcvconstrainterrors",
        "port_rcv_constraint_errors",
    ),
    (
        "infiniband.portcounters.locallinkintegrityerrors",
        "local_link_integrity_errors",
    ),
    (
        "infiniband.portcounters.excessivebufferoverrunerrors",
        "excessive_buffer_overrun_errors",
    ),
    ("infiniband.portcounters.vl15dropped", "vl15_dropped"),
    ("infiniband.portcounters.portxmitdata", "port_xmit_data"),
    ("infiniband.portcounters.portrcvdata", "port_rcv_data"),
    ("infiniband.portcounters.portxmitpkts", "port_xmit_pkts"),
    ("infiniband.portcounters.portrcvpkts", "port_rcv_pkts"),
];

pub(crate) const PORT_COUNTERS_EXT: &[(&str, &str)] = &[
    ("infiniband.portcounters_ext.portselect", "port_select"),
    (
        "infiniband.portcounters_ext.counterselect",
        "counter_select",
    ),
    ("infiniband.portcounters_ext.portxmitdata", "port_xmit_data"),
    ("infiniband.portcounters_ext.portrcvdata", "port_rcv_data"),
    ("infiniband.portcounters_ext.portxmitpkts", "port_xmit_pkts"),
    ("infiniband.portcounters_ext.portrcvpkts", "port_rcv_pkts"),
    (
        "infiniband.portcounters_ext.portunicastxmitpkts",
        "port_unicast_xmit_pkts",
    ),
    (
        "infiniband.portcounters_ext.portunicastrcvpkts",
        "port_unicast_rcv_pkts",
    ),
    (
        "infiniband.portcounters_ext.portmulticastxmitpkts",
        "port_multicast_xmit_pkts",
    ),
    (
        "infiniband.portcounters_ext.portmulticastrcvpkts",
        "port_multicast_rcv_pkts",
    ),
];

pub(crate) const NOTICE: &[(&str, &str)] = &[
    ("infiniband.notice.isgeneric", "is_generic"),
    ("infiniband.notice.type", "notice_type"),
    (
        "infiniband.notice.producertypevendorid",
        "producer_type_or_vendor_id",
    ),
    (
        "infiniband.notice.trapnumberdeviceid",
        "trap_number_or_device_id",
    ),
    ("infiniband.notice.issuerlid", "issuer_lid"),
    ("infiniband.notice.noticetoggle", "toggle"),
    ("infiniband.notice.noticecount", "count"),
];

/// DataDetails of the generic traps tshark decodes, per the IBA layouts in
/// ATTRIBUTES.md §7 (offsets within the Notice attribute; DataDetails
/// starts at byte 10).
pub(crate) fn expect_trap_details(e: &mut Expect, n: &Notice) {
    let d = |a: usize| n.data_details[a - 10];
    let be = |a: usize, len: usize| (a..a + len).fold(0u64, |acc, i| (acc << 8) | u64::from(d(i)));
    let bytes = |a: usize, len: usize| (a..a + len).map(d).collect::<Vec<u8>>();
    let ours = |a: usize| format!("Notice.data_details (attribute byte {a})");
    match n.trap_number_or_device_id {
        64..=67 => e.bytes("infiniband.trap.gidaddr", &bytes(16, 16), ours(16)),
        128 => e.uint("infiniband.trap.lidaddr", be(10, 2), ours(10)),
        129..=131 => {
            e.uint("infiniband.trap.lidaddr", be(12, 2), ours(12));
            e.uint("infiniband.trap.portno", be(14, 1), ours(14));
        }
        144 => {
            e.uint("infiniband.trap.lidaddr", be(12, 2), ours(12));
            e.uint("infiniband.trap.otherlocalchanges", be(15, 1) & 1, ours(15));
            e.uint("infiniband.trap.capabilitymask", be(16, 4), ours(16));
            e.uint(
                "infiniband.trap.linkspeecenabledchange",
                (be(21, 1) >> 2) & 1,
                ours(21),
            );
            e.uint(
                "infiniband.trap.linkwidthenabledchange",
                (be(21, 1) >> 1) & 1,
                ours(21),
            );
            e.uint(
                "infiniband.trap.nodedescriptionchange",
                be(21, 1) & 1,
                ours(21),
            );
        }
        145 => {
            e.uint("infiniband.trap.lidaddr", be(12, 2), ours(12));
            e.uint("infiniband.trap.systemimageguid", be(16, 8), ours(16));
        }
        256 => {
            e.uint("infiniband.trap.lidaddr", be(12, 2), ours(12));
            e.uint("infiniband.trap.drslid", be(14, 2), ours(14));
            e.uint("infiniband.trap.method", be(16, 1), ours(16));
            e.uint("infiniband.trap.attributeid", be(18, 2), ours(18));
            e.uint("infiniband.trap.attributemodifier", be(20, 4), ours(20));
            e.uint("infiniband.trap.mkey", be(24, 8), ours(24));
            e.uint("infiniband.trap.drnotice", be(33, 1) >> 7, ours(33));
            e.uint(
                "infiniband.trap.drpathtruncated",
                (be(33, 1) >> 6) & 1,
                ours(33),
            );
            e.uint("infiniband.trap.drhopcount", be(33, 1) & 0x3F, ours(33));
            e.bytes(
                "infiniband.trap.drnoticereturnpath",
                &bytes(34, 30),
                ours(34),
            );
        }
        257 | 258 => {
            e.uint("infiniband.trap.lidaddr1", be(12, 2), ours(12));
            e.uint("infiniband.trap.lidaddr2", be(14, 2), ours(14));
            e.uint("infiniband.trap.key", be(16, 4), ours(16));
            e.uint("infiniband.trap.sl", be(20, 1) >> 4, ours(20));
            e.uint("infiniband.trap.qp1", be(21, 3), ours(21));
            e.uint("infiniband.trap.qp2", be(25, 3), ours(25));
            e.bytes("infiniband.trap.gidaddr1", &bytes(28, 16), ours(28));
            e.bytes("infiniband.trap.gidaddr2", &bytes(44, 16), ours(44));
        }
        other => panic!("no DataDetails mapping for trap {other}"),
    }
}
