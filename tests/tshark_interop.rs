//! Interop with an independent decoder: Wireshark's InfiniBand dissector.
//!
//! The test emits MADs of every type madstack speaks (common header, LID-
//! routed and directed-route SMPs, SA with RMPP and SA headers, PerfMgt,
//! vendor range 2, and every SMP / GS attribute and SA record of issue 2)
//! with varied field values, writes them with `mad_core::pcap` (ERF type 21
//! records, LRH/BTH/DETH, real ICRC/VCRC), runs
//! `tshark -r FILE -V -T json --no-duplicate-keys`, and then walks **every
//! leaf** of the `infiniband` layer of every packet:
//!
//! - a leaf with an expectation is compared with the value from our Repr
//!   (reflected through `Fields` where possible) — or, for the handful of
//!   fields whose layout tshark 4.0 gets different from the IBA (listed in
//!   [`QUIRKS`]), with what tshark's layout reads from the bytes we emitted;
//! - a leaf listed in [`UNCHECKED`] is counted, with the reason;
//! - any other leaf fails the test, so coverage cannot silently shrink;
//! - every expectation must be consumed (tshark must show what we expect);
//! - no `_ws.malformed` / `_ws.expert` item may appear anywhere.
//!
//! tshark 4.0 does not verify ICRC/VCRC (it has no CRC status fields); the
//! test checks our CRCs itself and that tshark shows the CRC bytes where we
//! put them.
//!
//! tshark is required: a missing tshark fails the test, with or without
//! `CI` set. Set `TSHARK_INTEROP_DUMP=dir` to keep the pcap and the JSON.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Command;

use mad_core::pcap::{crc, packet, Direction, PacketMeta, PcapReader, PcapWriter, Timestamp};
use mad_core::wire::attr::*;
use mad_core::wire::field::{set_bits, FieldKind, FieldValue, Fields};
use mad_core::wire::perf::{PerfMad, PERF_CLASS_VERSION};
use mad_core::wire::rmpp::{
    RmppHeader, RmppStatus, RmppType, RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST,
};
use mad_core::wire::sa::SaHeader;
use mad_core::wire::sa_records::*;
use mad_core::wire::smp::{DrSmpRepr, SmpRepr};
use mad_core::wire::vendor::{VendorHeader, VendorMad, IB_OPENIB_OUI};
use mad_core::wire::{AttributeId, MadHeader, MadStatus, Method, MgmtClass, Repr};

// ---------------------------------------------------------------- values

/// xorshift64: deterministic varied values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 24) as u8).collect()
    }
}

/// Clears every reserved bit range of `f` (recursing into nested structs)
/// in `buf`, whose bit 0 is `base`.
fn zero_reserved(buf: &mut [u8], base: usize, f: &dyn Fields) {
    for (i, d) in f.field_descs().iter().enumerate() {
        let off = base + d.bit_offset as usize;
        if d.is_reserved() {
            let mut done = 0;
            while done < d.bit_len as usize {
                let n = (d.bit_len as usize - done).min(64);
                set_bits(buf, off + done, n, 0);
                done += n;
            }
        } else if d.kind == FieldKind::Nested {
            if let Some(FieldValue::Nested(inner)) = f.field_value(i) {
                zero_reserved(buf, off, inner);
            }
        }
    }
}

/// A value of `T` with pseudo-random contents and zero reserved bits.
fn varied<T: Repr + Fields + Default>(rng: &mut Rng) -> T {
    let mut b = rng.bytes(T::LEN);
    zero_reserved(&mut b, 0, &T::default());
    T::parse(&b).expect("parse of a full-length buffer")
}

/// A printable NUL-padded text field.
fn text<const N: usize>(s: &str) -> [u8; N] {
    let mut a = [0u8; N];
    a[..s.len()].copy_from_slice(s.as_bytes());
    a
}

// ---------------------------------------------------------- expectations

/// What tshark should show for one leaf.
#[derive(Debug, Clone, PartialEq)]
enum Want {
    Uint(u64),
    Bytes(Vec<u8>),
    Text(String),
}

/// How a wanted value relates to our Repr.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// tshark's field is the same field as ours: must be equal.
    Field,
    /// tshark lays this field out differently from the IBA (see
    /// [`QUIRKS`]): compared with tshark's reading of the bytes we emitted.
    Quirk(&'static str),
    /// Shown by tshark only when its offsets end exactly at the CRCs.
    Optional,
}

#[derive(Default)]
struct Expect {
    /// tshark field name (or "tree path>field name") -> expected values in
    /// order of appearance, each with the name of our field and its kind.
    wants: BTreeMap<String, VecDeque<(Want, String, Kind)>>,
}

/// JSON subtree paths, for field names tshark uses in several places.
const P_BTH: &str = "infiniband/infiniband.bth_tree";
const P_DETH: &str = "infiniband/infiniband.deth_tree";
const P_MAD: &str = "infiniband/infiniband.mad_tree";
const P_SMPLID: &str = "infiniband/infiniband.smplid_tree";
const P_SMPDR: &str = "infiniband/infiniband.smpdirected_tree";
const P_SA: &str = "infiniband/infiniband.sa.drdlid_tree";
const P_SA_REC: &str = "infiniband/infiniband.sa.drdlid_tree/infiniband.sa.drdlid_tree";
const P_PC: &str = "infiniband/infiniband.portcounters";
const P_PCX: &str = "infiniband/infiniband.portcounters_ext";

fn at(path: &str, key: &str) -> String {
    format!("{path}>{key}")
}

/// Field `path` (dot-separated through nested structs) of `f`.
fn lookup<'a>(f: &'a dyn Fields, path: &str) -> FieldValue<'a> {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    let idx = f
        .field_descs()
        .iter()
        .position(|d| d.name == head)
        .unwrap_or_else(|| panic!("{} has no field {head}", f.struct_name()));
    let v = f.field_value(idx).expect("field value");
    match (v, rest) {
        (FieldValue::Nested(inner), Some(r)) => lookup(inner, r),
        (v, None) => v,
        (_, Some(_)) => panic!("{}.{head} is not nested", f.struct_name()),
    }
}

fn lookup_uint(f: &dyn Fields, path: &str) -> u64 {
    match lookup(f, path) {
        FieldValue::Uint(v) => v,
        other => panic!("{}.{path} is not an integer: {other:?}", f.struct_name()),
    }
}

