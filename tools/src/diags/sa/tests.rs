//! The SA formatters against the text of infiniband-diags' saquery.

use super::*;
use mad_core::wire::attr::{NodeDescription, NodeInfo, NodeType, PortInfo, SmInfo, SmState};
use mad_core::wire::sa_records::Selector;

fn hca1() -> NodeRecord {
    NodeRecord {
        lid: 2,
        reserved: 0,
        node_info: NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::CA,
            num_ports: 2,
            system_image_guid: 0x10_0000,
            node_guid: 0x10_0000,
            port_guid: 0x10_0001,
            partition_cap: 64,
            revision: 0xa1,
            local_port_num: 1,
            ..NodeInfo::default()
        },
        node_desc: NodeDescription::from_text("Hca1"),
    }
}

#[test]
fn node_record_dump_matches_saquery() {
    let want = "NodeRecord dump:\n\
\t\tlid.....................2\n\
\t\treserved................0x0\n\
\t\tbase_version............0x1\n\
\t\tclass_version...........0x1\n\
\t\tnode_type...............Channel Adapter\n\
\t\tnum_ports...............2\n\
\t\tsys_guid................0x0000000000100000\n\
\t\tnode_guid...............0x0000000000100000\n\
\t\tport_guid...............0x0000000000100001\n\
\t\tpartition_cap...........0x40\n\
\t\tdevice_id...............0x0\n\
\t\trevision................0xA1\n\
\t\tport_num................1\n\
\t\tvendor_id...............0x0\n\
\t\tNodeDescription.........Hca1\n";
    assert_eq!(format_node_record(&hca1()), want);
    let mut sw = hca1();
    sw.node_info.node_type = NodeType::SWITCH;
    sw.lid = 1;
    assert_eq!(
        format_node_list(&[hca1(), sw.clone()]),
        "   LID \"name\"\n================\n     2  \"Hca1\"\n"
    );
    assert_eq!(format_node_lid(&sw), "1\n");
    assert_eq!(format_node_port_guid(&sw), "0x0000000000100001\n");
    assert_eq!(format_node_name(&sw), "Hca1\n");
}

#[test]
fn sa_error_lines() {
    assert_eq!(
        format_sa_report_err(0x0200),
        "ERROR: Query result returned 0x0200,  SA(SA_ERR_REQ_INVALID)\n"
    );
    assert_eq!(
        format_sa_report_err(0x000C),
        "ERROR: Query result returned 0x000c,  (; ; MAD Method/Attribute combination is not supported)\n"
    );
    assert_eq!(
        format_sa_report_err(0xFF01),
        "ERROR: Query result returned 0xff01,  (BUSY; ; MAD No invalid fields) SA(SA_ERR_UNKNOWN)\n"
    );
}

#[test]
fn result_count_follows_sa_query() {
    assert_eq!(result_count(256, 0, true, 14), 1);
    assert_eq!(result_count(256, 0, true, 1), 25);
    assert_eq!(result_count(256, 0, false, 14), 1);
    assert_eq!(result_count(256, 0x0300, true, 14), 0);
    assert_eq!(result_count(256, 0, true, 0), 0);
    assert_eq!(result_count(40, 0, true, 1), 0);
}

#[test]
fn path_record_shows_raw_composite_bytes() {
    let mut dgid = [0u8; 16];
    dgid[0] = 0xfe;
    dgid[1] = 0x80;
    dgid[13] = 0x20;
    let pr = PathRecord {
        dgid,
        sgid: dgid,
        dlid: 1,
        slid: 1,
        flow_label: 0x12345,
        hop_limit: 0x40,
        reversible: true,
        numb_path: 0x7f,
        pkey: 0xffff,
        qos_class: 0x5,
        sl: 3,
        mtu_selector: Selector::EXACTLY,
        mtu: 4,
        rate_selector: Selector::EXACTLY,
        rate: 3,
        packet_life_time_selector: Selector::EXACTLY,
        packet_life_time: 18,
        reserved2: 0x0102_0304,
        ..PathRecord::default()
    };
    let s = format_path_record(&pr);
    assert!(s.contains("\t\tdgid....................fe80::20:0\n"));
    assert!(s.contains("\t\thop_flow_raw............0x1234540\n"));
    assert!(s.contains("\t\tnum_path_revers.........0xFF\n"));
    assert!(s.contains("\t\tqos_class...............0x5\n\t\tsl......................0x3\n"));
    assert!(s.contains("\t\tmtu.....................0x84\n"));
    assert!(s.contains("\t\tpkt_life................0x92\n"));
    assert!(s.ends_with("\t\tresv2...................0x000001020304\n"));
}

