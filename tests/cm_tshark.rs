//! CM MADs (class 0x07) against an independent decoder: Wireshark's
//! InfiniBand dissector.
//!
//! Every CM message madstack speaks is emitted with varied field values
//! (reserved bits zero), written with `mad_core::pcap` (ERF records with
//! LRH/BTH/DETH and real CRCs) and read back by
//! `tshark -r FILE -V -T json --no-duplicate-keys`. Then **every leaf** of
//! the MAD part of every packet (the `infiniband.mad` tree and the class
//! data tree tshark hangs under `infiniband.smplid.smpdata`) is checked:
//!
//! - a leaf of a message tshark dissects (REQ, REJ, REP, RTU, DREQ, DREP)
//!   is compared with the field of our `Repr` it names, found through the
//!   `Fields` reflection by our field name;
//! - where tshark's layout differs from the IBA's (listed in [`QUIRKS`]),
//!   the leaf is compared with tshark's reading of the bytes we emitted;
//! - the messages tshark does not dissect (MRA, LAP, APR, SIDR_REQ,
//!   SIDR_REP, ClassPortInfo) must show our 232 bytes of CM data intact;
//! - a leaf nobody expects fails the test, as does an expectation tshark
//!   does not meet, and any `_ws.malformed` / `_ws.expert` item.
//!
//! tshark is required: a missing tshark fails the test, with or without
//! `CI` set. Set `CM_TSHARK_DUMP=dir` to keep the pcap and the JSON.

#[path = "support/tshark.rs"]
mod tshark;
use tshark::run_tshark;

use std::collections::{BTreeMap, VecDeque};

use mad_core::pcap::{Direction, PcapWriter, Timestamp};
use mad_core::wire::cm::cma::{self, CmaHeader, PortSpace};
use mad_core::wire::cm::*;
use mad_core::wire::field::{get_bits, set_bits, FieldValue, Fields};
use mad_core::wire::{AttributeId, Mad, MadHeader, Repr};
use mad_testkit::Rng;

/// What tshark should show for a leaf.
#[derive(Debug, Clone, PartialEq)]
enum Want {
    Uint(u64),
    Bytes(Vec<u8>),
}

/// tshark key, our field, why, and (byte, bit, width) of what tshark reads.
type Quirk = (
    &'static str,
    &'static str,
    &'static str,
    (usize, usize, usize),
);

/// Fields tshark 4.0 lays out differently from the IBA (and the kernel's
/// `ibta_vol1_c12.h`): the leaf is compared with what tshark's own layout
/// reads from the bytes we emitted. Each entry: tshark key, our field, why,
/// and (byte offset in the CM data, bit offset in that byte, width in
/// bits) of what tshark reads.
const QUIRKS: &[Quirk] = &[
    (
        "infiniband.cm.req.prim_flowlabel",
        "primary_flow_label",
        "tshark reads 12 bits from REQ byte 88 (IBA: a 20-bit flow label in bytes 88-90)",
        (88, 0, 12),
    ),
    (
        "infiniband.cm.req.prim_reserved0",
        "reserved2",
        "tshark puts 2 reserved bits at the top of byte 88, inside the flow label (IBA: 6 reserved bits after it)",
        (88, 0, 2),
    ),
    (
        "infiniband.cm.req.prim_pktrate",
        "primary_packet_rate",
        "tshark reads the packet rate from the low 6 bits of byte 88 (IBA: of byte 91)",
        (88, 2, 6),
    ),
    (
        "infiniband.cm.req.alt_flowlabel",
        "alternate_flow_label",
        "as prim_flowlabel, at byte 132",
        (132, 0, 12),
    ),
    (
        "infiniband.cm.req.alt_reserved0",
        "reserved5",
        "as prim_reserved0, at byte 132",
        (132, 0, 2),
    ),
    (
        "infiniband.cm.req.alt_pktrate",
        "alternate_packet_rate",
        "as prim_pktrate: tshark reads byte 132 (IBA: byte 135)",
        (132, 2, 6),
    ),
    (
        "infiniband.cm.req.alt_reserved1",
        "sap_supported",
        "tshark predates SAPSupported (IBA 1.3) and shows it with the 2 reserved bits after it as one reserved field",
        (139, 5, 3),
    ),
];