impl Expect {
    fn push_kind(&mut self, key: &str, want: Want, ours: impl Into<String>, kind: Kind) {
        self.wants
            .entry(key.to_string())
            .or_default()
            .push_back((want, ours.into(), kind));
    }
    fn push(&mut self, key: &str, want: Want, ours: impl Into<String>) {
        self.push_kind(key, want, ours, Kind::Field);
    }
    fn uint(&mut self, key: &str, v: u64, ours: impl Into<String>) {
        self.push(key, Want::Uint(v), ours);
    }
    fn bytes(&mut self, key: &str, v: &[u8], ours: impl Into<String>) {
        self.push(key, Want::Bytes(v.to_vec()), ours);
    }
    fn text(&mut self, key: &str, raw: &[u8], ours: impl Into<String>) {
        let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
        let t = String::from_utf8(raw[..end].to_vec()).expect("test strings are UTF-8");
        self.push(key, Want::Text(t), ours);
    }
    /// Zero-filled reserved bytes: our reserved field(s) `ours` are zero.
    fn reserved(&mut self, key: &str, len: usize, ours: impl Into<String>) {
        self.push(key, Want::Bytes(vec![0; len]), ours);
    }
    /// A field tshark decodes differently from the IBA layout; `v` is what
    /// tshark's layout reads from the bytes we emitted.
    fn quirk(&mut self, key: &str, v: Want, ours: impl Into<String>, why: &'static str) {
        assert!(
            QUIRKS.iter().any(|(k, _)| key.ends_with(k)),
            "quirk {key} must be listed in QUIRKS"
        );
        self.push_kind(key, v, ours, Kind::Quirk(why));
    }
    /// Our field `path` of `obj`, transformed by `xf`; arrays give one
    /// expected value per element, in order.
    fn field_xf(&mut self, obj: &dyn Fields, key: &str, path: &str, xf: fn(u64) -> u64) {
        let name = format!("{}.{}", obj.struct_name(), path);
        match lookup(obj, path) {
            FieldValue::Uint(v) => self.uint(key, xf(v), name),
            FieldValue::Array(vs) => {
                for (i, v) in vs.into_iter().enumerate() {
                    self.uint(key, xf(v), format!("{name}[{i}]"));
                }
            }
            FieldValue::Bytes(b) => self.bytes(key, b, name),
            FieldValue::Nested(_) => panic!("{name} is a nested struct"),
        }
    }
    fn field(&mut self, obj: &dyn Fields, key: &str, path: &str) {
        self.field_xf(obj, key, path, |v| v);
    }
    /// A table of (tshark field, our field path), optionally under a
    /// nested-struct prefix (`"node_info."`).
    fn fields(&mut self, obj: &dyn Fields, prefix: &str, table: &[(&str, &str)]) {
        for (key, path) in table {
            self.field(obj, key, &format!("{prefix}{path}"));
        }
    }
}

/// Fields where tshark 4.0's layout differs from the IBA's (and from
/// ours). They are still compared — with tshark's reading of our bytes —
/// and listed in the report.
const QUIRKS: &[(&str, &str)] = &[
    (
        "infiniband.rmpp.rresptime",
        "tshark splits MAD byte 26 4/4 (mask 0xF0); IBA: RRespTime is the upper 5 bits",
    ),
    (
        "infiniband.rmpp.rmppflags",
        "tshark splits MAD byte 26 4/4 (mask 0x0F); IBA: RMPPFlags are the lower 3 bits",
    ),
    (
        "infiniband.smpdirected.d",
        "tshark reads a 1-byte item with a 16-bit mask 0x8000, so the D bit always shows 0",
    ),
];

// ------------------------------------------------------------ MAD builders

struct Case {
    name: String,
    mad: Vec<u8>,
    meta: PacketMeta,
    /// The IB packet around the MAD (LRH .. VCRC), as the pcap holds it.
    pkt: Vec<u8>,
    expect: Expect,
}

impl Case {
    fn new(name: &str, mad: Vec<u8>, slid: u16, dlid: u16, dir: Direction) -> Self {
        let meta = PacketMeta::for_mad(&mad, slid, dlid, dir);
        let mut pkt = Vec::new();
        packet::encode(&meta, &mad, &mut pkt).expect("encode IB packet");
        let mut c = Self {
            name: name.into(),
            mad,
            meta,
            pkt,
            expect: Expect::default(),
        };
        expect_mad_header(&mut c.expect, &c.mad);
        c
    }
}

fn header(
    class: MgmtClass,
    cv: u8,
    method: Method,
    resp: bool,
    attr: AttributeId,
    am: u32,
    tid: u64,
) -> MadHeader {
    MadHeader {
        base_version: 1,
        mgmt_class: class,
        class_version: cv,
        response: resp,
        method,
        status: MadStatus(0),
        class_specific: 0,
        tid,
        attr_id: attr,
        reserved: 0,
        attr_mod: am,
    }
}

/// A LID-routed SMP carrying `data` as its attribute.
fn smp_lid(
    rng: &mut Rng,
    method: Method,
    resp: bool,
    attr: AttributeId,
    am: u32,
    data: &[u8],
) -> SmpRepr {
    let mut d = [0u8; 64];
    d[..data.len()].copy_from_slice(data);
    let mut h = header(
        MgmtClass::SUBN_LID_ROUTED,
        1,
        method,
        resp,
        attr,
        am,
        rng.next(),
    );
    h.status = MadStatus((rng.next() & 0x1C) as u16);
    SmpRepr {
        header: h,
        m_key: rng.next(),
        reserved: [0; 32],
        data: d,
        reserved1: [0; 128],
    }
}

/// An SA MAD: common header, RMPP header, SA header, then `records`,
/// each padded to `stride` bytes.
fn sa_mad(
    hdr: &MadHeader,
    rmpp: &RmppHeader,
    sa: &SaHeader,
    records: &[Vec<u8>],
    stride: usize,
) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    hdr.emit(&mut m).expect("emit header");
    rmpp.emit(&mut m[24..]).expect("emit RMPP header");
    sa.emit(&mut m[36..]).expect("emit SA header");
    for (i, r) in records.iter().enumerate() {
        let off = 56 + i * stride;
        m[off..off + r.len()].copy_from_slice(r);
    }
    m
}

/// A single-segment RMPP DATA header for `data_len` bytes of class data
/// after the 20-byte SA header.
fn rmpp_single(rng: &mut Rng, data_len: usize) -> RmppHeader {
    RmppHeader {
        version: 1,
        rmpp_type: RmppType::DATA,
        resp_time: (rng.next() % 0x1F) as u8,
        flags: RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
        status: RmppStatus(0),
        data1: 1,
        data2: (20 + data_len) as u32,
    }
}