#[test]
fn class_port_info_dump() {
    let cpi = ClassPortInfo {
        base_version: 1,
        class_version: 2,
        capability_mask: 0x2602,
        capability_mask2: 0xB5E8,
        resp_time_value: 0x10,
        redirect_qp: 1,
        redirect_qkey: 0x8001_0000,
        trap_qkey: 0x8001_0000,
        trap_hl: 0x40,
        trap_qp: 1,
        ..ClassPortInfo::default()
    };
    let s = format_class_port_info(&cpi);
    assert!(s.starts_with("SA ClassPortInfo:\n\t\tBase version.............1\n"));
    assert!(s.contains("\t\tCapability mask 2........0x0000B5E8\n"));
    assert!(s.contains("\t\tRedirect GID.............::\n"));
    assert!(s.contains("\t\tRedirect QP..............0x00000001\n"));
    assert!(s.contains("\t\tTrap HL/QP...............0x40000001\n"));
}

#[test]
fn switch_info_record_packs_life_and_flags() {
    let mut r = SwitchInfoRecord {
        lid: 1,
        ..SwitchInfoRecord::default()
    };
    r.switch_info.linear_fdb_cap = 0x7800;
    r.switch_info.life_time_value = 18;
    r.switch_info.filter_raw_inbound_cap = true;
    r.switch_info.filter_raw_outbound_cap = true;
    let without = format_switch_info_record(&r, 0);
    assert!(without.contains("LifeTimeValue/PortStateChange/OpSL2VL...0x90\n"));
    assert!(without.ends_with("\t\tflags...................................0x30\n"));
    let with = format_switch_info_record(&r, 0xB5E8);
    assert!(with.ends_with("\t\tMulticastFDBTop.........................0x0\n"));
}

#[test]
fn mcmember_proxy_join_reads_the_low_bit_of_byte_49() {
    let mut mgid = [0u8; 16];
    mgid[..6].copy_from_slice(&[0xff, 0x12, 0x40, 0x1b, 0xff, 0xff]);
    mgid[12..].copy_from_slice(&[0xff; 4]);
    let mut mr = McMemberRecord {
        mgid,
        mlid: 0xC000,
        mtu_selector: Selector::EXACTLY,
        mtu: 4,
        pkey: 0xFFFF,
        rate_selector: Selector::EXACTLY,
        rate: 3,
        scope: 2,
        join_state: 1,
        proxy_join: true,
        ..McMemberRecord::default()
    };
    let s = format_mcmember_record(&mr);
    assert!(s.contains("\t\tMGID....................ff12:401b:ffff::ffff:ffff\n"));
    assert!(s.ends_with("\t\tProxyJoin...............0x0\n"));
    mr.proxy_join = false;
    mr.reserved = 1 << 16;
    assert!(format_mcmember_record(&mr).ends_with("\t\tProxyJoin...............0x1\n"));
    let g = format_mcgroup_record(&mr);
    assert!(g.contains("\t\tMtu.....................0x84\n"));
    assert!(g.contains("\t\tRate....................0x83\n"));
    let m = format_mcmember_members(&[mr.clone()], &[hca1()], None);
    assert!(m.contains("\t\tScopeState..............0x21\n\t\tProxyJoin...............0x1\n"));
    assert!(m.ends_with("\t\tNodeDescription.........<unknown>\n"));
    let mut member = mr.clone();
    member.port_gid[..2].copy_from_slice(&[0xfe, 0x80]);
    member.port_gid[8..].copy_from_slice(&0x10_0001u64.to_be_bytes());
    assert_eq!(
        format_mcmember_members(&[member.clone()], &[hca1()], Some("0xC000")),
        "\t\tPortGid.................fe80::10:1 (Hca1)\n"
    );
    assert_eq!(
        format_mcmember_members(&[member], &[hca1()], Some("0xC001")),
        ""
    );
}

#[test]
fn service_record_labels_and_key_hiding() {
    let mut sr = ServiceRecord {
        service_id: 0x10,
        service_lease: 0xFFFF_FFFF,
        ..ServiceRecord::default()
    };
    sr.set_name("svc").unwrap();
    sr.service_key[15] = 1;
    sr.service_data8[15] = 0xAB;
    sr.service_data64[1] = 7;
    let s = format_service_record(&sr, false);
    assert!(s.contains("\t\tServiceKey..............<not displayed>\n"));
    assert!(s.contains("\t\tServiceName.............svc\n"));
    assert!(s.contains("\t\tServiceData8.16.........0xAB\n"));
    assert!(s.contains("\t\tServiceData16.8.........0x0\n"));
    assert!(s.ends_with("\t\tServiceData64.2.........0x0000000000000007\n"));
    assert_eq!(s.lines().count(), 37);
    let k = format_service_record(&sr, true);
    assert!(k.contains("\t\tServiceKey..............0x00000000000000000000000000000001\n"));
}

