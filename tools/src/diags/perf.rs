//! `perfquery` output (infiniband-diags 44 `perfquery.c`, libibmad
//! `mad_dump_perfcounters`): PortCounters, PortCountersExtended, the
//! `-a` aggregates over several ports, and the per-SL / per-VL / details /
//! congestion / samples-control attributes of the other options
//! ([`format_special`], [`format_samples_control`]).
//!
//! `cap_mask` is the PerfMgt ClassPortInfo CapabilityMask (host order,
//! [`ClassPortInfo::capability_mask`]); `cap_mask2` its 27-bit
//! CapabilityMask2.
//!
//! [`ClassPortInfo::capability_mask`]: mad_core::wire::attr::ClassPortInfo

use super::dump::{self, field};
use super::PortIdText;
use mad_core::wire::attr::{pm_cap, pm_cap2, PortCounters, PortCountersExt};
use mad_core::wire::field::{get_bits, set_bits};
use mad_core::wire::{FieldDesc, FieldKind, FieldValue, Fields, Repr};

/// The PortSelect perfquery uses for "all ports".
pub const ALL_PORTS: u8 = 0xFF;

fn line(s: &mut String, name: &str, value: String) {
    s.push_str(&field(name, &value));
    s.push('\n');
}

/// The PortCounters field lines (`mad_dump_perfcounters`).
///
/// Quirks kept:
/// - libibmad's `QP1Dropped` field is declared at bytes 22–23 (it lacks
///   the `BITSOFFS` conversion), so the `QP1Dropped` line shows the
///   VL15Dropped value; the real QP1Dropped (bytes 20–21) is never shown;
/// - `QP1Dropped` is printed between ExcessiveBufferOverrunErrors and
///   VL15Dropped;
/// - PortXmitWait is printed as 0 when `cap_mask` lacks
///   `PC_XMIT_WAIT_SUP` (perfquery clears it before dumping).
#[must_use]
pub fn perfcounters_fields(pc: &PortCounters, cap_mask: u16) -> String {
    let shown = PortCounters {
        // libibmad quirk: IB_PC_QP1_DROP_F reads bytes 22-23 (VL15Dropped).
        qp1_dropped: pc.vl15_dropped,
        port_xmit_wait: if cap_mask & pm_cap::PC_XMIT_WAIT_SUP != 0 {
            pc.port_xmit_wait
        } else {
            0
        },
        ..pc.clone()
    };
    fields_text(&shown, &[], COUNTER_SELECTS)
}

/// The PortCounters and PortCountersExtended labels
/// `mad_dump_perfcounters*` print in hex.
const COUNTER_SELECTS: &[&str] = &["CounterSelect", "CounterSelect2"];

/// `perfquery [LID [PORT]]`: `# Port counters: PORTID port N (CapMask:
/// 0xXX)` and the counters.
#[must_use]
pub fn format_perfcounters(
    portid: &PortIdText,
    port: i32,
    cap_mask: u16,
    pc: &PortCounters,
) -> String {
    format!(
        "# Port counters: {portid} port {port} (CapMask: 0x{cap_mask:02X})\n{}",
        perfcounters_fields(pc, cap_mask)
    )
}

/// The PortCountersExtended field lines of `perfquery -x`: PortSelect,
/// CounterSelect and the four data/packet counters always; the unicast
/// and multicast packet counters when `cap_mask` has
/// `EXT_WIDTH_SUPPORTED`; CounterSelect2 and the 64-bit error counters
/// (ending VL15Dropped, PortXmitWait, QP1Dropped — real offsets here)
/// when `cap_mask2` has `ADDL_PORT_CTRS_EXT_SUP`.
#[must_use]
pub fn perfcounters_ext_fields(pc: &PortCountersExt, cap_mask: u16, cap_mask2: u32) -> String {
    // The groups by their bit ranges in PortCountersExtended.
    let part = |bits: std::ops::Range<u32>| {
        fields_text_where(pc, |d| bits.contains(&d.bit_offset), COUNTER_SELECTS)
    };
    // PortSelect and CounterSelect (bytes 0-3), the data and packet
    // counters (bytes 8-39).
    let mut s = part(0..32) + &part(64..320);
    if cap_mask & pm_cap::EXT_WIDTH_SUPPORTED != 0 {
        // The unicast and multicast packet counters (bytes 40-71).
        s += &part(320..576);
    }
    if cap_mask2 & pm_cap2::ADDL_PORT_CTRS_EXT_SUP != 0 {
        // CounterSelect2 (bytes 4-7), then the 64-bit error counters
        // (bytes 72-183).
        s += &part(32..64);
        s += &part(576..1472);
    }
    s
}