fn sa_header(rng: &mut Rng, attr_offset: u16) -> SaHeader {
    SaHeader {
        sm_key: rng.next(),
        attr_offset,
        reserved: 0,
        comp_mask: rng.next(),
    }
}

// ------------------------------------------------ header expectations

/// The common MAD header (`infiniband.mad` subtree).
fn expect_mad_header(e: &mut Expect, mad: &[u8]) {
    let h = MadHeader::parse(mad).expect("header");
    e.bytes("infiniband.mad", mad, "the whole MAD");
    e.fields(
        &h,
        "",
        &[
            ("infiniband.mad.baseversion", "base_version"),
            ("infiniband.mad.mgmtclass", "mgmt_class"),
            ("infiniband.mad.classversion", "class_version"),
            ("infiniband.mad.status", "status"),
            ("infiniband.mad.classspecific", "class_specific"),
            ("infiniband.mad.transactionid", "tid"),
            ("infiniband.mad.attributeid", "attr_id"),
            ("infiniband.mad.attributemodifier", "attr_mod"),
        ],
    );
    // tshark shows byte 3 whole: response bit and method.
    e.uint(
        "infiniband.mad.method",
        (u64::from(h.response) << 7) | u64::from(h.method.0),
        "MadHeader.response<<7 | MadHeader.method",
    );
    e.reserved(&at(P_MAD, "infiniband.reserved"), 2, "MadHeader.reserved");
    e.bytes("infiniband.mad.data", &mad[24..], "MAD bytes 24..256");
}

/// A LID-routed SMP (`infiniband.smplid` subtree, without the attribute).
fn expect_smp_lid(e: &mut Expect, smp: &SmpRepr) {
    e.bytes(
        "infiniband.smplid",
        &smp.to_vec().expect("emit"),
        "the whole SMP",
    );
    e.field(smp, "infiniband.smplid.mkey", "m_key");
    e.field(smp, &at(P_SMPLID, "infiniband.reserved"), "reserved");
    e.field(smp, &at(P_SMPLID, "infiniband.reserved"), "reserved1");
    e.field(smp, "infiniband.smplid.smpdata", "data");
}

/// The RMPP header (`infiniband.rmpp` subtree).
fn expect_rmpp(e: &mut Expect, mad: &[u8]) {
    let r = RmppHeader::parse(&mad[24..36]).expect("RMPP header");
    e.bytes("infiniband.rmpp", &mad[24..36], "RmppHeader bytes");
    e.field(&r, "infiniband.rmpp.rmppversion", "version");
    e.field(&r, "infiniband.rmpp.rmpptype", "rmpp_type");
    let byte26 = (u64::from(r.resp_time) << 3) | u64::from(r.flags);
    e.quirk(
        "infiniband.rmpp.rresptime",
        Want::Uint(byte26 >> 4),
        "RmppHeader.resp_time<<3|flags, upper 4 bits",
        "RRespTime is 5 bits in the IBA",
    );
    e.quirk(
        "infiniband.rmpp.rmppflags",
        Want::Uint(byte26 & 0x0F),
        "RmppHeader.resp_time<<3|flags, lower 4 bits",
        "RMPPFlags are 3 bits in the IBA",
    );
    e.field(&r, "infiniband.rmpp.rmppstatus", "status");
    match r.rmpp_type {
        RmppType::DATA => {
            e.field(&r, "infiniband.rmpp.segmentnumber", "data1");
            e.field(&r, "infiniband.rmpp.payloadlength", "data2");
            e.bytes(
                "infiniband.rmpp.transferreddata",
                &mad[36..],
                "MAD bytes 36..256 (RMPP payload)",
            );
        }
        RmppType::ACK => {
            e.field(&r, "infiniband.rmpp.segmentnumber", "data1");
            e.field(&r, "infiniband.rmpp.newwindowlast", "data2");
            e.reserved(
                &at("infiniband/infiniband.rmpp_tree", "infiniband.reserved"),
                220,
                "ACK: MAD bytes 36..256",
            );
        }
        RmppType::STOP | RmppType::ABORT => {
            // Reserved for STOP and ABORT (IBA 13.6.2.1); tshark agrees.
            let p = "infiniband/infiniband.rmpp_tree";
            e.bytes(
                &at(p, "infiniband.reserved"),
                &r.data1.to_be_bytes(),
                "RmppHeader.data1",
            );
            e.bytes(
                &at(p, "infiniband.reserved"),
                &r.data2.to_be_bytes(),
                "RmppHeader.data2",
            );
            e.bytes(
                "infiniband.rmpp.extendederrordata",
                &mad[36..],
                "MAD bytes 36..256",
            );
        }
        _ => {
            e.field(&r, "infiniband.rmpp.data1", "data1");
            e.field(&r, "infiniband.rmpp.data2", "data2");
        }
    }
}

/// The SA header (`infiniband.sa.drdlid` subtree: tshark's abbreviation
/// for its "SA Packet" item).
fn expect_sa_header(e: &mut Expect, mad: &[u8]) {
    let sa = SaHeader::parse(&mad[36..56]).expect("SA header");
    e.bytes("infiniband.sa.drdlid", mad, "the whole SA MAD");
    e.field(&sa, "infiniband.sa.smkey", "sm_key");
    e.field(&sa, "infiniband.sa.attributeoffset", "attr_offset");
    e.bytes(
        &at(P_SA, "infiniband.reserved"),
        &sa.reserved.to_be_bytes(),
        "SaHeader.reserved",
    );
    e.field(&sa, "infiniband.sa.componentmask", "comp_mask");
}

// ------------------------------------------------------------ attributes