/// (tshark key, our field) for each message tshark dissects; `@off:len`
/// instead of a field compares the raw CM data bytes at that range (tshark
/// shows it as one "reserved" item where we have reserved bits plus an
/// IBA 1.3 field tshark predates).
fn table(attr: AttributeId) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match attr {
        ATTR_REQ => &[
            ("infiniband.cm.req", "local_comm_id"),
            ("infiniband.reserved", "@4:4"),
            ("infiniband.cm.req.serviceid", "service_id"),
            ("infiniband.cm.req.localcaguid", "local_ca_guid"),
            ("infiniband.reserved", "@24:4"),
            ("infiniband.cm.req.localqkey", "local_qkey"),
            ("infiniband.cm.req.localqpn", "local_qpn"),
            ("infiniband.cm.req.responderres", "responder_resources"),
            ("infiniband.cm.req.localeecn", "local_eecn"),
            ("infiniband.cm.req.initdepth", "initiator_depth"),
            ("infiniband.cm.req.remoteeecn", "remote_eecn"),
            (
                "infiniband.cm.req.remoteresptout",
                "remote_cm_response_timeout",
            ),
            ("infiniband.cm.req.transpsvctype", "transport_type"),
            ("infiniband.cm.req.e2eflowctrl", "end_to_end_flow_control"),
            ("infiniband.cm.req.startpsn", "starting_psn"),
            (
                "infiniband.cm.req.localresptout",
                "local_cm_response_timeout",
            ),
            ("infiniband.cm.req.retrcount", "retry_count"),
            ("infiniband.cm.req.pkey", "pkey"),
            ("infiniband.cm.req.pppmtu", "path_mtu"),
            ("infiniband.cm.req.rdcexist", "rdc_exists"),
            ("infiniband.cm.req.rnrretrcount", "rnr_retry_count"),
            ("infiniband.cm.req.maxcmretr", "max_cm_retries"),
            ("infiniband.cm.req.srq", "srq"),
            ("infiniband.cm.req.ext_transport", "extended_transport_type"),
            ("infiniband.cm.req.prim_locallid", "primary_local_lid"),
            ("infiniband.cm.req.prim_remotelid", "primary_remote_lid"),
            ("infiniband.cm.req.prim_localgid", "primary_local_gid"),
            ("infiniband.cm.req.prim_remotegid", "primary_remote_gid"),
            ("infiniband.cm.req.prim_flowlabel", "primary_flow_label"),
            ("infiniband.cm.req.prim_reserved0", "reserved2"),
            ("infiniband.cm.req.prim_pktrate", "primary_packet_rate"),
            ("infiniband.cm.req.prim_tfcclass", "primary_traffic_class"),
            ("infiniband.cm.req.prim_hoplim", "primary_hop_limit"),
            ("infiniband.cm.req.prim_sl", "primary_sl"),
            ("infiniband.cm.req.prim_subnetlocal", "primary_subnet_local"),
            ("infiniband.cm.req.prim_reserved1", "reserved3"),
            (
                "infiniband.cm.req.prim_localacktout",
                "primary_local_ack_timeout",
            ),
            ("infiniband.cm.req.prim_reserved2", "reserved4"),
            ("infiniband.cm.req.alt_locallid", "alternate_local_lid"),
            ("infiniband.cm.req.alt_remotelid", "alternate_remote_lid"),
            ("infiniband.cm.req.alt_localgid", "alternate_local_gid"),
            ("infiniband.cm.req.alt_remotegid", "alternate_remote_gid"),
            ("infiniband.cm.req.alt_flowlabel", "alternate_flow_label"),
            ("infiniband.cm.req.alt_reserved0", "reserved5"),
            ("infiniband.cm.req.alt_pktrate", "alternate_packet_rate"),
            ("infiniband.cm.req.alt_tfcclass", "alternate_traffic_class"),
            ("infiniband.cm.req.alt_hoplim", "alternate_hop_limit"),
            ("infiniband.cm.req.alt_sl", "alternate_sl"),
            (
                "infiniband.cm.req.alt_subnetlocal",
                "alternate_subnet_local",
            ),
            ("infiniband.cm.req.alt_reserved1", "reserved6"),
            ("infiniband.cm.req.alt_reserved1", "sap_supported"),
            (
                "infiniband.cm.req.alt_localacktout",
                "alternate_local_ack_timeout",
            ),
            ("infiniband.cm.req.private", "private_data"),
        ],
        ATTR_REJ => &[
            ("infiniband.cm.rej.localcommid", "local_comm_id"),
            ("infiniband.cm.rej.remotecommid", "remote_comm_id"),
            ("infiniband.cm.rej.msgrej", "message_rejected"),
            ("infiniband.cm.rej.reserved0", "reserved"),
            ("infiniband.cm.rej.rejinfolen", "reject_info_length"),
            ("infiniband.cm.rej.reserved1", "reserved1"),
            ("infiniband.cm.rej.reason", "reason"),
            ("infiniband.cm.rej.ari", "ari"),
            ("infiniband.cm.rej.private", "private_data"),
        ],
        ATTR_REP => &[
            ("infiniband.cm.rep", "local_comm_id"),
            ("infiniband.cm.rep.remotecommid", "remote_comm_id"),
            ("infiniband.cm.rep.localqkey", "local_qkey"),
            ("infiniband.cm.rep.localqpn", "local_qpn"),
            ("infiniband.reserved", "@15:1"),
            ("infiniband.cm.rep.localeecn", "local_eecn"),
            ("infiniband.reserved", "@19:1"),
            ("infiniband.cm.rep.startpsn", "starting_psn"),
            ("infiniband.reserved", "@23:1"),
            ("infiniband.cm.rep.respres", "responder_resources"),
            ("infiniband.cm.rep.initdepth", "initiator_depth"),
            ("infiniband.cm.rep.tgtackdelay", "target_ack_delay"),
            ("infiniband.cm.rep.failoveracc", "failover_accepted"),
            ("infiniband.cm.rep.e2eflowctrl", "end_to_end_flow_control"),
            ("infiniband.cm.rep.rnrretrcount", "rnr_retry_count"),
            ("infiniband.cm.rep.srq", "srq"),
            ("infiniband.cm.rep.reserved", "reserved"),
            ("infiniband.cm.rep.localcaguid", "local_ca_guid"),
            ("infiniband.cm.rep.private", "private_data"),
        ],
        ATTR_RTU => &[
            ("infiniband.cm.rtu.localcommid", "local_comm_id"),
            ("infiniband.cm.rtu.remotecommid", "remote_comm_id"),
            ("infiniband.cm.rtu.private", "private_data"),
        ],
        ATTR_DREQ => &[
            ("infiniband.cm.dreq.localcommid", "local_comm_id"),
            ("infiniband.cm.dreq.remotecommid", "remote_comm_id"),
            ("infiniband.cm.req.remoteqpneecn", "remote_qpn_eecn"),
            ("infiniband.reserved", "reserved"),
            ("infiniband.cm.dreq.private", "private_data"),
        ],
        ATTR_DREP => &[
            ("infiniband.cm.drsp.localcommid", "local_comm_id"),
            ("infiniband.cm.drsp.remotecommid", "remote_comm_id"),
            ("infiniband.cm.drsp.private", "private_data"),
        ],
        _ => return None,
    })
}