#[test]
fn small_record_dumps() {
    let sm = SmInfoRecord {
        lid: 1,
        reserved: 0,
        sm_info: SmInfo {
            guid: 0x20_0000,
            sm_key: 0,
            act_count: 86,
            priority: 0,
            sm_state: SmState::MASTER,
        },
    };
    assert_eq!(
        format_sm_info_record(&sm),
        "SMInfoRecord dump:\n\t\tRID\n\t\tLID...................1\n\t\tSMInfo dump:\n\
\t\tGUID..................0x0000000000200000\n\t\tSM_Key................0x0000000000000000\n\
\t\tActCount..............86\n\t\tPriority..............0\n\t\tSMState...............3\n"
    );
    let lr = LinkRecord {
        from_lid: 2,
        from_port: 1,
        to_port: 1,
        to_lid: 1,
        reserved: 0,
    };
    assert_eq!(
        format_link_record(&lr),
        "LinkRecord dump:\n\t\tFromLID....................2\n\t\tFromPort...................1\n\
\t\tToPort.....................1\n\t\tToLID......................1\n"
    );
    let mut lft = LftRecord {
        lid: 1,
        block_num: 1,
        ..LftRecord::default()
    };
    lft.lft.ports[0] = 3;
    let s = format_lft_record(&lft);
    assert!(s.contains("\t\tLFT:\n\t\tLID\tPort Number\n\t\t64\t3\n\t\t65\t0\n"));
    assert!(s.ends_with("\t\t127\t0\n\n"));
    let mut mft = MftRecord {
        lid: 0xC000,
        position: 1,
        block_num: 2,
        ..MftRecord::default()
    };
    mft.mft.masks[0] = 0x6;
    let s = format_mft_record(&mft);
    assert!(s.contains("\t\tPosition...................1\n\t\tBlock......................2\n"));
    assert!(s.contains("\t\t0xc040\t0x0006\n"));
    assert!(s.ends_with("\t\t0xc05f\t0x0000\n\n"));
    let mut pk = PKeyTableRecord::default();
    pk.pkey_table.pkeys[0] = 0xFFFF;
    let s = format_pkey_table_record(&pk);
    assert!(s.contains(
        "\t\tPKey Table:\n\t\t0xffff 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000\n"
    ));
    assert!(s.ends_with("0x0000\n\n"));
    let mut vla = VlArbRecord::default();
    vla.vl_arb.entries[0] = 0x1203;
    let s = format_vlarb_record(&vla);
    assert!(s.contains("\t\tVL    :18| 0|"));
    assert!(s.contains("\t\tWeight: 3| 0|"));
    let mut sl = Sl2VlRecord::default();
    sl.sl2vl.vl[15] = 7;
    assert!(format_sl2vl_record(&sl)
        .ends_with("\t\tVL: 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 7|\n"));
    let mut gir = GuidInfoRecord {
        lid: 2,
        ..GuidInfoRecord::default()
    };
    gir.guid_info.guids[0] = 0x10_0001;
    assert!(format_guidinfo_record(&gir).contains(
        "\t\tBlock......................0\n\t\tGUID 0.....................0x0000000000100001\n"
    ));
}

#[test]
fn issm_and_portinfo_records() {
    let pir = PortInfoRecord {
        lid: 1,
        port_num: 0,
        options: 0,
        port_info: PortInfo {
            lid: 1,
            master_sm_lid: 1,
            capability_mask: 0xC04A,
            ..PortInfo::default()
        },
    };
    assert_eq!(
        format_issm(std::slice::from_ref(&pir), &[]),
        "IsSM ports\nPortInfoRecord dump:\n\t\tEndPortLid..............1\n\
\t\tPortNum.................0\n\t\tbase_lid................1\n\
\t\tmaster_sm_base_lid......1\n\t\tcapability_mask.........0xC04A\n\nIsSMdisabled ports\n"
    );
    let s = format_portinfo_record(&pir, false);
    assert!(s.starts_with("PortInfoRecord dump:\n\tRID\n\t\tEndPortLid..............1\n"));
    assert!(s.contains("\t\tOptions.................0x0\n\tPortInfo dump:\n\t\tMkey:"));
    assert!(s.contains("\t\tCapMask:.........................0xc04a\n\t\t\t\tIsSM\n"));
}

#[test]
fn inform_info_record_forms() {
    let mut r = InformInfoRecord::default();
    r.inform_info.is_generic = 1;
    r.inform_info.trap_number_or_device_id = 64;
    r.inform_info.qpn = 0x12;
    r.inform_info.resp_time_value = 19;
    r.inform_info.producer_type_or_vendor_id = 4;
    let s = format_inform_info_record(&r, false);
    assert!(
        s.contains("\t\ttrap_num................64\n\t\tqpn.....................<not displayed>\n")
    );
    assert!(s.ends_with("\t\tresp_time_val...........0x13\n\t\tnode_type...............0x000004\n"));
    r.inform_info.is_generic = 0;
    let s = format_inform_info_record(&r, true);
    assert!(s.contains("\t\tdev_id..................0x40\n\t\tqpn.....................0x000012\n"));
    assert!(s.ends_with("\t\tvendor_id...............0x000004\n"));
}