const NODE_INFO: &[(&str, &str)] = &[
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

const SWITCH_INFO: &[(&str, &str)] = &[
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

const PORT_INFO: &[(&str, &str)] = &[
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
const PORT_CAP_BITS: &[(&str, u32)] = &[
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

fn expect_port_info(e: &mut Expect, obj: &dyn Fields, prefix: &str) {
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

const SM_INFO: &[(&str, &str)] = &[
    ("infiniband.sminfo.guid", "guid"),
    ("infiniband.sminfo.sm_key", "sm_key"),
    ("infiniband.sminfo.actcount", "act_count"),
    ("infiniband.sminfo.priority", "priority"),
    ("infiniband.sminfo.smstate", "sm_state"),
];

fn expect_pkeys(e: &mut Expect, obj: &dyn Fields, path: &str) {
    e.field_xf(obj, "infiniband.p_keytable.membershiptype", path, |v| {
        v >> 15
    });
    e.field_xf(obj, "infiniband.p_keytable.p_keybase", path, |v| v & 0x7FFF);
}

const CLASS_PORT_INFO: &[(&str, &str)] = &[
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

const PORT_COUNTERS: &[(&str, &str)] = &[
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

const PORT_COUNTERS_EXT: &[(&str, &str)] = &[
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

const NOTICE: &[(&str, &str)] = &[
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
fn expect_trap_details(e: &mut Expect, n: &Notice) {
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

// --------------------------------------------------------------- cases

/// A LID-routed SMP GetResp carrying `attr`; `more` adds the attribute's
/// expectations.
fn smp_case<T: Repr + Fields>(
    rng: &mut Rng,
    name: &str,
    attr_id: AttributeId,
    attr_mod: u32,
    attr: &T,
    more: impl FnOnce(&mut Expect, &T, &SmpRepr),
) -> Case {
    let smp = smp_lid(
        rng,
        Method::GET,
        true,
        attr_id,
        attr_mod,
        &attr.to_vec().expect("emit"),
    );
    let mut c = Case::new(
        name,
        smp.to_vec().expect("emit SMP"),
        0x0101,
        0x0202,
        Direction::Received,
    );
    expect_smp_lid(&mut c.expect, &smp);
    more(&mut c.expect, attr, &smp);
    c
}

fn smp_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    let a: NodeInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP NodeInfo",
        AttributeId::NODE_INFO,
        0,
        &a,
        |e, a, _| e.fields(a, "", NODE_INFO),
    ));
    let a = NodeDescription {
        desc: text("madstack sw-7 HCA-2 mlx5_0 port 1"),
    };
    out.push(smp_case(
        rng,
        "SMP NodeDescription",
        AttributeId::NODE_DESC,
        0,
        &a,
        |e, a, _| {
            e.text(
                "infiniband.nodedescription.nodestring",
                &a.desc,
                "NodeDescription.desc",
            );
        },
    ));
    let a: PortInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP PortInfo",
        AttributeId::PORT_INFO,
        3,
        &a,
        |e, a, _| expect_port_info(e, a, ""),
    ));
    let a: SwitchInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP SwitchInfo",
        AttributeId::SWITCH_INFO,
        0,
        &a,
        |e, a, _| e.fields(a, "", SWITCH_INFO),
    ));
    let a: GuidInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP GUIDInfo",
        AttributeId::GUID_INFO,
        2,
        &a,
        |e, a, _| e.field(a, "infiniband.switchinfo.guid", "guids"),
    ));
    let a: PKeyTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP P_KeyTable",
        AttributeId::PKEY_TABLE,
        0x0005_0001,
        &a,
        |e, a, smp| {
            e.bytes(
                "infiniband.p_keytable.p_keytableblock",
                &smp.data,
                "PKeyTable (SmpRepr.data)",
            );
            expect_pkeys(e, a, "pkeys");
        },
    ));
    let a: SlToVlTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP SLtoVLMappingTable",
        AttributeId::SL_TO_VL_TABLE,
        0x0000_0203,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            for i in 0..8 {
                e.uint(
                    "infiniband.sltovlmappingtable.sltovlhighbits",
                    u64::from(a.vl[2 * i]),
                    format!("SlToVlTable.vl[{}]", 2 * i),
                );
                e.uint(
                    "infiniband.sltovlmappingtable.sltovllowbits",
                    u64::from(a.vl[2 * i + 1]),
                    format!("SlToVlTable.vl[{}]", 2 * i + 1),
                );
            }
        },
    ));
    let a: VlArbTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP VLArbitrationTable",
        AttributeId::VL_ARB_TABLE,
        0x0002_0004,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            e.field_xf(a, "infiniband.vlarbitrationtable.vl", "entries", |v| {
                (v >> 8) & 0x0F
            });
            e.field_xf(a, "infiniband.vlarbitrationtable.weight", "entries", |v| {
                v & 0xFF
            });
        },
    ));
    let a: LinearFwdTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP LinearForwardingTable",
        AttributeId::LINEAR_FWD_TABLE,
        7,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            e.field(a, "infiniband.linearforwardingtable.port", "ports");
        },
    ));
    let a: MulticastFwdTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP MulticastForwardingTable",
        AttributeId::MCAST_FWD_TABLE,
        0x2000_0003,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            // tshark shows only the first 16 of the block's 32 PortMasks.
            for (i, m) in a.masks.iter().enumerate().take(16) {
                e.uint(
                    "infiniband.multicastforwardingtable.portmask",
                    u64::from(*m),
                    format!("MulticastFwdTable.masks[{i}]"),
                );
            }
        },
    ));
    let a: SmInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP SMInfo",
        AttributeId::SM_INFO,
        0,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            e.fields(a, "", SM_INFO);
        },
    ));
    // Traps carrying a Notice, one per DataDetails layout tshark decodes.
    // (Trap 259 is left out: tshark 4.0's own dissection of it is malformed,
    // "Trying to fetch an IPv6 address with length 2", whatever the bytes.)
    for tn in [64u16, 65, 128, 129, 130, 131, 144, 145, 256, 257, 258] {
        let mut n: Notice = varied(rng);
        n.is_generic = true;
        n.notice_type = (tn % 5) as u8;
        n.producer_type_or_vendor_id = u32::from(tn % 4) + 1;
        n.trap_number_or_device_id = tn;
        let smp = smp_lid(
            rng,
            Method::TRAP,
            false,
            AttributeId::NOTICE,
            0,
            &n.to_vec().expect("emit")[..64],
        );
        let mut c = Case::new(
            &format!("SMP Trap {tn}"),
            smp.to_vec().expect("emit SMP"),
            0x0009,
            0x0001,
            Direction::Received,
        );
        let e = &mut c.expect;
        expect_smp_lid(e, &smp);
        e.field(&smp, "infiniband.smplid.smpdata", "data");
        e.fields(&n, "", NOTICE);
        e.field(&n, "infiniband.notice.datadetails", "data_details");
        e.field(&n, "infiniband.smplid.smpdata", "data_details");
        expect_trap_details(e, &n);
        out.push(c);
    }
}