/// `perfquery -x [LID [PORT]]`: `# Port extended counters: PORTID port N
/// (CapMask: 0xXX CapMask2: 0xXXXXXXX)` and the counters.
#[must_use]
pub fn format_perfcounters_ext(
    portid: &PortIdText,
    port: i32,
    cap_mask: u16,
    cap_mask2: u32,
    pc: &PortCountersExt,
) -> String {
    format!(
        "# Port extended counters: {portid} port {port} (CapMask: 0x{cap_mask:02X} CapMask2: 0x{cap_mask2:07X})\n{}",
        perfcounters_ext_fields(pc, cap_mask, cap_mask2)
    )
}

/// `ports` (PortCounters or PortCountersExtended) summed field by field
/// over their wire form: each counter (a labelled integer field `counter`
/// takes) summed and capped at its field's maximum, every other field
/// taken from the last port, and PortSelect 255.
fn sum_counters<R: Repr + Fields + Default>(ports: &[R], counter: impl Fn(&str) -> bool) -> R {
    let descs = R::default().field_descs();
    let mut acc = vec![0u8; R::LEN];
    for p in ports {
        // A value parsed from the wire or summed here always fits.
        let Ok(b) = p.to_vec() else { continue };
        for d in descs.iter().filter(|d| d.kind == FieldKind::Uint) {
            let (off, len) = (d.bit_offset as usize, d.bit_len as usize);
            let v = get_bits(&b, off, len);
            let v = if d.label.is_some_and(&counter) {
                let max = u64::MAX >> (64 - len);
                get_bits(&acc, off, len).saturating_add(v).min(max)
            } else {
                v
            };
            set_bits(&mut acc, off, len, v);
        }
    }
    // PortSelect (byte 1): all ports.
    set_bits(&mut acc, 8, 8, u64::from(ALL_PORTS));
    R::parse(&acc).unwrap_or_default()
}

/// perfquery's `aggregate_perfcounters` over `ports` (in query order):
/// each counter summed and capped at its field's maximum; PortSelect set
/// to 255 and CounterSelect taken from the last port, as
/// `output_aggregate_perfcounters` encodes them. PortXmitWait of a port
/// counts as 0 when `cap_mask` lacks `PC_XMIT_WAIT_SUP`.
///
/// Quirk kept: perfquery sums libibmad's `QP1Dropped` (really bytes
/// 22–23, VL15Dropped) and then encodes VL15Dropped over the same bytes,
/// so both aggregate lines show the VL15Dropped sum; the returned value's
/// `qp1_dropped` is that of the last port, as in perfquery's buffer.
#[must_use]
pub fn aggregate_perfcounters(ports: &[PortCounters], cap_mask: u16) -> PortCounters {
    let waits = cap_mask & pm_cap::PC_XMIT_WAIT_SUP != 0;
    let ports: Vec<PortCounters> = ports
        .iter()
        .map(|p| PortCounters {
            port_xmit_wait: if waits { p.port_xmit_wait } else { 0 },
            ..p.clone()
        })
        .collect();
    sum_counters(&ports, |l| {
        !matches!(
            l,
            "PortSelect" | "CounterSelect" | "CounterSelect2" | "QP1Dropped"
        )
    })
}

/// `perfquery -a` when the port cannot do AllPortSelect: the counters of
/// `ports` aggregated ([`aggregate_perfcounters`]) under `port 255`.
///
/// The counterselect2 byte is kept from the last port (perfquery does not
/// encode it), and PortXmitWait is already aggregated under the cap rule.
#[must_use]
pub fn format_perfcounters_aggregate(
    portid: &PortIdText,
    cap_mask: u16,
    ports: &[PortCounters],
) -> String {
    let a = aggregate_perfcounters(ports, cap_mask);
    // The aggregate already applied the XmitWait rule; print it as is.
    format!(
        "# Port counters: {portid} port {} (CapMask: 0x{cap_mask:02X})\n{}",
        ALL_PORTS,
        perfcounters_fields(&a, cap_mask | pm_cap::PC_XMIT_WAIT_SUP)
    )
}

/// perfquery's `aggregate_perfcounters_ext`: 64-bit counters summed and
/// saturated; which groups are summed follows the same capability bits
/// as [`perfcounters_ext_fields`]; PortSelect 255, CounterSelect (and
/// CounterSelect2 when shown) from the last port.
#[must_use]
pub fn aggregate_perfcounters_ext(ports: &[PortCountersExt]) -> PortCountersExt {
    sum_counters(ports, |l| {
        !matches!(l, "PortSelect" | "CounterSelect" | "CounterSelect2")
    })
}

/// `perfquery -x -a` when the port cannot do AllPortSelect.
#[must_use]
pub fn format_perfcounters_ext_aggregate(
    portid: &PortIdText,
    cap_mask: u16,
    cap_mask2: u32,
    ports: &[PortCountersExt],
) -> String {
    format_perfcounters_ext(
        portid,
        i32::from(ALL_PORTS),
        cap_mask,
        cap_mask2,
        &aggregate_perfcounters_ext(ports),
    )
}

