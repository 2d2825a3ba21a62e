//! A second, independent encoder agrees with us: rdma-core's libibmad.
//!
//! `tests/c/libibmad_fields.c` is compiled against the installed libibmad
//! (Debian `libibmad-dev`) and writes every field libibmad's field table
//! knows, with libibmad's own setters, into zeroed 256-byte MADs. For each
//! field it reports the bits the setter really touched (found by probing
//! libibmad, so independent of its internal BITSOFFS convention) and the
//! value written; then the whole buffer.
//!
//! For every buffer whose groups have a `Repr` here, the tests check that
//! - each libibmad field maps to our field(s) with the same bits (by label:
//!   our labels are libibmad's print names, with the explicit exceptions in
//!   [`EXPLICIT`]); an unmapped field in a covered group fails;
//! - our parser reads libibmad's bytes back to libibmad's values;
//! - our structures built from those values emit exactly libibmad's bytes.
//!
//! libibmad's own bugs are not papered over: [`EXPLICIT`] marks misplaced
//! fields as [`Map::Misplaced`], `libibmad_raw_offset_fields_land_where_documented`
//! pins where they land, and
//! `libibmad_setter_spills_over_wide_values_where_our_emit_refuses_them`
//! pins which setters corrupt a neighbour when given a too-wide value.
//!
//! Groups libibmad knows but madstack has no `Repr` for (Congestion Control,
//! PerfMgt attributes beyond PortCounters/PortCountersExtended, ...) are
//! still encoded by the C program and listed, with the reason, by
//! `every_libibmad_field_of_a_covered_group_maps_to_our_field_at_the_same_bits`
//! (run with `--nocapture` for the per-group counts).
//!
//! Needs a C compiler (`cc`, Debian `gcc`) and `libibmad-dev`; without them
//! the tests fail (they never skip) with a message naming the package.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use mad_core::wire::attr::{
    ClassPortInfo, GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo, Notice,
    PortCounters, PortCountersExt, PortInfo, SlToVlTable, SmInfo, SwitchInfo, VlArbTable,
};
use mad_core::wire::field::{set_bits, FieldKind, FieldValue, Fields, Repr};
use mad_core::wire::rmpp::RmppHeader;
use mad_core::wire::sa::SaHeader;
use mad_core::wire::sa_records::{
    GuidInfoRecord, LftRecord, McMemberRecord, MftRecord, NodeRecord, PathRecord, PortInfoRecord,
    ServiceRecord, Sl2VlRecord, SmInfoRecord, SwitchInfoRecord, VlArbRecord,
};
use mad_core::wire::smp::{DrSmpRepr, SmpRepr};
use mad_core::wire::vendor::VendorHeader;
use mad_core::wire::{Error, MadHeader};

// ------------------------------------------------------------------ running

const MAD_SIZE: usize = 256;

/// The parsed output of the C program.
struct Run {
    buffers: Vec<Buffer>,
    quirks: Vec<String>,
    /// (group, enum name, bits changed outside the field) for u32 fields
    /// whose setter does not mask an over-wide value.
    spills: BTreeSet<(String, String, usize)>,
}

/// One libibmad-encoded MAD.
struct Buffer {
    name: String,
    round: u32,
    /// Group name → the byte offset the C program used as its base.
    parts: Vec<(String, usize)>,
    fields: Vec<LibField>,
    bytes: Vec<u8>,
}

/// One field as libibmad wrote it.
#[derive(Clone)]
struct LibField {
    group: String,
    /// `IB_..._F` enum name.
    ename: String,
    /// `mad_field_name()`.
    print: String,
    /// First bit in the MAD, MSB-first (probed).
    abs_off: usize,
    len: usize,
    /// The value written, as `len` bits MSB-first.
    value: Vec<bool>,
}

/// Why the C program could not be run.
enum RunError {
    /// The machine lacks libibmad-dev or a C compiler.
    Setup(String),
    /// Anything else (a bug here or in the C program).
    Other(String),
}

fn run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| match build_and_run() {
        Ok(r) => r,
        Err(RunError::Other(e)) => panic!("libibmad interop: {e}"),
        Err(RunError::Setup(e)) => panic!(
            "libibmad interop: {e}\n\
             This test needs rdma-core's libibmad headers and library (Debian package \
             `libibmad-dev`) and a C compiler (`cc`, Debian package `gcc`): \
             `apt-get install libibmad-dev gcc`. It fails rather than skips{}.",
            if std::env::var("CI").as_deref() == Ok("true") {
                " (CI=true)"
            } else {
                ""
            }
        ),
    })
}