fn dr_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    for (i, (ni_hops, direction)) in [(&[1u8, 7, 3, 12][..], true), (&[2u8, 5][..], false)]
        .into_iter()
        .enumerate()
    {
        let ni: NodeInfo = varied(rng);
        let mut d = [0u8; 64];
        d[..40].copy_from_slice(&ni.to_vec().expect("emit"));
        let mut ip = [0u8; 64];
        ip[1..=ni_hops.len()].copy_from_slice(ni_hops);
        let mut rp = [0u8; 64];
        if direction {
            for (k, h) in ni_hops.iter().enumerate() {
                rp[k + 1] = h.wrapping_mul(3) % 36 + 1;
            }
        }
        let dr = DrSmpRepr {
            base_version: 1,
            mgmt_class: MgmtClass::SUBN_DIRECTED_ROUTE,
            class_version: 1,
            response: direction,
            method: Method::GET,
            direction,
            status: if direction { 0x001C } else { 0 },
            hop_ptr: if direction { ni_hops.len() as u8 } else { 0 },
            hop_cnt: ni_hops.len() as u8,
            tid: rng.next(),
            attr_id: AttributeId::NODE_INFO,
            reserved: 0,
            attr_mod: 0,
            m_key: rng.next(),
            dr_slid: if i == 0 { 0xFFFF } else { 0x0011 },
            dr_dlid: if i == 0 { 0x0042 } else { 0xFFFF },
            reserved1: [0; 28],
            data: d,
            initial_path: ip,
            return_path: rp,
        };
        let mad = dr.to_vec().expect("emit DR SMP");
        let name = format!(
            "DR SMP NodeInfo {}",
            if direction { "returning" } else { "outbound" }
        );
        let mut c = Case::new(&name, mad.clone(), 0xFFFF, 0xFFFF, Direction::Sent);
        let e = &mut c.expect;
        e.bytes("infiniband.smpdirected", &mad, "the whole DR SMP");
        e.uint(
            "infiniband.smpdirected.smpstatus",
            (u64::from(dr.direction) << 15) | u64::from(dr.status),
            "DrSmpRepr.direction<<15 | DrSmpRepr.status",
        );
        e.quirk(
            "infiniband.smpdirected.d",
            Want::Uint(0),
            "DrSmpRepr.direction",
            "mask 0x8000 on a 1-byte item",
        );
        e.field(&dr, "infiniband.smpdirected.hoppointer", "hop_ptr");
        e.field(&dr, "infiniband.smpdirected.hopcount", "hop_cnt");
        e.field(&dr, "infiniband.smplid.mkey", "m_key");
        e.field(&dr, "infiniband.smpdirected.drslid", "dr_slid");
        e.field(&dr, "infiniband.smpdirected.drdlid", "dr_dlid");
        e.field(&dr, &at(P_SMPDR, "infiniband.reserved"), "reserved1");
        e.field(&dr, "infiniband.smplid.smpdata", "data");
        e.fields(&ni, "", NODE_INFO);
        e.field(&dr, "infiniband.smpdirected.initialpath", "initial_path");
        e.field(&dr, "infiniband.smpdirected.returnpath", "return_path");
        out.push(c);
    }
}

/// An SA GetTableResp (or GetResp) carrying `recs`; the first record's
/// expectations come from `first`.
fn sa_case<T: SaRecord + Fields>(
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
        rng.next(),
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
    first(&mut c.expect, &recs[0], &bytes[0], &tail);
    c
}