/// One MAD to check.
struct Case {
    name: &'static str,
    mad: [u8; 256],
    wants: BTreeMap<String, VecDeque<(Want, String)>>,
}

impl Case {
    fn push(&mut self, key: &str, want: Want, ours: impl Into<String>) {
        self.wants
            .entry(key.to_owned())
            .or_default()
            .push_back((want, ours.into()));
    }
}

/// Our value of field `name` of `f`.
fn ours(f: &dyn Fields, name: &str) -> Want {
    let i = f
        .field_descs()
        .iter()
        .position(|d| d.name == name)
        .unwrap_or_else(|| panic!("{} has no field {name}", f.struct_name()));
    match f.field_value(i).expect("field value") {
        FieldValue::Uint(v) => Want::Uint(v),
        FieldValue::Bytes(b) => Want::Bytes(b.to_vec()),
        other => panic!("unexpected field kind {other:?}"),
    }
}

/// A message of every CM type with varied values and zero reserved bits;
/// the REQ carries an rdma_cm header in its private data.
fn messages(rng: &mut Rng) -> Vec<CmMessage> {
    let attrs = [
        ATTR_REQ,
        ATTR_MRA,
        ATTR_REJ,
        ATTR_REP,
        ATTR_RTU,
        ATTR_DREQ,
        ATTR_DREP,
        ATTR_SIDR_REQ,
        ATTR_SIDR_REP,
        ATTR_LAP,
        ATTR_APR,
        ATTR_CLASS_PORT_INFO,
    ];
    let mut out = Vec::new();
    for round in 0..3 {
        for attr in attrs {
            let mut data = [0u8; CM_DATA_LEN];
            data.iter_mut().for_each(|b| *b = rng.byte());
            let zeroed = CmMessage::parse_attr(attr, &[0u8; CM_DATA_LEN]).expect("parse zeros");
            for d in zeroed
                .fields()
                .field_descs()
                .iter()
                .filter(|d| d.is_reserved())
            {
                set_bits(&mut data, d.bit_offset as usize, d.bit_len as usize, 0);
            }
            let mut m = CmMessage::parse_attr(attr, &data).expect("parse");
            if let (0, CmMessage::Req(r)) = (round, &mut m) {
                r.service_id = cma::service_id(PortSpace::Tcp, 18515);
                CmaHeader::ipv4([192, 168, 1, 1].into(), [192, 168, 1, 2].into(), 33000)
                    .emit(&mut r.private_data)
                    .expect("cma header");
            }
            out.push(m);
        }
    }
    out
}

