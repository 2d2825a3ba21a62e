//! Cases: SA MADs of every record, with RMPP and SA headers.

use mad_core::pcap::Direction;
use mad_core::wire::field::Fields;
use mad_core::wire::sa_records::*;
use mad_core::wire::{Method, MgmtClass};

use crate::attrs::*;
use crate::expect::*;

/// An SA GetTableResp (or GetResp) carrying `recs`; the first record's
/// expectations come from `first`.
pub(crate) fn sa_case<T: SaRecord + Fields>(
    rng: &mut Rng,
    name: &str,
    method: Method,
    recs: &[T],
    first: impl FnOnce(&mut Expect, &T, &[u8], &[u8]),
) -> Case {
    let bytes: Vec<Vec<u8>> = recs
        .iter()
        .map(|r| r.to_vec().expect("emit record"))
        .collect();
    let stride = T::PADDED_LEN;
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        method,
        true,
        T::ATTR_ID,
        0,
        rng.next_u64(),
    );
    let rmpp = rmpp_single(rng, stride * recs.len());
    let sa = sa_header(rng, T::ATTR_OFFSET);
    let mad = sa_mad(&hdr, &rmpp, &sa, &bytes, stride);
    let mut c = Case::new(name, mad.clone(), 0x0001, 0x0033, Direction::Received);
    expect_rmpp(&mut c.expect, &mad);
    expect_sa_header(&mut c.expect, &mad);
    // tshark's attribute item spans the rest of the SA data (200 bytes).
    c.expect
        .bytes("infiniband.sa.drdlid", &mad[56..], "SA data (the records)");
    // Items tshark draws past the MAD's end run into the ICRC/VCRC bytes.
    let tail = c.pkt[28 + 56..].to_vec();
    first(
        &mut c.expect,
        &recs[0],
        bytes.first().expect("a record"),
        &tail,
    );
    c
}

