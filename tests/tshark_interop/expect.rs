//! Values, expectations on tshark's leaves, the MAD builders and the
//! expectations for the MAD headers.

use std::collections::{BTreeMap, VecDeque};

use mad_core::pcap::{packet, Direction, PacketMeta};
use mad_core::wire::field::{set_bits, FieldKind, FieldValue, Fields};
use mad_core::wire::rmpp::{
    RmppHeader, RmppStatus, RmppType, RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST,
};
use mad_core::wire::sa::SaHeader;
use mad_core::wire::smp::SmpRepr;
use mad_core::wire::{AttributeId, MadHeader, MadStatus, Method, MgmtClass, Repr};
pub(crate) use mad_testkit::Rng;

// ---------------------------------------------------------------- values

/// Clears every reserved bit range of `f` (recursing into nested structs)
/// in `buf`, whose bit 0 is `base`.
pub(crate) fn zero_reserved(buf: &mut [u8], base: usize, f: &dyn Fields) {
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
pub(crate) fn varied<T: Repr + Fields + Default>(rng: &mut Rng) -> T {
    let mut b = rng.bytes(T::LEN);
    zero_reserved(&mut b, 0, &T::default());
    T::parse(&b).expect("parse of a full-length buffer")
}

/// A printable NUL-padded text field.
pub(crate) fn text<const N: usize>(s: &str) -> [u8; N] {
    let mut a = [0u8; N];
    a[..s.len()].copy_from_slice(s.as_bytes());
    a
}

// ---------------------------------------------------------- expectations

/// What tshark should show for one leaf.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Want {
    Uint(u64),
    Bytes(Vec<u8>),
    Text(String),
}

/// How a wanted value relates to our Repr.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    /// tshark's field is the same field as ours: must be equal.
    Field,
    /// tshark lays this field out differently from the IBA (see
    /// [`QUIRKS`]): compared with tshark's reading of the bytes we emitted.
    Quirk(&'static str),
    /// Shown by tshark only when its offsets end exactly at the CRCs.
    Optional,
}

#[derive(Default)]
pub(crate) struct Expect {
    /// tshark field name (or "tree path>field name") -> expected values in
    /// order of appearance, each with the name of our field and its kind.
    pub(crate) wants: BTreeMap<String, VecDeque<(Want, String, Kind)>>,
}

/// JSON subtree paths, for field names tshark uses in several places.
pub(crate) const P_BTH: &str = "infiniband/infiniband.bth_tree";
pub(crate) const P_DETH: &str = "infiniband/infiniband.deth_tree";
pub(crate) const P_MAD: &str = "infiniband/infiniband.mad_tree";
pub(crate) const P_SMPLID: &str = "infiniband/infiniband.smplid_tree";
pub(crate) const P_SMPDR: &str = "infiniband/infiniband.smpdirected_tree";
pub(crate) const P_SA: &str = "infiniband/infiniband.sa.drdlid_tree";
pub(crate) const P_SA_REC: &str = "infiniband/infiniband.sa.drdlid_tree/infiniband.sa.drdlid_tree";
pub(crate) const P_PC: &str = "infiniband/infiniband.portcounters";
pub(crate) const P_PCX: &str = "infiniband/infiniband.portcounters_ext";

pub(crate) fn at(path: &str, key: &str) -> String {
    format!("{path}>{key}")
}

/// Field `path` (dot-separated through nested structs) of `f`.
pub(crate) fn lookup<'a>(f: &'a dyn Fields, path: &str) -> FieldValue<'a> {
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

pub(crate) fn lookup_uint(f: &dyn Fields, path: &str) -> u64 {
    match lookup(f, path) {
        FieldValue::Uint(v) => v,
        other => panic!("{}.{path} is not an integer: {other:?}", f.struct_name()),
    }
}