fn case(m: &CmMessage, tid: u64) -> Case {
    let mad = m.to_mad(tid).expect("emit");
    let mut c = Case {
        name: m.short_name(),
        mad,
        wants: BTreeMap::new(),
    };
    let h = MadHeader::parse(&mad).expect("header");
    c.push("infiniband.mad", Want::Bytes(mad.to_vec()), "MAD");
    for (key, v) in [
        ("baseversion", u64::from(h.base_version)),
        ("mgmtclass", u64::from(h.mgmt_class.0)),
        ("classversion", u64::from(h.class_version)),
        ("method", u64::from(Mad::new_unchecked(&mad).raw_method())),
        ("status", u64::from(h.status.0)),
        ("classspecific", u64::from(h.class_specific)),
        ("transactionid", h.tid),
        ("attributeid", u64::from(h.attr_id.0)),
        ("attributemodifier", u64::from(h.attr_mod)),
    ] {
        c.push(&format!("infiniband.mad.{key}"), Want::Uint(v), key);
    }
    c.push(
        "infiniband.reserved",
        Want::Bytes(h.reserved.to_be_bytes().to_vec()),
        "MadHeader.reserved",
    );
    let data = mad[CM_DATA_OFFSET..].to_vec();
    c.push("infiniband.mad.data", Want::Bytes(data.clone()), "CM data");
    c.push(
        "infiniband.smplid.smpdata",
        Want::Bytes(data.clone()),
        "CM data",
    );
    if let Some(t) = table(m.attr_id()) {
        for (key, field) in t {
            let want = match field.strip_prefix('@') {
                Some(range) => {
                    let (o, l) = range.split_once(':').expect("@off:len");
                    let (o, l): (usize, usize) = (o.parse().expect("off"), l.parse().expect("len"));
                    Want::Bytes(data[o..o + l].to_vec())
                }
                None => match QUIRKS.iter().find(|q| (q.0, q.1) == (*key, *field)) {
                    Some((_, _, _, (byte, bit, len))) => {
                        Want::Uint(get_bits(&data, byte * 8 + bit, *len))
                    }
                    None => ours(m.fields(), field),
                },
            };
            c.push(key, want, *field);
        }
    }
    if let CmMessage::Req(r) = m {
        if let Some((space, port)) = cma::split_service_id(r.service_id) {
            expect_ip_cm(&mut c, r, space, port);
        }
    }
    c
}