pub(crate) fn sa_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    let mut nr: NodeRecord = varied(rng);
    nr.node_desc.desc = text("madstack node record 64 chars max, this one is shorter");
    out.push(sa_case(
        rng,
        "SA NodeRecord",
        Method::GET_TABLE,
        &[nr],
        |e, r, _, _| expect_node_record(e, r),
    ));
    let recs: Vec<PortInfoRecord> = (0..2).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA PortInfoRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, _, _| {
            e.field(r, "infiniband.sa.endportlid", "lid");
            e.field(r, "infiniband.sa.portnum", "port_num");
            // IBA 1.3's Options byte; tshark (IBA 1.2 layout) calls it Reserved.
            e.bytes(
                &at(P_SA_REC, "infiniband.reserved"),
                &[r.options],
                "PortInfoRecord.options",
            );
            expect_port_info(e, r, "port_info.");
        },
    ));
    let recs: Vec<SwitchInfoRecord> = (0..3).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA SwitchInfoRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, _, _| {
            e.field(r, "infiniband.sa.lid", "lid");
            e.reserved(
                &at(P_SA_REC, "infiniband.reserved"),
                2,
                "SwitchInfoRecord.reserved",
            );
            e.fields(r, "switch_info.", SWITCH_INFO);
        },
    ));
    let recs: Vec<LinkRecord> = (0..5).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA LinkRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, b, _| {
            e.field(r, "infiniband.linkrecord.fromlid", "from_lid");
            e.field(r, "infiniband.linkrecord.fromport", "from_port");
            e.bytes(
                "infiniband.sa.drdlid",
                &b[3..6],
                "LinkRecord.to_port, to_lid",
            );
            e.field(r, "infiniband.linkrecord.toport", "to_port");
            e.field(r, "infiniband.linkrecord.tolid", "to_lid");
        },
    ));
    let recs: Vec<TraceRecord> = (0..3).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA TraceRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, b, _| {
            // tshark's record item spans the 46 bytes the IBA defines.
            e.bytes("infiniband.sa.drdlid", &b[..46], "TraceRecord");
            e.reserved(
                &at(
                    &format!("{P_SA_REC}/infiniband.sa.drdlid_tree"),
                    "infiniband.reserved",
                ),
                1,
                "TraceRecord.reserved",
            );
            e.field(r, "infiniband.tracerecord.gidprefix", "gid_prefix");
            e.field(r, "infiniband.tracerecord.idgeneration", "id_generation");
            e.field(r, "infiniband.tracerecord.nodetype", "node_type");
            e.field(r, "infiniband.tracerecord.nodeid", "node_id");
            e.field(r, "infiniband.tracerecord.chassisid", "chassis_id");
            e.field(r, "infiniband.tracerecord.entryportid", "entry_port_id");
            e.field(r, "infiniband.tracerecord.exitportid", "exit_port_id");
            e.field(r, "infiniband.tracerecord.entryport", "entry_port");
            e.field(r, "infiniband.tracerecord.exitport", "exit_port");
        },
    ));
    let recs: Vec<PathRecord> = (0..3).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA PathRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, b, _| expect_path_record(e, r, b),
    ));
    let recs: Vec<McMemberRecord> = (0..2).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA MCMemberRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, _, tail| {
            e.field(r, "infiniband.mcmemberrecord.mgid", "mgid");
            e.field(r, "infiniband.mcmemberrecord.portgid", "port_gid");
            e.bytes(
                "infiniband.sa.drdlid",
                &tail[32..96],
                "SA data 32..96 (MCMemberRecord from Q_Key)",
            );
            e.fields(
                r,
                "",
                &[
                    ("infiniband.mcmemberrecord.q_key", "qkey"),
                    ("infiniband.mcmemberrecord.mlid", "mlid"),
                    ("infiniband.mcmemberrecord.mtuselector", "mtu_selector"),
                    ("infiniband.mcmemberrecord.mtu", "mtu"),
                    ("infiniband.mcmemberrecord.tclass", "tclass"),
                    ("infiniband.mcmemberrecord.p_key", "pkey"),
                    ("infiniband.mcmemberrecord.rateselector", "rate_selector"),
                    ("infiniband.mcmemberrecord.rate", "rate"),
                    (
                        "infiniband.mcmemberrecord.packetlifetimeselector",
                        "packet_life_time_selector",
                    ),
                    (
                        "infiniband.mcmemberrecord.packetlifetime",
                        "packet_life_time",
                    ),
                    ("infiniband.mcmemberrecord.sl", "sl"),
                    ("infiniband.mcmemberrecord.flowlabel", "flow_label"),
                    ("infiniband.mcmemberrecord.hoplimit", "hop_limit"),
                    ("infiniband.mcmemberrecord.scope", "scope"),
                    ("infiniband.mcmemberrecord.joinstate", "join_state"),
                    ("infiniband.mcmemberrecord.proxyjoin", "proxy_join"),
                ],
            );
        },
    ));
    let mut sr: ServiceRecord = varied(rng);
    sr.service_name = text("madstack.test.service");
    out.push(sa_case(
        rng,
        "SA ServiceRecord",
        Method::GET_TABLE,
        &[sr],
        |e, r, b, tail| {
            e.field(r, "infiniband.linkrecord.serviceid", "service_id");
            e.field(r, "infiniband.linkrecord.servicegid", "service_gid");
            e.field(r, "infiniband.linkrecord.servicep_key", "service_pkey");
            // tshark's item starts at ServiceLease but is 176 bytes long, so it
            // runs past the MAD into the ICRC/VCRC.
            e.bytes(
                "infiniband.sa.drdlid",
                &tail[28..28 + 176],
                "ServiceRecord bytes 28.. (+ following bytes)",
            );
            e.field(r, "infiniband.linkrecord.servicelease", "service_lease");
            e.field(r, "infiniband.linkrecord.servicekey", "service_key");
            e.field(r, "infiniband.linkrecord.servicename", "service_name");
            e.bytes(
                "infiniband.linkrecord.servicedata",
                &b[112..128],
                "ServiceRecord.service_data8",
            );
            e.bytes(
                "infiniband.linkrecord.servicedata",
                &b[128..144],
                "ServiceRecord.service_data16",
            );
            e.bytes(
                "infiniband.linkrecord.servicedata",
                &b[144..160],
                "ServiceRecord.service_data32",
            );
            e.bytes(
                "infiniband.linkrecord.servicedata",
                &b[160..176],
                "ServiceRecord.service_data64",
            );
        },
    ));
    let ii: InformInfo = varied(rng);
    out.push(sa_case(
        rng,
        "SA InformInfo",
        Method::GET,
        &[ii],
        |e, r, b, _| {
            e.bytes("infiniband.sa.drdlid", b, "InformInfo bytes");
            expect_inform_info(e, r, "");
        },
    ));
    let recs: Vec<InformInfoRecord> = (0..3).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA InformInfoRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, b, _| {
            e.field(
                r,
                "infiniband.informinforecord.subscribergid",
                "subscriber_gid",
            );
            e.field(r, "infiniband.informinforecord.enum", "enumeration");
            e.reserved(
                &at(P_SA_REC, "infiniband.reserved"),
                6,
                "InformInfoRecord.reserved",
            );
            e.bytes(
                "infiniband.sa.drdlid",
                &b[24..],
                "InformInfoRecord.inform_info bytes",
            );
            expect_inform_info(e, r, "inform_info.");
        },
    ));
    let recs: Vec<GuidInfoRecord> = (0..2).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA GUIDInfoRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, _, _| {
            e.field(r, "infiniband.sa.lid", "lid");
            e.field(r, "infiniband.sa.blocknum_eightbit", "block_num");
            e.reserved(
                &at(P_SA_REC, "infiniband.reserved"),
                4,
                "GuidInfoRecord.reserved, reserved1",
            );
            e.field(r, "infiniband.switchinfo.guid", "guid_info.guids");
        },
    ));
    let recs: Vec<PKeyTableRecord> = (0..2).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA P_KeyTableRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, b, _| {
            e.field(r, "infiniband.sa.lid", "lid");
            e.field(r, "infiniband.sa.blocknum_sixteenbit", "block_num");
            e.field(r, "infiniband.sa.portnum", "port_num");
            e.reserved(
                &at(P_SA_REC, "infiniband.reserved"),
                3,
                "PKeyTableRecord.reserved",
            );
            e.bytes(
                "infiniband.p_keytable.p_keytableblock",
                &b[8..72],
                "PKeyTableRecord.pkey_table bytes",
            );
            expect_pkeys(e, r, "pkey_table.pkeys");
        },
    ));
    let recs: Vec<LftRecord> = (0..2).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA LFTRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, b, _| {
            e.field(r, "infiniband.sa.lid", "lid");
            e.field(r, "infiniband.sa.blocknum_sixteenbit", "block_num");
            e.reserved(
                &at(P_SA_REC, "infiniband.reserved"),
                4,
                "LftRecord.reserved",
            );
            e.bytes(
                "infiniband.smplid.smpdata",
                &b[8..72],
                "LftRecord.lft bytes",
            );
            e.field(r, "infiniband.linearforwardingtable.port", "lft.ports");
        },
    ));
    let recs: Vec<SmInfoRecord> = (0..3).map(|_| varied(rng)).collect();
    out.push(sa_case(
        rng,
        "SA SMInfoRecord",
        Method::GET_TABLE,
        &recs,
        |e, r, _, tail| {
            e.field(r, "infiniband.sa.lid", "lid");
            e.reserved(
                &at(P_SA_REC, "infiniband.reserved"),
                2,
                "SmInfoRecord.reserved",
            );
            e.bytes(
                "infiniband.smplid.smpdata",
                &tail[4..68],
                "SA data 4..68 (SMInfo, then padding and the next record)",
            );
            e.fields(r, "sm_info.", SM_INFO);
        },
    ));
}

