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

mod attrs;
mod expect;
mod gs;
mod sa;
mod smp;

#[path = "../support/tshark.rs"]
mod tshark;
use tshark::run_tshark;

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use mad_core::pcap::{crc, packet, PacketMeta, PcapReader, PcapWriter, Timestamp};

use expect::*;
use gs::*;
use sa::*;
use smp::*;

fn cases() -> Vec<Case> {
    let mut rng = Rng::new(0x5EED_1234_ABCD_0001);
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