/// tshark dissects the private data of a REQ whose service ID is in an
/// rdma_cm port space as the IP CM header (IBTA annex A11, which rdma_cm's
/// `cma_hdr` follows) and splits the service ID.
fn expect_ip_cm(c: &mut Case, r: &CmReq, space: PortSpace, port: u16) {
    let sid = r.service_id.to_be_bytes();
    c.push(
        "infiniband.cm.req.serviceid.prefix",
        Want::Bytes(sid[..5].to_vec()),
        "service_id",
    );
    c.push(
        "infiniband.cm.req.serviceid.protocol",
        Want::Uint(u64::from(space.code() & 0xFF)),
        "service_id",
    );
    c.push(
        "infiniband.cm.req.serviceid.dport",
        Want::Uint(u64::from(port)),
        "service_id",
    );
    let h = CmaHeader::parse(&r.private_data).expect("cma header");
    // The whole private data shows as the IP CM tree instead of "private".
    let private = c
        .wants
        .get_mut("infiniband.cm.req.private")
        .and_then(VecDeque::pop_back);
    assert!(private.is_some());
    c.wants.retain(|_, v| !v.is_empty());
    c.push(
        "infiniband.cm.req.ip_cm",
        Want::Bytes(r.private_data.to_vec()),
        "private_data",
    );
    c.push(
        "infiniband.cm.req.ip_cm.majv",
        Want::Uint(u64::from(h.cma_version >> 4)),
        "cma_version",
    );
    c.push(
        "infiniband.cm.req.ip_cm.minv",
        Want::Uint(u64::from(h.cma_version & 0xF)),
        "cma_version",
    );
    c.push(
        "infiniband.cm.req.ip_cm.ipv",
        Want::Uint(u64::from(h.ip_version)),
        "ip_version",
    );
    c.push(
        "infiniband.cm.req.ip_cm.reserved",
        Want::Uint(u64::from(h.reserved)),
        "reserved",
    );
    c.push(
        "infiniband.cm.req.ip_cm.sport",
        Want::Uint(u64::from(h.port)),
        "port",
    );
    let (src, dst) = h.addrs().expect("addresses");
    for (key, a) in [("sip", src), ("dip", dst)] {
        match a {
            std::net::IpAddr::V4(v4) => c.push(
                &format!("infiniband.cm.req.ip_cm.{key}4"),
                Want::Bytes(v4.octets().to_vec()),
                key,
            ),
            std::net::IpAddr::V6(v6) => c.push(
                &format!("infiniband.cm.req.ip_cm.{key}6"),
                Want::Bytes(v6.octets().to_vec()),
                key,
            ),
        }
    }
    c.push(
        "infiniband.cm.req.ip_cm.private",
        Want::Bytes(r.private_data[CmaHeader::LEN..].to_vec()),
        "private_data after the header",
    );
}

/// Leaves of `v` (found under `key`) as (tshark key, value), in
/// document order.
fn leaves<'a>(key: &str, v: &'a serde_json::Value, out: &mut Vec<(String, &'a str)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                leaves(k, x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| leaves(key, x, out)),
        serde_json::Value::String(s) => out.push((key.to_owned(), s)),
        _ => {}
    }
}