/// The PerfMgt labels libibmad dumps with `mad_dump_hex` (the rest are
/// `mad_dump_uint`).
pub const PERF_HEX_LABELS: &[&str] = &[
    "OpCode",
    "CounterSelect",
    "Tick",
    "CounterMask0",
    "CounterMasks1to9",
    "CounterMasks10to14",
    "OptionMask",
    "VendorMask",
    "Tag",
    "SamplesOnlyOptionMask",
];

/// libibmad's `_dump_fields` over a structure: one `Label:....value` line
/// per labelled field (array elements as `Label0`, `Label1`, ...; byte
/// runs as `mad_dump_array`), hex as `mad_dump_hex` sizes it for the
/// labels in `hex`, decimal otherwise; labels in `skip` are left out.
#[must_use]
pub fn fields_text(f: &dyn Fields, skip: &[&str], hex: &[&str]) -> String {
    fields_text_where(f, |d| d.label.is_some_and(|l| !skip.contains(&l)), hex)
}

/// As [`fields_text`], over the labelled fields `keep` takes.
fn fields_text_where(f: &dyn Fields, keep: impl Fn(&FieldDesc) -> bool, hex: &[&str]) -> String {
    let mut s = String::new();
    for (i, desc) in f.field_descs().iter().enumerate() {
        let Some(label) = desc.label.filter(|_| keep(desc)) else {
            continue;
        };
        let is_hex = hex.contains(&label);
        let fmt = |v: u64, bits: u32| {
            if is_hex {
                dump::hex(v, bits.div_ceil(8) as usize)
            } else {
                dump::uint(v)
            }
        };
        match (f.field_value(i), desc.kind) {
            (Some(FieldValue::Uint(v)), _) => line(&mut s, label, fmt(v, desc.bit_len)),
            (Some(FieldValue::Bytes(b)), _) => line(&mut s, label, dump::array(b)),
            (Some(FieldValue::Array(vs)), FieldKind::Array { elem_bits, .. }) => {
                for (n, v) in vs.into_iter().enumerate() {
                    line(&mut s, &format!("{label}{n}"), fmt(v, elem_bits));
                }
            }
            _ => {}
        }
    }
    s
}

/// perfquery's `common_func` output for the attribute queries (`-X`,
/// `-S`, `-D`, `-E`, `-T`, `--oprcvcounters` ...): `# NAME counters:
/// PORTID port N`, then PortSelect, CounterSelect and the attribute's
/// counters (the OpCode byte is not printed, as libibmad's
/// `mad_dump_perfcounters_*` start at PortSelect).
#[must_use]
pub fn format_special(name: &str, portid: &PortIdText, port: i32, attr: &dyn Fields) -> String {
    format!(
        "# {name} counters: {portid} port {port}\n{}",
        fields_text(attr, &["OpCode"], PERF_HEX_LABELS)
    )
}