pub(crate) fn expect_node_record(e: &mut Expect, r: &NodeRecord) {
    e.field(r, "infiniband.sa.lid", "lid");
    e.reserved(
        &at(P_SA_REC, "infiniband.reserved"),
        2,
        "NodeRecord.reserved",
    );
    e.fields(r, "node_info.", NODE_INFO);
    e.text(
        "infiniband.nodedescription.nodestring",
        &r.node_desc.desc,
        "NodeRecord.node_desc.desc",
    );
}

pub(crate) fn expect_path_record(e: &mut Expect, r: &PathRecord, b: &[u8]) {
    e.bytes("infiniband.sa.drdlid", b, "PathRecord bytes");
    e.fields(
        r,
        "",
        &[
            ("infiniband.pathrecord.dgid", "dgid"),
            ("infiniband.pathrecord.sgid", "sgid"),
            ("infiniband.pathrecord.dlid", "dlid"),
            ("infiniband.pathrecord.slid", "slid"),
            ("infiniband.pathrecord.rawtraffic", "raw_traffic"),
            ("infiniband.pathrecord.flowlabel", "flow_label"),
            ("infiniband.pathrecord.hoplimit", "hop_limit"),
            ("infiniband.pathrecord.tclass", "tclass"),
            ("infiniband.pathrecord.reversible", "reversible"),
            ("infiniband.pathrecord.numbpath", "numb_path"),
            ("infiniband.pathrecord.p_key", "pkey"),
            ("infiniband.pathrecord.sl", "sl"),
            ("infiniband.pathrecord.mtuselector", "mtu_selector"),
            ("infiniband.pathrecord.mtu", "mtu"),
            ("infiniband.pathrecord.rateselector", "rate_selector"),
            ("infiniband.pathrecord.rate", "rate"),
            (
                "infiniband.pathrecord.packetlifetimeselector",
                "packet_life_time_selector",
            ),
            ("infiniband.pathrecord.packetlifetime", "packet_life_time"),
            ("infiniband.pathrecord.preference", "preference"),
        ],
    );
    // IBA 1.2's ServiceID; tshark (IBA 1.1 layout) calls it Reserved.
    e.bytes(
        &at(
            &format!("{P_SA_REC}/infiniband.sa.drdlid_tree"),
            "infiniband.reserved",
        ),
        &r.service_id.to_be_bytes(),
        "PathRecord.service_id",
    );
}

pub(crate) fn expect_inform_info(e: &mut Expect, r: &dyn Fields, p: &str) {
    e.fields(
        r,
        p,
        &[
            ("infiniband.informinfo.gid", "gid"),
            ("infiniband.informinfo.lidrangebegin", "lid_range_begin"),
            ("infiniband.informinfo.lidrangeend", "lid_range_end"),
            ("infiniband.informinfo.isgeneric", "is_generic"),
            ("infiniband.informinfo.subscribe", "subscribe"),
            ("infiniband.informinfo.type", "trap_type"),
            (
                "infiniband.informinfo.trapnumberdeviceid",
                "trap_number_or_device_id",
            ),
            ("infiniband.informinfo.qpn", "qpn"),
            ("infiniband.informinfo.resptimevalue", "resp_time_value"),
            (
                "infiniband.informinfo.producertypevendorid",
                "producer_type_or_vendor_id",
            ),
        ],
    );
    e.reserved("infiniband.reserved", 2, "InformInfo.reserved");
    e.reserved("infiniband.reserved", 1, "InformInfo.reserved2");
}