fn parse_uint(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Colon-separated hex bytes, or an IPv6 address (tshark shows some GIDs
/// that way).
fn parse_bytes(s: &str) -> Option<Vec<u8>> {
    if let Ok(a) = s.parse::<std::net::Ipv6Addr>() {
        return Some(a.octets().to_vec());
    }
    if let Ok(a) = s.parse::<std::net::Ipv4Addr>() {
        return Some(a.octets().to_vec());
    }
    s.split(':')
        .map(|b| u8::from_str_radix(b, 16).ok())
        .collect()
}

fn matches(want: &Want, got: &str) -> bool {
    match want {
        Want::Uint(v) => parse_uint(got) == Some(*v),
        Want::Bytes(b) => parse_bytes(got).as_deref() == Some(&b[..]),
    }
}

#[test]
fn tshark_shows_every_cm_message_as_we_emit_it() {
    let keep = std::env::var_os("CM_TSHARK_DUMP").map(std::path::PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("madstack-cm-tshark-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).expect("dump dir");
    let path = dir.join("cm.pcap");
    let mut rng = Rng::new(0x0123_4567_89ab_cdef);
    let mut cases: Vec<Case> = messages(&mut rng)
        .iter()
        .enumerate()
        .map(|(i, m)| case(m, 0x0000_0001_0000_0000 | i as u64))
        .collect();
    let mut w = PcapWriter::new(std::fs::File::create(&path).expect("pcap")).expect("pcap header");
    for (i, c) in cases.iter().enumerate() {
        let ts = Timestamp::new(1_700_000_000 + i as u32, 0);
        w.write_mad_auto(ts, &c.mad, 1, 2, Direction::Sent)
            .expect("write MAD");
    }
    w.flush().expect("flush");
    drop(w);

    let json = run_tshark(&path);
    if keep.is_some() {
        let pretty = serde_json::to_string_pretty(&json).expect("json");
        std::fs::write(dir.join("cm.json"), pretty).expect("write dump");
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let pkts = json.as_array().expect("tshark JSON is an array of packets");
    assert_eq!(pkts.len(), cases.len(), "tshark saw every packet");
    let mut failures = Vec::new();
    let mut compared = 0usize;
    let mut quirks_used = BTreeMap::<&str, usize>::new();
    for (c, p) in cases.iter_mut().zip(pkts) {
        let layers = &p["_source"]["layers"];
        let mut all = Vec::new();
        leaves("", layers, &mut all);
        for (k, _) in &all {
            if k.starts_with("_ws.malformed") || k.starts_with("_ws.expert") {
                failures.push(format!("{}: tshark reports {k}", c.name));
            }
        }
        let ib = &layers["infiniband"];
        let mut mine = Vec::new();
        for part in ["infiniband.mad", "infiniband.mad_tree"] {
            leaves(part, &ib[part], &mut mine);
        }
        for part in [
            "infiniband.smplid.smpdata",
            "infiniband.smplid.smpdata_tree",
        ] {
            leaves(part, &ib[part], &mut mine);
        }
        for (key, got) in mine {
            match c.wants.get_mut(&key).and_then(VecDeque::pop_front) {
                Some((want, field)) => {
                    compared += 1;
                    if let Some(q) = QUIRKS
                        .iter()
                        .find(|q| (q.0, q.1) == (key.as_str(), field.as_str()))
                    {
                        *quirks_used.entry(q.1).or_default() += 1;
                    }
                    if !matches(&want, got) {
                        failures.push(format!(
                            "{}: {key} ({field}): tshark {got}, we {want:?}",
                            c.name
                        ));
                    }
                }
                None => failures.push(format!("{}: unexpected leaf {key} = {got}", c.name)),
            }
        }
        for (key, left) in &c.wants {
            for (want, field) in left {
                failures.push(format!(
                    "{}: tshark does not show {key} ({field}) = {want:?}",
                    c.name
                ));
            }
        }
    }
    println!(
        "cm tshark: {} MADs, {compared} leaves compared",
        cases.len()
    );
    for (k, f, why, _) in QUIRKS {
        println!(
            "  quirk {k} ({f}): {why} ({} leaves)",
            quirks_used.get(f).copied().unwrap_or(0)
        );
    }
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} mismatches (see above)",
        failures.len()
    );
    for (k, f, _, _) in QUIRKS {
        assert!(
            quirks_used.contains_key(f),
            "QUIRKS entry {k} ({f}) no longer used"
        );
    }
}