fn build_and_run() -> Result<Run, RunError> {
    let header = PathBuf::from("/usr/include/infiniband/mad.h");
    if !header.exists() {
        return Err(RunError::Setup(format!(
            "{} not found: libibmad-dev is not installed",
            header.display()
        )));
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/libibmad_fields.c");
    // One executable per test process, so concurrent runs cannot race.
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("libibmad_fields-{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(["-libmad", "-libumad"])
        .output()
        .map_err(|e| RunError::Setup(format!("cannot run the C compiler `{cc}`: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let msg = format!("compiling {} with `{cc}` failed:\n{stderr}", src.display());
        // A missing library shows up as a link error.
        return Err(
            if stderr.contains("-libmad") || stderr.contains("-libumad") {
                RunError::Setup(msg)
            } else {
                RunError::Other(msg)
            },
        );
    }
    let out = Command::new(&exe).output();
    // Best effort: the result is already in `out`.
    let _ = std::fs::remove_file(&exe);
    let out = out.map_err(|e| RunError::Other(format!("cannot run {}: {e}", exe.display())))?;
    if !out.status.success() {
        return Err(RunError::Other(format!(
            "{} failed ({}):\n{}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    parse_output(&String::from_utf8_lossy(&out.stdout)).map_err(RunError::Other)
}

fn hex_bytes(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd hex string {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("{s:?}: {e}")))
        .collect()
}

fn parse_output(text: &str) -> Result<Run, String> {
    let mut buffers = Vec::new();
    let mut quirks = Vec::new();
    let mut spills = BTreeSet::new();
    let mut cur: Option<Buffer> = None;
    let mut parts_base: BTreeMap<String, usize> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let w: Vec<&str> = line.split(' ').collect();
        let bad = || format!("line {}: cannot parse {line:?}", n + 1);
        match w[0] {
            "fields" => {}
            "buffer" => {
                parts_base.clear();
                cur = Some(Buffer {
                    name: w.get(1).ok_or_else(bad)?.to_string(),
                    round: w.get(2).ok_or_else(bad)?.parse().map_err(|_| bad())?,
                    parts: Vec::new(),
                    fields: Vec::new(),
                    bytes: Vec::new(),
                });
            }
            "part" => {
                let b = cur.as_mut().ok_or_else(bad)?;
                let base: usize = w.get(2).ok_or_else(bad)?.parse().map_err(|_| bad())?;
                b.parts.push((w[1].to_string(), base));
                parts_base.insert(w[1].to_string(), base);
            }
            "field" => {
                if w.len() != 8 {
                    return Err(bad());
                }
                let b = cur.as_mut().ok_or_else(bad)?;
                let base = *parts_base.get(w[1]).ok_or_else(bad)?;
                let off: usize = w[5].parse().map_err(|_| bad())?;
                let len: usize = w[6].parse().map_err(|_| bad())?;
                let value = match w[4] {
                    "u32" | "u64" => {
                        let v = u64::from_str_radix(w[7].trim_start_matches("0x"), 16)
                            .map_err(|_| bad())?;
                        int_bits(v, len)
                    }
                    "arr" => bytes_bits(&hex_bytes(w[7])?),
                    _ => return Err(bad()),
                };
                if value.len() != len {
                    return Err(format!("line {}: value is not {len} bits wide", n + 1));
                }
                b.fields.push(LibField {
                    group: w[1].to_string(),
                    ename: w[2].to_string(),
                    print: w[3].to_string(),
                    abs_off: base * 8 + off,
                    len,
                    value,
                });
            }
            "bytes" => {
                let b = cur.as_mut().ok_or_else(bad)?;
                b.bytes = hex_bytes(w.get(1).ok_or_else(bad)?)?;
                if b.bytes.len() != MAD_SIZE {
                    return Err(bad());
                }
            }
            "end" => buffers.push(cur.take().ok_or_else(bad)?),
            "quirk" => quirks.push(line.to_string()),
            "spill" => {
                let n = w.get(3).ok_or_else(bad)?.parse().map_err(|_| bad())?;
                spills.insert((w[1].to_string(), w[2].to_string(), n));
            }
            _ => return Err(bad()),
        }
    }
    if buffers.is_empty() {
        return Err("the C program printed no buffers".into());
    }
    Ok(Run {
        buffers,
        quirks,
        spills,
    })
}

// ------------------------------------------------------------------ bits

fn int_bits(v: u64, len: usize) -> Vec<bool> {
    (0..len)
        .rev()
        .map(|i| i < 64 && (v >> i) & 1 == 1)
        .collect()
}

fn bytes_bits(b: &[u8]) -> Vec<bool> {
    b.iter()
        .flat_map(|byte| int_bits(u64::from(*byte), 8))
        .collect()
}

fn show_bits(bits: &[bool]) -> String {
    if bits.len() <= 64 {
        let v = bits.iter().fold(0u64, |a, b| (a << 1) | u64::from(*b));
        format!("{v:#x}")
    } else {
        let bytes: Vec<String> = bits
            .chunks(8)
            .map(|c| format!("{:02x}", c.iter().fold(0u8, |a, b| (a << 1) | u8::from(*b))))
            .collect();
        bytes.concat()
    }
}

/// Writes `bits` at bit `pos` of `buf` with mad-core's own bit writer.
fn write_bits(buf: &mut [u8], pos: usize, bits: &[bool]) {
    for (i, b) in bits.iter().enumerate() {
        set_bits(buf, pos + i, 1, u64::from(*b));
    }
}

// ------------------------------------------------------------------ our types

/// A type-erased `Repr::parse`.
type ParseFn = fn(&[u8]) -> Result<Box<dyn Fields>, Error>;

/// One of our `Repr`s, type-erased.
#[derive(Clone, Copy)]
struct Ty {
    name: &'static str,
    len: usize,
    parse: ParseFn,
    /// Parses `src` and emits the result into `dst`.
    reemit: fn(&[u8], &mut [u8]) -> Result<(), Error>,
}

macro_rules! ty {
    ($t:ty) => {
        Ty {
            name: <$t as Repr>::NAME,
            len: <$t as Repr>::LEN,
            parse: |b| <$t as Repr>::parse(b).map(|v| Box::new(v) as Box<dyn Fields>),
            reemit: |src, dst| <$t as Repr>::parse(src)?.emit(dst),
        }
    };
}

/// What a libibmad field group (the C program's `part` name) is on our side.
enum Target {
    /// Our `Repr` for it, starting at this byte of the MAD.
    Ours(Ty, usize),
    /// Nothing here to compare with, and why.
    NotOurs(&'static str),
}

fn target(group: &str) -> Option<Target> {
    use Target::*;
    Some(match group {
        "MadHeader" => Ours(ty!(MadHeader), 0),
        "RmppHeader" => Ours(ty!(RmppHeader), 24),
        "SaHeader" => Ours(ty!(SaHeader), 36),
        "NodeInfo" => Ours(ty!(NodeInfo), 64),
        "NodeDesc" => Ours(ty!(NodeDescription), 64),
        "PortInfo" => Ours(ty!(PortInfo), 64),
        "SwitchInfo" => Ours(ty!(SwitchInfo), 64),
        "GuidInfo" => Ours(ty!(GuidInfo), 64),
        "SlToVlTable" => Ours(ty!(SlToVlTable), 64),
        "VlArbTable" => Ours(ty!(VlArbTable), 64),
        "LinearFwdTable" => Ours(ty!(LinearFwdTable), 64),
        "MulticastFwdTable" => Ours(ty!(MulticastFwdTable), 64),
        "SmInfo" => Ours(ty!(SmInfo), 64),
        "Notice" => Ours(ty!(Notice), 64),
        "ClassPortInfo" => Ours(ty!(ClassPortInfo), 64),
        "PortCounters" => Ours(ty!(PortCounters), 64),
        "PortCountersExt" => Ours(ty!(PortCountersExt), 64),
        "NodeRecord" => Ours(ty!(NodeRecord), 56),
        "PathRecord" => Ours(ty!(PathRecord), 56),
        "McMemberRecord" => Ours(ty!(McMemberRecord), 56),
        "ServiceRecord" => Ours(ty!(ServiceRecord), 56),
        "GuidInfoRecord" => Ours(ty!(GuidInfoRecord), 56),
        "PortInfoRecord" => Ours(ty!(PortInfoRecord), 56),
        "SwitchInfoRecord" => Ours(ty!(SwitchInfoRecord), 56),
        "SmInfoRecord" => Ours(ty!(SmInfoRecord), 56),
        "LftRecord" => Ours(ty!(LftRecord), 56),
        "MftRecord" => Ours(ty!(MftRecord), 56),
        "Sl2VlRecord" => Ours(ty!(Sl2VlRecord), 56),
        "VlArbRecord" => Ours(ty!(VlArbRecord), 56),

        "SmpHeader" => Ours(ty!(SmpRepr), 0),
        "DrSmpHeader" => Ours(ty!(DrSmpRepr), 0),
        "Vendor2Header" => Ours(ty!(VendorHeader), 24),
        "SaData" | "GsData" | "Vendor2Data" => NotOurs(
            "libibmad's raw payload blob (SaData = MAD bytes 56-255, GsData = 64-255, \
             Vendor2Data = 40-255); the records and attributes inside are compared one by one",
        ),
        "CcHeader"
        | "CongestionInfo"
        | "CongestionKeyInfo"
        | "CongestionLogSwitch"
        | "CongestionLogEventSwitch"
        | "CongestionLogCa"
        | "CongestionLogEventCa"
        | "SwitchCongestionSetting"
        | "SwitchPortCongestionSettingElement"
        | "CaCongestionSetting"
        | "CaCongestionEntry"
        | "CongestionControlTable"
        | "CongestionControlTableEntry"
        | "Timestamp" => NotOurs("Congestion Control class (0x21): not a class madstack speaks"),
        "PortXmitDataSL"
        | "PortRcvDataSL"
        | "PortXmitDiscardDetails"
        | "PortRcvErrorDetails"
        | "PortSamplesControl"
        | "PortSamplesResult"
        | "PortExtendedSpeedsCounters"
        | "PortExtendedSpeedsCountersRsfec"
        | "PortOpRcvCounters"
        | "PortFlowCtlCounters"
        | "PortVLOpPackets"
        | "PortVLOpData"
        | "PortVLXmitFlowCtlUpdateErrors"
        | "PortVLXmitWaitCounters"
        | "SwPortVLCongestion"
        | "PortRcvConCtrl"
        | "PortSLRcvFECN"
        | "PortSLRcvBECN"
        | "PortXmitConCtrl"
        | "PortVLXmitTimeCong" => NotOurs(
            "PerfMgt attribute outside issue 2 (only PortCounters and PortCountersExtended)",
        ),
        "MlnxExtPortInfo" | "PortInfoExtended" => {
            NotOurs("SMP attribute outside issue 2 (vendor ExtendedPortInfo / PortInfoExtended)")
        }
        "MultiPathRecord" => NotOurs("SA MultiPathRecord is outside issue 2"),
        _ => return None,
    })
}

// ------------------------------------------------------------------ mapping

/// How one libibmad field maps onto our fields.
#[derive(Clone, Copy, Debug)]
enum Map {
    /// Exactly our field with this label, same bits.
    Exact(&'static str),
    /// A sub-range of our field with this label (an element of an array,
    /// bytes inside a blob).
    Within(&'static str),
    /// Exactly these consecutive fields of ours.
    Span(&'static [&'static str]),
    /// libibmad declares the field with a raw offset its setter swizzles:
    /// it lands exactly on our field `lands_on`, while our field `ours`
    /// (the IBA position) is elsewhere.
    Misplaced {
        lands_on: &'static str,
        ours: &'static str,
    },
}

/// Where a libibmad field's print name is not our label (or a field is not
/// one-to-one). Everything else maps by print name, exact bits.
const EXPLICIT: &[(&str, &str, Map)] = &[
    // Common MAD header: libibmad prefixes "Mad"; we print the short names.
    ("MadHeader", "IB_MAD_METHOD_F", Map::Exact("Method")),
    ("MadHeader", "IB_MAD_RESPONSE_F", Map::Exact("IsResponse")),
    ("MadHeader", "IB_MAD_CLASSVER_F", Map::Exact("ClassVers")),
    ("MadHeader", "IB_MAD_MGMTCLASS_F", Map::Exact("MgmtClass")),
    ("MadHeader", "IB_MAD_BASEVER_F", Map::Exact("BaseVers")),
    ("MadHeader", "IB_MAD_STATUS_F", Map::Exact("Status")),
    ("MadHeader", "IB_MAD_TRID_F", Map::Exact("TID")),
    ("MadHeader", "IB_MAD_ATTRID_F", Map::Exact("AttrId")),
    ("MadHeader", "IB_MAD_ATTRMOD_F", Map::Exact("AttrMod")),
    // RMPP data words: one field each on our side, libibmad has aliases.
    ("RmppHeader", "IB_SA_RMPP_D1_F", Map::Exact("RmppSegNum")),
    ("RmppHeader", "IB_SA_RMPP_D2_F", Map::Exact("RmppPayload")),
    (
        "RmppHeader",
        "IB_SA_RMPP_NEWWIN_F",
        Map::Exact("RmppPayload"),
    ),
    // Tables: libibmad names single entries of our arrays.
    ("GuidInfo", "IB_GI_GUID0_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID1_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID2_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID3_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID4_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID5_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID6_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID7_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GUID_GUID0_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID0_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID1_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID2_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID3_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID4_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID5_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID6_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID7_F", Map::Within("GUID")),
    // Notice: our labels name both the generic and the vendor meaning.
    (
        "Notice",
        "IB_NOTICE_PRODUCER_F",
        Map::Exact("NoticeProducerType/VendorID"),
    ),
    (
        "Notice",
        "IB_NOTICE_TRAP_NUMBER_F",
        Map::Exact("NoticeTrapNumber/DeviceID"),
    ),
    // Trap-specific words inside DataDetails.
    (
        "Notice",
        "IB_NOTICE_DATA_LID_F",
        Map::Within("NoticeDataDetails"),
    ),
    (
        "Notice",
        "IB_NOTICE_DATA_144_LID_F",
        Map::Within("NoticeDataDetails"),
    ),
    (
        "Notice",
        "IB_NOTICE_DATA_144_CAPMASK_F",
        Map::Within("NoticeDataDetails"),
    ),
    // PortCounters.QP1Dropped: libibmad's {160, 16} raw offset is swizzled by
    // its setter onto bytes 22-23, i.e. VL15Dropped (ATTRIBUTES.md §9).
    (
        "PortCounters",
        "IB_PC_QP1_DROP_F",
        Map::Misplaced {
            lands_on: "VL15Dropped",
            ours: "QP1Dropped",
        },
    ),
    // The generic GID halves, applied to PathRecord.DGID by the C program.
    ("PathRecord", "IB_GID_PREFIX_F", Map::Within("PathRecDGid")),
    ("PathRecord", "IB_GID_GUID_F", Map::Within("PathRecDGid")),
    // ServiceData is four typed arrays here, one blob in libibmad.
    (
        "ServiceRecord",
        "IB_SA_SR_DATA_F",
        Map::Span(&[
            "ServiceData8",
            "ServiceData16",
            "ServiceData32",
            "ServiceData64",
        ]),
    ),
    // ATS (the SM's address-translation service record) inside ServiceData.
    (
        "ServiceRecord",
        "IB_ATS_SM_NODE_ADDR_F",
        Map::Within("ServiceData8"),
    ),
    (
        "ServiceRecord",
        "IB_ATS_SM_MAGIC_KEY_F",
        Map::Within("ServiceData16"),
    ),
    (
        "ServiceRecord",
        "IB_ATS_SM_NODE_TYPE_F",
        Map::Within("ServiceData16"),
    ),
    (
        "ServiceRecord",
        "IB_ATS_SM_NODE_NAME_F",
        Map::Span(&["ServiceData32", "ServiceData64"]),
    ),
];

/// Distinct libibmad fields compared per group. Pinned so that coverage
/// cannot shrink silently.
const EXPECTED_COUNTS: &[(&str, usize)] = &[
    ("MadHeader", 9),
    ("SmpHeader", 1),
    ("DrSmpHeader", 17),
    ("Vendor2Header", 1),
    ("RmppHeader", 10),
    ("SaHeader", 3),
    ("NodeInfo", 12),
    ("NodeDesc", 1),
    ("PortInfo", 51),
    ("SwitchInfo", 18),
    ("GuidInfo", 9),
    ("SlToVlTable", 1),
    ("VlArbTable", 1),
    ("LinearFwdTable", 1),
    ("MulticastFwdTable", 1),
    ("SmInfo", 5),
    ("Notice", 11),
    ("ClassPortInfo", 22),
    ("PortCounters", 21),
    ("PortCountersExt", 25),
    ("NodeRecord", 14),
    ("PathRecord", 8),
    ("McMemberRecord", 12),
    ("ServiceRecord", 11),
    ("GuidInfoRecord", 10),
    ("PortInfoRecord", 51),
    ("SwitchInfoRecord", 18),
    ("SmInfoRecord", 5),
    ("LftRecord", 1),
    ("MftRecord", 1),
    ("Sl2VlRecord", 1),
    ("VlArbRecord", 1),
];

fn mapping(group: &str, lf: &LibField) -> Map {
    EXPLICIT
        .iter()
        .find(|(g, e, _)| *g == group && *e == lf.ename)
        .map(|(_, _, m)| *m)
        .unwrap_or_else(|| Map::Exact(leak(lf.print.clone())))
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

// ------------------------------------------------------------------ our leaves

/// One non-nested field of ours, with its bits, relative to the struct.
struct Leaf {
    label: Option<&'static str>,
    path: String,
    off: usize,
    len: usize,
    value: Vec<bool>,
}

fn leaves(f: &dyn Fields, base: usize, prefix: &str, out: &mut Vec<Leaf>) {
    for (i, d) in f.field_descs().iter().enumerate() {
        let path = format!("{prefix}{}", d.name);
        let off = base + d.bit_offset as usize;
        match f.field_value(i) {
            Some(FieldValue::Nested(n)) => leaves(n, off, &format!("{path}."), out),
            Some(v) => {
                let value = match (v, d.kind) {
                    (FieldValue::Uint(x), _) => int_bits(x, d.bit_len as usize),
                    (FieldValue::Bytes(b), _) => bytes_bits(b),
                    (FieldValue::Array(xs), FieldKind::Array { elem_bits, .. }) => xs
                        .iter()
                        .flat_map(|x| int_bits(*x, elem_bits as usize))
                        .collect(),
                    (other, kind) => panic!("{path}: value {other:?} does not fit kind {kind:?}"),
                };
                assert_eq!(value.len(), d.bit_len as usize, "{path}: value width");
                out.push(Leaf {
                    label: d.label,
                    path,
                    off,
                    len: d.bit_len as usize,
                    value,
                });
            }
            None => panic!("{path}: field_value({i}) is None"),
        }
    }
}

/// Our leaves overlapping `[off, off + len)`, and the bits they hold there.
fn overlap(ls: &[Leaf], off: usize, len: usize) -> (Vec<&Leaf>, Vec<bool>) {
    let end = off + len;
    let hit: Vec<&Leaf> = ls
        .iter()
        .filter(|l| l.off < end && off < l.off + l.len)
        .collect();
    let mut bits = Vec::with_capacity(len);
    for l in &hit {
        let a = off.max(l.off);
        let b = end.min(l.off + l.len);
        bits.extend_from_slice(&l.value[a - l.off..b - l.off]);
    }
    (hit, bits)
}

/// Checks that `map` holds for a libibmad field at `[off, off + len)` of our
/// struct (layout agreement). Returns a description of the disagreement.
fn check_layout(map: Map, ls: &[Leaf], off: usize, len: usize) -> Result<(), String> {
    let (hit, _) = overlap(ls, off, len);
    let found = || {
        hit.iter()
            .map(|l| {
                format!(
                    "{} {:?} [{}, {}]",
                    l.path,
                    l.label.unwrap_or("_"),
                    l.off,
                    l.len
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let covered: usize = hit
        .iter()
        .map(|l| (off + len).min(l.off + l.len) - off.max(l.off))
        .sum();
    if covered != len {
        return Err(format!(
            "bits [{off}, {len}] are not inside our structure (found: {})",
            found()
        ));
    }
    match map {
        Map::Exact(label) => match hit.as_slice() {
            [l] if l.label == Some(label) && l.off == off && l.len == len => Ok(()),
            _ => {
                let ours: Vec<String> = ls
                    .iter()
                    .filter(|l| l.label == Some(label))
                    .map(|l| format!("{} [{}, {}]", l.path, l.off, l.len))
                    .collect();
                Err(format!(
                    "expected our field labelled {label:?} at bits [{off}, {len}]; \
                     those bits hold: {}; our {label:?} is at: {}",
                    found(),
                    if ours.is_empty() {
                        "nowhere (no such label: add a mapping)".to_string()
                    } else {
                        ours.join(", ")
                    }
                ))
            }
        },
        Map::Within(label) => match hit.as_slice() {
            [l] if l.label == Some(label) => Ok(()),
            _ => Err(format!(
                "expected bits [{off}, {len}] inside our {label:?}; they hold: {}",
                found()
            )),
        },
        Map::Span(labels) => {
            let got: Vec<Option<&str>> = hit.iter().map(|l| l.label).collect();
            let want: Vec<Option<&str>> = labels.iter().map(|l| Some(*l)).collect();
            let first_ok = hit.first().is_some_and(|l| l.off == off);
            let last_ok = hit.last().is_some_and(|l| l.off + l.len == off + len);
            if got == want && first_ok && last_ok {
                Ok(())
            } else {
                Err(format!(
                    "expected bits [{off}, {len}] to be exactly our {labels:?}; they hold: {}",
                    found()
                ))
            }
        }
        Map::Misplaced { lands_on, ours } => {
            check_layout(Map::Exact(lands_on), ls, off, len)?;
            let ours_at: Vec<(usize, usize)> = ls
                .iter()
                .filter(|l| l.label == Some(ours))
                .map(|l| (l.off, l.len))
                .collect();
            match ours_at.as_slice() {
                [(o, l)] if (*o, *l) != (off, len) => Ok(()),
                _ => Err(format!(
                    "known libibmad misplacement no longer applies: our {ours:?} at {ours_at:?}, \
                     libibmad writes [{off}, {len}]"
                )),
            }
        }
    }
}

// ------------------------------------------------------------------ checks

/// Result of comparing one buffer.
#[derive(Default)]
struct Report {
    /// group → distinct libibmad enum names compared.
    compared: BTreeMap<String, BTreeSet<String>>,
    /// group → why it is not compared.
    skipped: BTreeMap<String, &'static str>,
    /// Layout does not depend on the round: one entry per field.
    layout_errors: BTreeSet<String>,
    value_errors: Vec<String>,
    emit_errors: Vec<String>,
    unknown_groups: BTreeSet<String>,
    buffers_compared: usize,
    fields_compared: usize,
}

fn compare_all() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        let run = run();
        let mut rep = Report::default();
        for b in &run.buffers {
            compare_buffer(b, &mut rep);
        }
        rep
    })
}

fn compare_buffer(b: &Buffer, rep: &mut Report) {
    let tag = format!("{} (round {})", b.name, b.round);
    // Every part of the buffer must be ours, or the buffer is skipped.
    let mut ours: Vec<(&str, Ty, usize)> = Vec::new();
    for (g, _) in &b.parts {
        match target(g) {
            Some(Target::Ours(ty, base)) => ours.push((g, ty, base)),
            Some(Target::NotOurs(why)) => {
                rep.skipped.insert(g.clone(), why);
            }
            None => {
                rep.unknown_groups.insert(g.clone());
            }
        }
    }
    if ours.len() != b.parts.len() {
        return;
    }
    rep.buffers_compared += 1;

    // Parse libibmad's bytes with our types.
    let mut parsed: BTreeMap<&str, Vec<Leaf>> = BTreeMap::new();
    for (g, ty, base) in &ours {
        match (ty.parse)(&b.bytes[*base..]) {
            Ok(v) => {
                let mut ls = Vec::new();
                leaves(v.as_ref(), 0, "", &mut ls);
                parsed.insert(g, ls);
            }
            Err(e) => rep.value_errors.push(format!(
                "{tag}: our {} refuses libibmad's bytes: {e}",
                ty.name
            )),
        }
    }

    // Per field: layout, value, and our buffer built from the values.
    let mut built = vec![0u8; MAD_SIZE];
    for lf in &b.fields {
        let Some((_, ty, base)) = ours.iter().find(|(g, _, _)| *g == lf.group) else {
            continue;
        };
        let Some(ls) = parsed.get(lf.group.as_str()) else {
            continue;
        };
        let what = format!(
            "{}.{} ({}) in our {}",
            lf.group, lf.ename, lf.print, ty.name
        );
        let Some(off) = lf.abs_off.checked_sub(base * 8) else {
            rep.layout_errors
                .insert(format!("{what}: starts before our structure"));
            continue;
        };
        if off + lf.len > ty.len * 8 {
            rep.layout_errors.insert(format!(
                "{what}: bits [{off}, {}] end beyond our {} bytes",
                lf.len, ty.len
            ));
            continue;
        }
        let map = mapping(&lf.group, lf);
        if let Err(e) = check_layout(map, ls, off, lf.len) {
            rep.layout_errors.insert(format!("{what}: {e}"));
            continue;
        }
        let (hit, got) = overlap(ls, off, lf.len);
        if got != lf.value {
            rep.value_errors.push(format!(
                "{tag}: {what}: libibmad wrote {} but our parser reads {} (from {})",
                show_bits(&lf.value),
                show_bits(&got),
                hit.iter()
                    .map(|l| l.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        // Our structure with this value: the value's bits at our fields'
        // positions.
        for l in &hit {
            let a = off.max(l.off);
            let e = (off + lf.len).min(l.off + l.len);
            write_bits(&mut built, base * 8 + a, &lf.value[a - off..e - off]);
        }
        rep.compared
            .entry(lf.group.clone())
            .or_default()
            .insert(lf.ename.clone());
        rep.fields_compared += 1;
    }

    // Parse the structures holding those values and emit them.
    let mut emitted = vec![0u8; MAD_SIZE];
    for (_, ty, base) in &ours {
        if let Err(e) = (ty.reemit)(&built[*base..], &mut emitted[*base..]) {
            rep.emit_errors
                .push(format!("{tag}: our {} failed to emit: {e}", ty.name));
        }
    }
    if emitted != b.bytes {
        let diffs: Vec<String> = emitted
            .iter()
            .zip(&b.bytes)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(8)
            .map(|(i, (a, b))| format!("byte {i}: ours {a:#04x} libibmad {b:#04x}"))
            .collect();
        rep.emit_errors.push(format!(
            "{tag}: our emit differs from libibmad's bytes: {}",
            diffs.join("; ")
        ));
    }
}

fn fail_if_any(what: &str, errors: &[String]) {
    if !errors.is_empty() {
        let shown: Vec<&String> = errors.iter().take(40).collect();
        panic!(
            "{} {what}:\n{}",
            errors.len(),
            shown
                .iter()
                .map(|s| format!("  {s}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

// ------------------------------------------------------------------ tests

#[test]
fn every_libibmad_field_of_a_covered_group_maps_to_our_field_at_the_same_bits() {
    let rep = compare_all();
    assert!(
        rep.unknown_groups.is_empty(),
        "the C program emits groups this test does not know: {:?}",
        rep.unknown_groups
    );
    let layout: Vec<String> = rep.layout_errors.iter().cloned().collect();
    fail_if_any("layout disagreements", &layout);
    // Coverage is pinned per group.
    let got: BTreeMap<&str, usize> = rep
        .compared
        .iter()
        .map(|(g, s)| (g.as_str(), s.len()))
        .collect();
    let want: BTreeMap<&str, usize> = EXPECTED_COUNTS.iter().copied().collect();
    let mut summary = String::new();
    for (g, s) in &rep.compared {
        summary.push_str(&format!("  {g}: {} libibmad fields\n", s.len()));
    }
    for (g, why) in &rep.skipped {
        summary.push_str(&format!("  {g}: not compared: {why}\n"));
    }
    println!(
        "libibmad interop: {} buffers, {} field comparisons\n{summary}",
        rep.buffers_compared, rep.fields_compared
    );
    assert_eq!(got, want, "libibmad fields compared per group");
    // Every explicit mapping is exercised.
    for (g, e, _) in EXPLICIT {
        assert!(
            rep.compared.get(*g).is_some_and(|s| s.contains(*e)),
            "explicit mapping {g}.{e} was never exercised"
        );
    }
}

#[test]
fn our_parser_reads_libibmad_encoded_mads_back_to_the_same_values() {
    let rep = compare_all();
    assert!(rep.fields_compared > 0);
    fail_if_any("values read differently", &rep.value_errors);
}

#[test]
fn our_emit_of_libibmad_values_gives_libibmad_bytes() {
    let rep = compare_all();
    assert!(rep.buffers_compared > 0);
    fail_if_any("emit mismatches", &rep.emit_errors);
}

#[test]
fn libibmad_reports_no_overlapping_or_irregular_fields() {
    // The C program keeps libibmad's aliases (RmppData1/RmppSegNum, ...) and
    // misplaced fields in separate buffers; within one buffer every field
    // must read back what was written, as one contiguous run of bits.
    let run = run();
    assert!(
        run.quirks.is_empty(),
        "libibmad quirks:\n{}",
        run.quirks.join("\n")
    );
}

/// Where libibmad really writes the fields it declares with raw offsets
/// (`{off, len}` instead of `BITSOFFS(off, len)`): its setter swaps the
/// bytes of each 32-bit word (`p[3 ^ idx]`), so a 16-bit field at a word's
/// first half lands on the word's second half and vice versa.
#[test]
fn libibmad_raw_offset_fields_land_where_documented() {
    let run = run();
    let pos = |ename: &str| -> (usize, usize) {
        let f = run
            .buffers
            .iter()
            .flat_map(|b| b.fields.iter())
            .find(|f| f.ename == ename)
            .unwrap_or_else(|| panic!("{ename} not in the C program's output"));
        (f.abs_off, f.len)
    };
    let attr = 64 * 8;
    // PortCounters: IBA QP1Dropped is bytes 20-21; libibmad writes 22-23,
    // exactly VL15Dropped.
    assert_eq!(pos("IB_PC_QP1_DROP_F"), (attr + 22 * 8, 16));
    assert_eq!(pos("IB_PC_VL15_DROPPED_F"), (attr + 22 * 8, 16));
    let qp1 = PortCounters::FIELDS
        .iter()
        .find(|d| d.label == Some("QP1Dropped"))
        .map(|d| (d.bit_offset, d.bit_len));
    assert_eq!(qp1, Some((20 * 8, 16)), "our QP1Dropped is at bytes 20-21");
    // PortInfoExtended (no Repr here): declared at bytes 14, 16, 18, 20;
    // written at 12, 18, 16, 22. HDRFECModeSupported thus lands on
    // EDRFECModeEnabled (bytes 12-13).
    assert_eq!(
        pos("IB_PORT_EXT_HDR_FEC_MODE_SUPPORTED_F"),
        (attr + 12 * 8, 16)
    );
    assert_eq!(
        pos("IB_PORT_EXT_EDR_FEC_MODE_ENABLED_F"),
        (attr + 12 * 8, 16)
    );
    assert_eq!(
        pos("IB_PORT_EXT_HDR_FEC_MODE_ENABLED_F"),
        (attr + 18 * 8, 16)
    );
    assert_eq!(
        pos("IB_PORT_EXT_NDR_FEC_MODE_SUPPORTED_F"),
        (attr + 16 * 8, 16)
    );
    assert_eq!(
        pos("IB_PORT_EXT_NDR_FEC_MODE_ENABLED_F"),
        (attr + 22 * 8, 16)
    );
}

/// libibmad's `mad_set_field` masks a too-wide value only when the field
/// ends on a byte boundary; otherwise the extra high bits spill into the
/// neighbouring field (e.g. NoticeCount 0xFFFF sets NoticeToggle). Our emit
/// refuses such values instead.
#[test]
fn libibmad_setter_spills_over_wide_values_where_our_emit_refuses_them() {
    let run = run();
    let got: Vec<(&str, &str, usize)> = run
        .spills
        .iter()
        .map(|(g, e, n)| (g.as_str(), e.as_str(), *n))
        .collect();
    assert_eq!(
        got,
        [
            ("ClassPortInfo", "IB_CPI_REDIRECT_FL_F", 4),
            ("ClassPortInfo", "IB_CPI_TRAP_FL_F", 4),
            (
                "CongestionControlTableEntry",
                "IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_MULTIPLIER_F",
                2
            ),
            ("DrSmpHeader", "IB_DRSMP_STATUS_F", 1),
            ("McMemberRecord", "IB_SA_MCM_FLOW_LABEL_F", 4),
            ("Notice", "IB_NOTICE_COUNT_F", 1),
            ("PortSamplesControl", "IB_PSC_COUNTER_MASKS10TO14_F", 1),
            ("PortSamplesControl", "IB_PSC_COUNTER_MASKS1TO9_F", 5),
        ]
    );
    let overflow = |r: Result<Vec<u8>, Error>| matches!(r, Err(Error::FieldOverflow { .. }));
    assert!(overflow(
        Notice {
            count: 0xFFFF,
            ..Notice::default()
        }
        .to_vec()
    ));
    assert!(overflow(
        DrSmpRepr {
            status: 0xFFFF,
            ..DrSmpRepr::default()
        }
        .to_vec()
    ));
    assert!(overflow(
        McMemberRecord {
            flow_label: 0xFF_FFFF,
            ..McMemberRecord::default()
        }
        .to_vec()
    ));
    assert!(overflow(
        ClassPortInfo {
            redirect_fl: 0xFF_FFFF,
            ..ClassPortInfo::default()
        }
        .to_vec()
    ));
    assert!(overflow(
        ClassPortInfo {
            trap_fl: 0xFF_FFFF,
            ..ClassPortInfo::default()
        }
        .to_vec()
    ));
}