impl Expect {
    pub(crate) fn push_kind(&mut self, key: &str, want: Want, ours: impl Into<String>, kind: Kind) {
        self.wants
            .entry(key.to_string())
            .or_default()
            .push_back((want, ours.into(), kind));
    }
    pub(crate) fn push(&mut self, key: &str, want: Want, ours: impl Into<String>) {
        self.push_kind(key, want, ours, Kind::Field);
    }
    pub(crate) fn uint(&mut self, key: &str, v: u64, ours: impl Into<String>) {
        self.push(key, Want::Uint(v), ours);
    }
    pub(crate) fn bytes(&mut self, key: &str, v: &[u8], ours: impl Into<String>) {
        self.push(key, Want::Bytes(v.to_vec()), ours);
    }
    pub(crate) fn text(&mut self, key: &str, raw: &[u8], ours: impl Into<String>) {
        let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
        let t = String::from_utf8(raw[..end].to_vec()).expect("test strings are UTF-8");
        self.push(key, Want::Text(t), ours);
    }
    /// Zero-filled reserved bytes: our reserved field(s) `ours` are zero.
    pub(crate) fn reserved(&mut self, key: &str, len: usize, ours: impl Into<String>) {
        self.push(key, Want::Bytes(vec![0; len]), ours);
    }
    /// A field tshark decodes differently from the IBA layout; `v` is what
    /// tshark's layout reads from the bytes we emitted.
    pub(crate) fn quirk(&mut self, key: &str, v: Want, ours: impl Into<String>, why: &'static str) {
        assert!(
            QUIRKS.iter().any(|(k, _)| key.ends_with(k)),
            "quirk {key} must be listed in QUIRKS"
        );
        self.push_kind(key, v, ours, Kind::Quirk(why));
    }
    /// Our field `path` of `obj`, transformed by `xf`; arrays give one
    /// expected value per element, in order.
    pub(crate) fn field_xf(&mut self, obj: &dyn Fields, key: &str, path: &str, xf: fn(u64) -> u64) {
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
    pub(crate) fn field(&mut self, obj: &dyn Fields, key: &str, path: &str) {
        self.field_xf(obj, key, path, |v| v);
    }
    /// A table of (tshark field, our field path), optionally under a
    /// nested-struct prefix (`"node_info."`).
    pub(crate) fn fields(&mut self, obj: &dyn Fields, prefix: &str, table: &[(&str, &str)]) {
        for (key, path) in table {
            self.field(obj, key, &format!("{prefix}{path}"));
        }
    }
}

/// Fields where tshark 4.0's layout differs from the IBA's (and from
/// ours). They are still compared — with tshark's reading of our bytes —
/// and listed in the report.
pub(crate) const QUIRKS: &[(&str, &str)] = &[
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

pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) mad: Vec<u8>,
    pub(crate) meta: PacketMeta,
    /// The IB packet around the MAD (LRH .. VCRC), as the pcap holds it.
    pub(crate) pkt: Vec<u8>,
    pub(crate) expect: Expect,
}

impl Case {
    pub(crate) fn new(name: &str, mad: Vec<u8>, slid: u16, dlid: u16, dir: Direction) -> Self {
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

pub(crate) fn header(
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
pub(crate) fn smp_lid(
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
        rng.next_u64(),
    );
    h.status = MadStatus((rng.next_u64() & 0x1C) as u16);
    SmpRepr {
        header: h,
        m_key: rng.next_u64(),
        reserved: [0; 32],
        data: d,
        reserved1: [0; 128],
    }
}

/// An SA MAD: common header, RMPP header, SA header, then `records`,
/// each padded to `stride` bytes.
pub(crate) fn sa_mad(
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
pub(crate) fn rmpp_single(rng: &mut Rng, data_len: usize) -> RmppHeader {
    RmppHeader {
        version: 1,
        rmpp_type: RmppType::DATA,
        resp_time: (rng.next_u64() % 0x1F) as u8,
        flags: RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
        status: RmppStatus(0),
        data1: 1,
        data2: (20 + data_len) as u32,
    }
}

pub(crate) fn sa_header(rng: &mut Rng, attr_offset: u16) -> SaHeader {
    SaHeader {
        sm_key: rng.next_u64(),
        attr_offset,
        reserved: 0,
        comp_mask: rng.next_u64(),
    }
}

// ------------------------------------------------ header expectations

/// The common MAD header (`infiniband.mad` subtree).
pub(crate) fn expect_mad_header(e: &mut Expect, mad: &[u8]) {
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
pub(crate) fn expect_smp_lid(e: &mut Expect, smp: &SmpRepr) {
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
pub(crate) fn expect_rmpp(e: &mut Expect, mad: &[u8]) {
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
pub(crate) fn expect_sa_header(e: &mut Expect, mad: &[u8]) {
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
