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

mod layout;
mod map;
mod run;

use std::collections::BTreeMap;

use mad_core::wire::attr::{ClassPortInfo, Notice, PortCounters};
use mad_core::wire::field::Repr;
use mad_core::wire::sa_records::McMemberRecord;
use mad_core::wire::smp::DrSmpRepr;
use mad_core::wire::Error;

use layout::*;
use map::*;
use run::*;

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