fn sa_cases(rng: &mut Rng, out: &mut Vec<Case>) {
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

fn expect_node_record(e: &mut Expect, r: &NodeRecord) {
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

fn expect_path_record(e: &mut Expect, r: &PathRecord, b: &[u8]) {
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

fn expect_inform_info(e: &mut Expect, r: &dyn Fields, p: &str) {
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

fn gs_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    // PerfMgt: class header is 40 reserved bytes, attribute at 64.
    let perf = |rng: &mut Rng, attr: AttributeId, data: &[u8]| {
        let mut m = vec![0u8; 256];
        header(
            MgmtClass::PERF_MGT,
            PERF_CLASS_VERSION,
            Method::GET,
            true,
            attr,
            0,
            rng.next(),
        )
        .emit(&mut m)
        .expect("emit");
        let mut pm = PerfMad::new_checked(&mut m[..]).expect("PerfMgt MAD");
        pm.data_mut()[..data.len()].copy_from_slice(data);
        m
    };
    let pc: PortCounters = varied(rng);
    let mut c = Case::new(
        "PerfMgt PortCounters",
        perf(
            rng,
            AttributeId::PM_PORT_COUNTERS,
            &pc.to_vec().expect("emit"),
        ),
        5,
        6,
        Direction::Received,
    );
    let reserved = PerfMad::new_checked(&c.mad[..])
        .expect("PerfMgt MAD")
        .reserved()
        .to_vec();
    let e = &mut c.expect;
    e.bytes(
        &at(P_PC, "infiniband.reserved"),
        &reserved,
        "PerfMad::reserved (bytes 24..64)",
    );
    e.field(&pc, &at(P_PC, "infiniband.reserved"), "reserved");
    e.fields(&pc, "", PORT_COUNTERS);
    // tshark shows IBA 1.2's CounterSelect2 and QP1Dropped as "Reserved".
    e.bytes(
        &at(P_PC, "infiniband.reserved"),
        &[pc.counter_select2],
        "PortCounters.counter_select2",
    );
    e.bytes(
        &at(P_PC, "infiniband.reserved"),
        &pc.qp1_dropped.to_be_bytes(),
        "PortCounters.qp1_dropped",
    );
    out.push(c);

    let px: PortCountersExt = varied(rng);
    let mut c = Case::new(
        "PerfMgt PortCountersExtended",
        perf(
            rng,
            AttributeId::PM_PORT_COUNTERS_EXT,
            &px.to_vec().expect("emit"),
        ),
        5,
        6,
        Direction::Received,
    );
    let reserved = PerfMad::new_checked(&c.mad[..])
        .expect("PerfMgt MAD")
        .reserved()
        .to_vec();
    let e = &mut c.expect;
    e.bytes(
        &at(P_PCX, "infiniband.reserved"),
        &reserved,
        "PerfMad::reserved (bytes 24..64)",
    );
    e.field(&px, &at(P_PCX, "infiniband.reserved"), "reserved");
    e.fields(&px, "", PORT_COUNTERS_EXT);
    e.bytes(
        &at(P_PCX, "infiniband.reserved"),
        &px.counter_select2.to_be_bytes(),
        "PortCountersExt.counter_select2",
    );
    out.push(c);

    let cpi: ClassPortInfo = varied(rng);
    let mut c = Case::new(
        "PerfMgt ClassPortInfo",
        perf(
            rng,
            AttributeId::CLASS_PORT_INFO,
            &cpi.to_vec().expect("emit"),
        ),
        5,
        6,
        Direction::Received,
    );
    c.expect.fields(&cpi, "", CLASS_PORT_INFO);
    out.push(c);

    let cpi: ClassPortInfo = varied(rng);
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET,
        true,
        AttributeId::CLASS_PORT_INFO,
        0,
        rng.next(),
    );
    let rmpp = RmppHeader::default();
    let sa = sa_header(rng, 0);
    let m = sa_mad(&hdr, &rmpp, &sa, &[cpi.to_vec().expect("emit")], 72);
    let mut c = Case::new("SA ClassPortInfo", m.clone(), 5, 6, Direction::Received);
    expect_rmpp(&mut c.expect, &m);
    expect_sa_header(&mut c.expect, &m);
    c.expect
        .bytes("infiniband.sa.drdlid", &m[56..], "SA data (ClassPortInfo)");
    c.expect.fields(&cpi, "", CLASS_PORT_INFO);
    out.push(c);

    // SA Report(Notice) to a subscriber: a Notice as SA data.
    let mut n: Notice = varied(rng);
    n.is_generic = true;
    n.trap_number_or_device_id = 64;
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        Method::REPORT,
        false,
        AttributeId::NOTICE,
        0,
        rng.next(),
    );
    let m = sa_mad(
        &hdr,
        &RmppHeader::default(),
        &sa_header(rng, 0),
        &[n.to_vec().expect("emit")],
        80,
    );
    let mut c = Case::new("SA Report Notice", m.clone(), 1, 0x33, Direction::Received);
    expect_rmpp(&mut c.expect, &m);
    expect_sa_header(&mut c.expect, &m);
    let e = &mut c.expect;
    e.bytes("infiniband.sa.drdlid", &m[56..], "SA data (Notice)");
    e.bytes(
        "infiniband.smplid.smpdata",
        &m[56..120],
        "Notice bytes 0..64",
    );
    e.fields(&n, "", NOTICE);
    e.field(&n, "infiniband.notice.datadetails", "data_details");
    e.field(&n, "infiniband.smplid.smpdata", "data_details");
    expect_trap_details(e, &n);
    out.push(c);

    // An RMPP ACK on the SA (segment 3, window up to 7).
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET_TABLE,
        true,
        AttributeId::SA_PATH_RECORD,
        0,
        rng.next(),
    );
    let ack = RmppHeader {
        version: 1,
        rmpp_type: RmppType::ACK,
        resp_time: 0x1F,
        flags: RMPP_FLAG_ACTIVE,
        status: RmppStatus(0),
        data1: 3,
        data2: 7,
    };
    let m = sa_mad(&hdr, &ack, &SaHeader::default(), &[], 64);
    let mut c = Case::new("SA RMPP ACK", m.clone(), 0x33, 1, Direction::Sent);
    expect_rmpp(&mut c.expect, &m);
    // tshark still decodes the (all-zero) rest as SA header and PathRecord.
    expect_sa_header(&mut c.expect, &m);
    c.expect
        .bytes("infiniband.sa.drdlid", &m[56..], "SA data (zero)");
    expect_path_record(&mut c.expect, &PathRecord::default(), &m[56..120]);
    out.push(c);

    // An RMPP ABORT (status 118, total time too long) on a vendor-range-2
    // style transfer is shown with Data1/Data2 and the error data.
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET_TABLE,
        true,
        AttributeId::SA_NODE_RECORD,
        0,
        rng.next(),
    );
    let abort = RmppHeader {
        version: 1,
        rmpp_type: RmppType::ABORT,
        resp_time: 0x1F,
        flags: RMPP_FLAG_ACTIVE,
        status: RmppStatus(118),
        data1: 0,
        data2: 0,
    };
    let mut m = sa_mad(&hdr, &abort, &SaHeader::default(), &[], 112);
    m[56 + 44..56 + 44 + 20].copy_from_slice(b"abort: time too long");
    let mut c = Case::new("SA RMPP ABORT", m.clone(), 0x33, 1, Direction::Sent);
    expect_rmpp(&mut c.expect, &m);
    // tshark still decodes the rest as SA header and NodeRecord.
    expect_sa_header(&mut c.expect, &m);
    c.expect
        .bytes("infiniband.sa.drdlid", &m[56..], "SA data (error data)");
    expect_node_record(&mut c.expect, &NodeRecord::parse(&m[56..]).expect("parse"));
    out.push(c);
}

fn vendor_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    // Vendor range 2: VendorHeader (RMPP header, reserved byte, OUI) at 24,
    // vendor data at 40.
    for (class, oui) in [(0x30u8, 0x00_02C9), (0x4F, IB_OPENIB_OUI)] {
        let mut m = vec![0u8; 256];
        header(
            MgmtClass(class),
            1,
            Method::GET,
            false,
            AttributeId(0xFF10),
            0x1234_5678,
            rng.next(),
        )
        .emit(&mut m)
        .expect("emit");
        let vh = VendorHeader {
            rmpp: rmpp_single(rng, 216),
            reserved: 0,
            oui,
        };
        vh.emit(&mut m[24..]).expect("emit vendor header");
        let data = rng.bytes(216);
        {
            let mut v = VendorMad::new_checked(&mut m[..]).expect("vendor MAD");
            v.data_mut().copy_from_slice(&data);
        }
        let back = VendorMad::new_checked(&m[..]).expect("vendor MAD");
        assert_eq!((back.oui(), back.data()), (oui, &data[..]));
        let mut c = Case::new(
            &format!("Vendor class {class:#04x}"),
            m.clone(),
            5,
            6,
            Direction::Sent,
        );
        // tshark 4.0 does not dissect vendor classes: it shows the bytes
        // after the common header (our VendorHeader and the vendor data).
        c.expect.bytes(
            "infiniband.smplid.smpdata",
            &m[24..],
            "VendorHeader (RMPP, OUI) + vendor data",
        );
        out.push(c);
    }
}

fn cases() -> Vec<Case> {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut v = Vec::new();
    smp_cases(&mut rng, &mut v);
    dr_cases(&mut rng, &mut v);
    sa_cases(&mut rng, &mut v);
    gs_cases(&mut rng, &mut v);
    vendor_cases(&mut rng, &mut v);
    v
}

// ------------------------------------------------------------- checking

/// tshark leaves we do not compare, with the reason. Everything else must
/// have an expectation.
const UNCHECKED: &[(&str, &str)] = &[(
    "infiniband.classportinfo",
    "an FT_NONE label item (\"ClassPortInfo (Performance Management MAD)\") with no value",
)];