/// `perfquery -c`: `# PortSamplesControl: PORTID port N` and every field
/// of PortSamplesControl (`mad_dump_portsamples_control`).
#[must_use]
pub fn format_samples_control(portid: &PortIdText, port: i32, attr: &dyn Fields) -> String {
    format!(
        "# PortSamplesControl: {portid} port {port}\n{}",
        fields_text(attr, &[], PERF_HEX_LABELS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PortCounters {
        PortCounters {
            port_select: 1,
            counter_select: 0x1234,
            symbol_error_counter: 5,
            local_link_integrity_errors: 9,
            qp1_dropped: 77,
            vl15_dropped: 3,
            port_xmit_data: 4_000_000_000,
            port_xmit_wait: 42,
            ..PortCounters::default()
        }
    }

    #[test]
    fn qp1_dropped_line_shows_the_vl15_value() {
        let s = format_perfcounters(&PortIdText::lid(1), 1, 0x1300, &sample());
        assert!(s.starts_with("# Port counters: Lid 1 port 1 (CapMask: 0x1300)\n"));
        assert!(s.contains(
            "ExcessiveBufferOverrunErrors:....0\nQP1Dropped:......................3\nVL15Dropped:.....................3\n"
        ));
        assert!(!s.contains("77"));
        assert!(s.contains("CounterSelect:...................0x1234\n"));
        assert!(s.contains("CounterSelect2:..................0x00\n"));
        assert!(s.contains("PortXmitData:....................4000000000\n"));
        assert!(s.ends_with("PortXmitWait:....................42\n"));
        assert_eq!(s.lines().count(), 22);
    }

    #[test]
    fn xmit_wait_is_cleared_without_its_capability_bit() {
        let s = format_perfcounters(&PortIdText::lid(1), 1, 0x0300, &sample());
        assert!(s.starts_with("# Port counters: Lid 1 port 1 (CapMask: 0x300)\n"));
        assert!(s.ends_with("PortXmitWait:....................0\n"));
    }

    #[test]
    fn extended_lines_follow_the_capability_bits() {
        let pc = PortCountersExt {
            port_xmit_data: u64::MAX,
            qp1_dropped: 6,
            vl15_dropped: 2,
            ..PortCountersExt::default()
        };
        let id = PortIdText::lid(1);
        let basic = format_perfcounters_ext(&id, 0, 0x1300, 0, &pc);
        assert!(basic.starts_with(
            "# Port extended counters: Lid 1 port 0 (CapMask: 0x1300 CapMask2: 0x0000000)\n"
        ));
        assert!(basic.contains("PortXmitData:....................18446744073709551615\n"));
        assert_eq!(basic.lines().count(), 1 + 6 + 4);
        let noietf = format_perfcounters_ext(&id, 0, 0x1500, 0, &pc);
        assert_eq!(noietf.lines().count(), 1 + 6);
        let full = format_perfcounters_ext(&id, 0, 0x1300, 0x2, &pc);
        assert_eq!(full.lines().count(), 1 + 6 + 4 + 15);
        assert!(full.contains("CounterSelect2:..................0x00000000\n"));
        assert!(full.ends_with(
            "VL15Dropped:.....................2\nPortXmitWait:....................0\nQP1Dropped:......................6\n"
        ));
    }

    #[test]
    fn aggregates_saturate_at_the_field_width() {
        let mut p = sample();
        p.local_link_integrity_errors = 9;
        p.port_xmit_data = 3_000_000_000;
        let a = aggregate_perfcounters(&[p.clone(), p.clone()], 0x1300);
        assert_eq!(a.port_select, 255);
        assert_eq!(a.local_link_integrity_errors, 15);
        assert_eq!(a.symbol_error_counter, 10);
        assert_eq!(a.port_xmit_data, u32::MAX);
        assert_eq!(a.vl15_dropped, 6);
        assert_eq!(a.port_xmit_wait, 84);
        let s = format_perfcounters_aggregate(&PortIdText::lid(2), 0x0100, &[p.clone(), p]);
        assert!(s.starts_with("# Port counters: Lid 2 port 255 (CapMask: 0x100)\n"));
        assert!(s.contains("QP1Dropped:......................6\n"));
        assert!(s.ends_with("PortXmitWait:....................0\n"));
        let e = PortCountersExt {
            port_rcv_data: u64::MAX - 1,
            qp1_dropped: 1,
            ..PortCountersExt::default()
        };
        let ea = aggregate_perfcounters_ext(&[e.clone(), e]);
        assert_eq!(ea.port_rcv_data, u64::MAX);
        assert_eq!(ea.qp1_dropped, 2);
        assert_eq!(ea.port_select, 255);
    }

    #[test]
    fn special_attributes_print_selects_then_counters_with_array_indexes() {
        use mad_core::wire::attr::{
            PortSamplesControl, PortVlXmitFlowCtlUpdateErrors, PortXmitDataSl,
        };
        let mut x = PortXmitDataSl {
            port_select: 2,
            counter_select: 0xffff,
            ..PortXmitDataSl::default()
        };
        x.data[15] = 7;
        let s = format_special("PortXmitDataSL", &PortIdText::lid(4), 2, &x);
        assert!(s.starts_with(
            "# PortXmitDataSL counters: Lid 4 port 2\nPortSelect:......................2\nCounterSelect:...................0xffff\nXmtDataSL0:......................0\n"
        ));
        assert!(s.ends_with("XmtDataSL15:.....................7\n"));
        assert_eq!(s.lines().count(), 1 + 2 + 16);
        let f = PortVlXmitFlowCtlUpdateErrors::default();
        let s = format_special("PortVLXmitFlowCtlUpdateErrors", &PortIdText::lid(4), 1, &f);
        assert!(s.contains("PortVLXmitFlowCtlUpdateErrors15:.0\n"), "{s}");
        let c = PortSamplesControl {
            tick: 5,
            option_mask: 1,
            ..PortSamplesControl::default()
        };
        let s = format_samples_control(&PortIdText::lid(4), 1, &c);
        assert!(s.starts_with("# PortSamplesControl: Lid 4 port 1\nOpCode:..........................0x00\nPortSelect:......................0\nTick:............................0x05\n"));
        assert!(s.contains("OptionMask:......................0x0000000000000001\n"));
        assert!(s.contains("CounterSelect14:.................0x0000\n"));
        assert!(s.ends_with("SamplesOnlyOptionMask:...........0x0000000000000000\n"));
        // perfquery dumps into a 1280-byte buffer: the whole dump fits.
        assert!(s.len() - s.lines().next().map_or(0, str::len) < 1280);
    }
}