/// Packet-level expectations: LRH, BTH, DETH, CRCs.
fn expect_packet(e: &mut Expect, meta: &PacketMeta, pkt: &[u8]) {
    e.bytes("infiniband.lrh", &pkt[0..8], "LRH bytes");
    e.uint("infiniband.lrh.vl", u64::from(meta.vl), "PacketMeta.vl");
    e.uint("infiniband.lrh.lver", 0, "LRH LVer 0");
    e.uint("infiniband.lrh.sl", u64::from(meta.sl), "PacketMeta.sl");
    e.uint("infiniband.lrh.reserved2", 0, "LRH reserved");
    e.uint("infiniband.lrh.lnh", 2, "LRH LNH 2 (IBA local)");
    e.uint(
        "infiniband.lrh.dlid",
        u64::from(meta.dlid),
        "PacketMeta.dlid",
    );
    e.uint("infiniband.lrh.reserved5", 0, "LRH reserved");
    e.uint(
        "infiniband.lrh.pktlen",
        ((pkt.len() - 2) / 4) as u64,
        "LRH PktLen (words through ICRC)",
    );
    e.uint(
        "infiniband.lrh.slid",
        u64::from(meta.slid),
        "PacketMeta.slid",
    );
    e.bytes("infiniband.bth", &pkt[8..20], "BTH bytes");
    e.uint("infiniband.bth.opcode", 0x64, "BTH OpCode UD SEND only");
    e.uint("infiniband.bth.se", 0, "BTH SE");
    e.uint("infiniband.bth.m", 0, "BTH MigReq");
    e.uint("infiniband.bth.padcnt", 0, "BTH PadCnt");
    e.uint("infiniband.bth.tver", 0, "BTH TVer");
    e.uint(
        "infiniband.bth.p_key",
        u64::from(meta.pkey),
        "PacketMeta.pkey",
    );
    e.reserved(&at(P_BTH, "infiniband.reserved"), 1, "BTH FECN/BECN/resv6");
    e.uint(
        "infiniband.bth.destqp",
        u64::from(meta.dest_qp),
        "PacketMeta.dest_qp",
    );
    e.uint("infiniband.bth.a", 0, "BTH AckReq");
    e.uint("infiniband.bth.reserved7", 0, "BTH reserved");
    e.uint("infiniband.bth.psn", u64::from(meta.psn), "PacketMeta.psn");
    e.bytes("infiniband.deth", &pkt[20..28], "DETH bytes");
    e.uint(
        "infiniband.deth.q_key",
        u64::from(meta.qkey),
        "PacketMeta.qkey",
    );
    e.reserved(&at(P_DETH, "infiniband.reserved"), 1, "DETH reserved");
    e.uint(
        "infiniband.deth.srcqp",
        u64::from(meta.src_qp),
        "PacketMeta.src_qp",
    );
    let n = pkt.len();
    let icrc = u32::from_le_bytes(pkt[n - 6..n - 2].try_into().expect("4 bytes"));
    let vcrc = u16::from_le_bytes(pkt[n - 2..].try_into().expect("2 bytes"));
    // Our own CRCs are right (tshark 4.0 does not check them)...
    assert_eq!(
        crc::icrc(&pkt[..n - 6]),
        Some(icrc),
        "ICRC of the packet we wrote"
    );
    assert_eq!(
        crc::vcrc(&pkt[..n - 2]),
        vcrc,
        "VCRC of the packet we wrote"
    );
    // ...and tshark finds them where we put them. tshark prints the CRC
    // bytes as a big-endian number; we send them least significant byte
    // first, so it shows them byte-swapped.
    e.push_kind(
        "infiniband.invariant.crc",
        Want::Uint(u64::from(icrc.swap_bytes())),
        "ICRC (byte-swapped)",
        Kind::Optional,
    );
    e.push_kind(
        "infiniband.variant.crc",
        Want::Uint(u64::from(vcrc.swap_bytes())),
        "VCRC (byte-swapped)",
        Kind::Optional,
    );
}

/// A leaf of tshark's JSON: the subtree path it sits in, its field name
/// and its value.
struct Leaf<'a> {
    tree: String,
    key: String,
    value: &'a str,
}

fn leaves<'a>(tree: &str, key: &str, v: &'a serde_json::Value, out: &mut Vec<Leaf<'a>>) {
    match v {
        serde_json::Value::String(s) => out.push(Leaf {
            tree: tree.to_string(),
            key: key.to_string(),
            value: s,
        }),
        serde_json::Value::Array(a) => {
            for x in a {
                leaves(tree, key, x, out);
            }
        }
        serde_json::Value::Object(o) => {
            let sub = if tree.is_empty() {
                key.to_string()
            } else {
                format!("{tree}/{key}")
            };
            for (k, x) in o {
                leaves(&sub, k, x, out);
            }
        }
        other => out.push(Leaf {
            tree: tree.to_string(),
            key: key.to_string(),
            value: if other.is_null() {
                "null"
            } else {
                "(non-string)"
            },
        }),
    }
}

fn parse_uint(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// "aa:bb:cc" hex bytes, or (for 16-byte values) an IPv6-formatted GID.
fn parse_bytes(s: &str, want_len: usize) -> Option<Vec<u8>> {
    let hex: Option<Vec<u8>> = s
        .split(':')
        .map(|p| {
            if p.len() == 2 {
                u8::from_str_radix(p, 16).ok()
            } else {
                None
            }
        })
        .collect();
    match hex {
        Some(b) if b.len() == want_len => Some(b),
        _ if want_len == 16 => s
            .parse::<std::net::Ipv6Addr>()
            .ok()
            .map(|a| a.octets().to_vec()),
        other => other,
    }
}

fn matches(want: &Want, got: &str) -> bool {
    match want {
        Want::Uint(v) => parse_uint(got) == Some(*v),
        Want::Bytes(b) => parse_bytes(got, b.len()).as_deref() == Some(&b[..]),
        Want::Text(t) => got == t,
    }
}

#[derive(Default)]
struct Report {
    compared: usize,
    compared_by_key: BTreeMap<String, usize>,
    quirks: BTreeMap<String, usize>,
    unchecked: BTreeMap<String, usize>,
    optional_missing: usize,
    failures: Vec<String>,
}

/// Every `_ws.*` item (malformed packet, expert info) anywhere in `v`.
fn ws_items(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                if k.starts_with("_ws.") {
                    out.push(format!("{k} = {x}"));
                }
                ws_items(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| ws_items(x, out)),
        _ => {}
    }
}

fn check_case(case: &mut Case, pkt_json: &serde_json::Value, pkt: &[u8], report: &mut Report) {
    expect_packet(&mut case.expect, &case.meta, pkt);
    let layers = &pkt_json["_source"]["layers"];
    let mut ws = Vec::new();
    ws_items(layers, &mut ws);
    for w in ws {
        report
            .failures
            .push(format!("{}: tshark reports {w}", case.name));
    }
    let protos = layers["frame"]["frame.protocols"].as_str().unwrap_or("");
    if protos != "erf:infiniband" {
        report.failures.push(format!(
            "{}: protocols {protos:?}, want erf:infiniband",
            case.name
        ));
    }
    let ib = &layers["infiniband"];
    let mut ls = Vec::new();
    leaves("", "infiniband", ib, &mut ls);
    for Leaf {
        tree,
        key,
        value: got,
    } in ls
    {
        // An expectation scoped to this subtree ("tree>key") first.
        let want = match case
            .expect
            .wants
            .get_mut(&at(&tree, &key))
            .and_then(VecDeque::pop_front)
        {
            Some(w) => Some(w),
            None => case
                .expect
                .wants
                .get_mut(&key)
                .and_then(VecDeque::pop_front),
        };
        match want {
            Some((want, ours, kind)) => {
                report.compared += 1;
                *report.compared_by_key.entry(key.clone()).or_default() += 1;
                if let Kind::Quirk(_) = kind {
                    *report.quirks.entry(key.clone()).or_default() += 1;
                }
                if !matches(&want, got) {
                    report.failures.push(format!(
                        "{}: tshark {key} = {got} (in {tree}), but our {ours} = {want:?}",
                        case.name
                    ));
                }
            }
            None => match UNCHECKED.iter().find(|(k, _)| *k == key) {
                Some(_) => *report.unchecked.entry(key.clone()).or_default() += 1,
                None => report.failures.push(format!(
                    "{}: tshark leaf {key} = {got} (in {tree}) is neither compared nor in UNCHECKED",
                    case.name
                )),
            },
        }
    }
    for (key, rest) in &case.expect.wants {
        for (want, ours, kind) in rest {
            if *kind == Kind::Optional {
                report.optional_missing += 1;
            } else {
                report.failures.push(format!(
                    "{}: tshark did not show {key} (our {ours} = {want:?})",
                    case.name
                ));
            }
        }
    }
}

/// Runs tshark, failing loudly when it is missing (CI or not).
fn run_tshark(path: &std::path::Path) -> serde_json::Value {
    let out = match Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-V", "-T", "json", "--no-duplicate-keys"])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            let ci = std::env::var_os("CI").is_some();
            eprintln!("==============================================================");
            eprintln!("tshark is required by this test and could not be run: {e}");
            eprintln!("install it: apt-get install -y tshark   (CI set: {ci})");
            eprintln!("==============================================================");
            panic!("tshark not available: {e}");
        }
    };
    assert!(
        out.status.success(),
        "tshark failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("tshark JSON")
}

#[test]
fn tshark_shows_every_field_of_every_mad_type_as_we_emit_it() {
    let dir = std::env::var_os("TSHARK_INTEROP_DUMP")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("madstack-tshark-{}", std::process::id()))
        });
    std::fs::create_dir_all(&dir).expect("dump dir");
    let mut cases = cases();
    let path = dir.join("all-mads.pcap");
    let mut w =
        PcapWriter::new(std::fs::File::create(&path).expect("create pcap")).expect("pcap header");
    let mut pkts = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let ts = Timestamp::new(1_700_000_000 + i as u32, (i as u32) * 1_000_003);
        w.write_mad(ts, &c.mad, &c.meta).expect("write MAD");
        let mut p = Vec::new();
        packet::encode(&c.meta, &c.mad, &mut p).expect("encode");
        pkts.push(p);
    }
    w.flush().expect("flush");
    drop(w);

    // Our own reader gets every MAD back, CRCs valid.
    let file = std::fs::read(&path).expect("read pcap");
    let back: Vec<_> = PcapReader::new(&file[..])
        .expect("pcap header")
        .map(|r| r.expect("record"))
        .collect();
    assert_eq!(back.len(), cases.len());
    for (r, c) in back.iter().zip(&cases) {
        assert_eq!((&r.mad, &r.meta), (&c.mad, &c.meta), "{}", c.name);
        assert!(r.crc.all_valid(), "{}", c.name);
    }

    let json = run_tshark(&path);
    let jp = json.as_array().expect("tshark JSON is an array of packets");
    assert_eq!(jp.len(), cases.len(), "tshark saw every packet");
    let mut report = Report::default();
    for ((c, p), pkt) in cases.iter_mut().zip(jp).zip(&pkts) {
        if std::env::var_os("TSHARK_INTEROP_DUMP").is_some() {
            let f = dir.join(format!("{}.json", c.name.replace(' ', "_")));
            std::fs::write(f, serde_json::to_string_pretty(p).expect("json")).expect("write dump");
        }
        check_case(c, p, pkt, &mut report);
    }
    if std::env::var_os("TSHARK_INTEROP_DUMP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }

    println!(
        "tshark interop: {} MADs, {} leaves compared over {} distinct tshark fields; \
         {} through QUIRKS, {} unchecked, {} optional CRC leaves not shown",
        cases.len(),
        report.compared,
        report.compared_by_key.len(),
        report.quirks.values().sum::<usize>(),
        report.unchecked.values().sum::<usize>(),
        report.optional_missing,
    );
    for (k, why) in QUIRKS {
        println!(
            "  quirk {k}: {why} ({} leaves)",
            report.quirks.get(*k).copied().unwrap_or(0)
        );
    }
    for (k, why) in UNCHECKED {
        println!(
            "  unchecked {k}: {why} ({} leaves)",
            report.unchecked.get(*k).copied().unwrap_or(0)
        );
    }
    for f in &report.failures {
        println!("FAIL {f}");
    }
    assert!(
        report.failures.is_empty(),
        "{} mismatches (see above)",
        report.failures.len()
    );
    // Every quirk and every unchecked entry is still needed.
    for (k, _) in QUIRKS {
        assert!(
            report.quirks.contains_key(*k),
            "QUIRKS entry {k} no longer used"
        );
    }
    for (k, _) in UNCHECKED {
        assert!(
            report.unchecked.contains_key(*k),
            "UNCHECKED entry {k} no longer used"
        );
    }
}
