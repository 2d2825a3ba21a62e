//! libibmad's value formatters (`libibmad/dump.c` of rdma-core 44) and the
//! `Name:.....value` field line (`_mad_dump_field` in `libibmad/fields.c`).
//!
//! Each function returns exactly the text the C formatter writes into its
//! buffer, for values that fit the field; sizes are the field's byte size
//! (`ALIGN(bitlen, 8) / 8`), which selects the hex width.

use mad_core::wire::attr::{port_cap, port_cap2, NodeDescription, SlToVlTable, VlArbTable};

/// Width of the label column: a label is followed by `:` and by dots up
/// to column 32 (`"%s:%.*s"` with `32 - strlen(name)` dots).
pub const LABEL_WIDTH: usize = 32;

/// `Name:` plus dots up to [`LABEL_WIDTH`], as `_mad_dump_field` and
/// `snprint_field(.., 32, ..)` print it. Names of 32 characters or more
/// get no dots (libibmad leaves its dot buffer unset there; no libibmad
/// field name is that long).
#[must_use]
pub fn label(name: &str) -> String {
    let dots = LABEL_WIDTH.saturating_sub(name.len());
    let mut s = String::with_capacity(name.len() + 1 + dots);
    s.push_str(name);
    s.push(':');
    s.push_str(&".".repeat(dots));
    s
}

/// One field line without its newline: `label(name)` then `value`.
#[must_use]
pub fn field(name: &str, value: &str) -> String {
    let mut s = label(name);
    s.push_str(value);
    s
}

/// `mad_dump_uint`: decimal.
#[must_use]
pub fn uint(v: u64) -> String {
    v.to_string()
}

/// `mad_dump_hex`: `0x` and `2 * bytes` lower-case hex digits (the value
/// masked to `bytes`; sizes above 8 are treated as 8).
#[must_use]
pub fn hex(v: u64, bytes: usize) -> String {
    let bytes = bytes.clamp(1, 8);
    let masked = if bytes == 8 {
        v
    } else {
        v & ((1u64 << (bytes * 8)) - 1)
    };
    format!("0x{masked:0w$x}", w = bytes * 2)
}

/// `mad_dump_rhex`: as [`hex`] without the `0x`.
#[must_use]
pub fn rhex(v: u64, bytes: usize) -> String {
    hex(v, bytes)[2..].to_owned()
}

/// `mad_dump_linkwidth` (LinkWidthActive): one width or `undefined (N)`.
#[must_use]
pub fn link_width(w: u8) -> String {
    match w {
        1 => "1X".into(),
        2 => "4X".into(),
        4 => "8X".into(),
        8 => "12X".into(),
        16 => "2X".into(),
        _ => format!("undefined ({w})"),
    }
}

/// The `"A or B or ..."` list of the widths set in `w`, with libibmad's
/// `undefined (N)` tail for 0 or bits above 4.
fn width_list(w: u8) -> String {
    let mut s = String::new();
    for (bit, text) in [
        (0x1, "1X"),
        (0x2, "4X"),
        (0x4, "8X"),
        (0x8, "12X"),
        (0x10, "2X"),
    ] {
        if w & bit != 0 {
            s.push_str(text);
            s.push_str(" or ");
        }
    }
    if w == 0 || w >> 5 != 0 {
        s.push_str(&format!("undefined ({w})"));
    } else {
        s.truncate(s.len() - 4);
    }
    s
}

/// `mad_dump_linkwidthsup` (LinkWidthSupported): the width list, plus
/// ` (IBA extension)` for sets that are not one of the IBA's
/// "1X, 1X+4X, ..." ladders (and are below 32).
#[must_use]
pub fn link_width_supported(w: u8) -> String {
    let mut s = width_list(w);
    if !matches!(w, 1 | 3 | 7 | 11 | 15 | 17 | 19 | 23 | 27 | 31) && w >> 5 == 0 {
        s.push_str(" (IBA extension)");
    }
    s
}

/// `mad_dump_linkwidthen` (LinkWidthEnabled): the width list.
#[must_use]
pub fn link_width_enabled(w: u8) -> String {
    width_list(w)
}

/// `mad_dump_linkspeed` (LinkSpeedActive).
#[must_use]
pub fn link_speed(s: u8) -> String {
    match s {
        0 => "Extended speed".into(),
        1 => "2.5 Gbps".into(),
        2 => "5.0 Gbps".into(),
        4 => "10.0 Gbps".into(),
        _ => format!("undefined ({s})"),
    }
}

/// `dump_linkspeed`, shared by LinkSpeedSupported and LinkSpeedEnabled:
/// the list of speeds, `undefined (N)` for 0 or bits above 2, and
/// ` (IBA extension)` unless the set is 1, 3, 5 or 7 (or above 7).
fn speed_list(v: u8) -> String {
    let mut s = String::new();
    for (bit, text) in [(0x1, "2.5 Gbps"), (0x2, "5.0 Gbps"), (0x4, "10.0 Gbps")] {
        if v & bit != 0 {
            s.push_str(text);
            s.push_str(" or ");
        }
    }
    if v == 0 || v >> 3 != 0 {
        s.push_str(&format!("undefined ({v})"));
    } else {
        s.truncate(s.len() - 4);
    }
    if !matches!(v, 1 | 3 | 5 | 7) && v >> 3 == 0 {
        s.push_str(" (IBA extension)");
    }
    s
}

/// `mad_dump_linkspeedsup` (LinkSpeedSupported).
#[must_use]
pub fn link_speed_supported(v: u8) -> String {
    speed_list(v)
}

/// `mad_dump_linkspeeden` (LinkSpeedEnabled).
#[must_use]
pub fn link_speed_enabled(v: u8) -> String {
    speed_list(v)
}

/// `mad_dump_linkspeedext` (LinkSpeedExtActive).
#[must_use]
pub fn link_speed_ext(v: u8) -> String {
    match v {
        0 => "No Extended Speed".into(),
        1 => "14.0625 Gbps".into(),
        2 => "25.78125 Gbps".into(),
        4 => "53.125 Gbps".into(),
        8 => "106.25 Gbps".into(),
        _ => format!("undefined ({v})"),
    }
}

/// `dump_linkspeedext`: `0` for none, else the list; bits above 3 add
/// `undefined (N)` after the list's last ` or ` (which is then kept).
fn speed_ext_list(v: u8) -> String {
    if v == 0 {
        return "0".into();
    }
    let mut s = String::new();
    for (bit, text) in [
        (0x1, "14.0625 Gbps"),
        (0x2, "25.78125 Gbps"),
        (0x4, "53.125 Gbps"),
        (0x8, "106.25 Gbps"),
    ] {
        if v & bit != 0 {
            s.push_str(text);
            s.push_str(" or ");
        }
    }
    if v >> 4 != 0 {
        s.push_str(&format!("undefined ({v})"));
    } else {
        s.truncate(s.len() - 4);
    }
    s
}

/// `mad_dump_linkspeedextsup` (LinkSpeedExtSupported).
#[must_use]
pub fn link_speed_ext_supported(v: u8) -> String {
    speed_ext_list(v)
}

/// `mad_dump_linkspeedexten` (LinkSpeedExtEnabled): 30 means disabled.
#[must_use]
pub fn link_speed_ext_enabled(v: u8) -> String {
    if v == 30 {
        "Extended link speeds disabled".into()
    } else {
        speed_ext_list(v)
    }
}

/// `mad_dump_portstate` (LinkState).
#[must_use]
pub fn port_state(v: u8) -> String {
    match v {
        0 => "NoChange".into(),
        1 => "Down".into(),
        2 => "Initialize".into(),
        3 => "Armed".into(),
        4 => "Active".into(),
        _ => format!("?({v})"),
    }
}

/// `mad_dump_linkdowndefstate` (LinkDownDefState).
#[must_use]
pub fn link_down_def_state(v: u8) -> String {
    match v {
        0 => "NoChange".into(),
        1 => "Sleep".into(),
        2 => "Polling".into(),
        _ => format!("?({v})"),
    }
}

/// `mad_dump_physportstate` (PhysLinkState).
#[must_use]
pub fn phys_port_state(v: u8) -> String {
    match v {
        0 => "NoChange".into(),
        1 => "Sleep".into(),
        2 => "Polling".into(),
        3 => "Disabled".into(),
        4 => "PortConfigurationTraining".into(),
        5 => "LinkUp".into(),
        6 => "LinkErrorRecovery".into(),
        7 => "PhyTest".into(),
        _ => format!("?({v})"),
    }
}

/// `mad_dump_mtu` (NeighborMTU, MtuCap).
#[must_use]
pub fn mtu(v: u8) -> String {
    match v {
        1 => "256".into(),
        2 => "512".into(),
        3 => "1024".into(),
        4 => "2048".into(),
        5 => "4096".into(),
        _ => format!("?({v})"),
    }
}

/// `mad_dump_vlcap` (VLCap).
#[must_use]
pub fn vl_cap(v: u8) -> String {
    match v {
        1 => "VL0".into(),
        2 => "VL0-1".into(),
        3 => "VL0-3".into(),
        4 => "VL0-7".into(),
        5 => "VL0-14".into(),
        _ => format!("?({v})"),
    }
}

/// `mad_dump_opervls` (OperVLs).
#[must_use]
pub fn oper_vls(v: u8) -> String {
    match v {
        0 => "No change".into(),
        _ => vl_cap(v),
    }
}

/// `mad_dump_portcapmask` (CapMask): `0x%x`, then one line per named bit
/// set, each `\t\t\t\t` + text; no newline after the last line.
#[must_use]
pub fn port_cap_mask(mask: u32) -> String {
    let mut s = format!("0x{mask:x}");
    for t in port_cap::texts(mask) {
        s.push_str("\n\t\t\t\t");
        s.push_str(t);
    }
    s
}

/// `mad_dump_portcapmask2` (CapabilityMask2), as [`port_cap_mask`].
#[must_use]
pub fn port_cap_mask2(mask: u16) -> String {
    let mut s = format!("0x{mask:x}");
    for t in port_cap2::texts(mask) {
        s.push_str("\n\t\t\t\t");
        s.push_str(t);
    }
    s
}

/// `mad_dump_node_type` (NodeType): note the `?(N)?` form for unknown
/// types.
#[must_use]
pub fn node_type(v: u8) -> String {
    match v {
        1 => "Channel Adapter".into(),
        2 => "Switch".into(),
        3 => "Router".into(),
        _ => format!("?({v})?"),
    }
}

/// `ib_get_node_type_str` (libibmad `iba_types.h`, used by saquery).
#[must_use]
pub fn node_type_str(v: u8) -> &'static str {
    match v {
        1 => "Channel Adapter",
        2 => "Switch",
        3 => "Router",
        _ => "UNKNOWN",
    }
}

/// `mad_dump_array`: the bytes as lower-case hex, no separators.
#[must_use]
pub fn array(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `mad_dump_string` of a `size`-byte field: `'text'` cut to `size - 1`
/// characters by its `snprintf(buf, size, ..)` (so a long text loses its
/// closing quote). Bytes are shown as Latin-1 would map them; text stops
/// at the first NUL.
#[must_use]
pub fn string(bytes: &[u8], size: usize) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    let mut s = String::from("'");
    s.extend(bytes[..end].iter().map(|b| char::from(*b)));
    s.push('\'');
    s.chars().take(size.saturating_sub(1)).collect()
}

/// `mad_dump_sltovl`: `|` then `%2u|` for each SL's VL, then a newline.
#[must_use]
pub fn sl_to_vl(t: &SlToVlTable) -> String {
    let mut s = String::from("|");
    for vl in t.vl {
        s.push_str(&format!("{vl:2}|"));
    }
    s.push('\n');
    s
}

/// `mad_dump_vlarbitration` of the first `num` entries (at most 32):
/// `\nVL    : |` with `0x%-2X|` per VL (low nibble), `\nWEIGHT: |` with the
/// weights, then a newline.
#[must_use]
pub fn vl_arbitration(t: &VlArbTable, num: usize) -> String {
    let num = num.min(VlArbTable::ENTRIES);
    let mut s = String::from("\nVL    : |");
    for i in 0..num {
        s.push_str(&format!("0x{:<2X}|", t.vl(i).unwrap_or(0)));
    }
    s.push_str("\nWEIGHT: |");
    for i in 0..num {
        s.push_str(&format!("0x{:<2X}|", t.weight(i).unwrap_or(0)));
    }
    s.push('\n');
    s
}

/// infiniband-diags' `clean_nodedesc`: the text up to the first NUL (at
/// most 64 bytes) with every byte that is not printable ASCII
/// (`isprint` in the C locale) replaced by a space.
#[must_use]
pub fn clean_nodedesc(desc: &NodeDescription) -> String {
    clean_bytes(desc.text_bytes())
}

/// [`clean_nodedesc`] of raw bytes (stops at the first NUL).
#[must_use]
pub fn clean_bytes(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take_while(|b| **b != 0)
        .map(|b| {
            if (0x20..0x7F).contains(b) {
                char::from(*b)
            } else {
                ' '
            }
        })
        .collect()
}

/// glibc's `inet_ntop(AF_INET6, ..)`: groups in lower-case hex without
/// leading zeros, the first longest run of two or more zero groups as
/// `::`, and the IPv4 forms `::a.b.c.d` (first six groups zero) and
/// `::ffff:a.b.c.d`.
#[must_use]
pub fn inet_ntop6(gid: &[u8; 16]) -> String {
    let mut words = [0u16; 8];
    for (i, w) in words.iter_mut().enumerate() {
        *w = u16::from_be_bytes([gid[2 * i], gid[2 * i + 1]]);
    }
    // Longest run of zero words; ties keep the first.
    let (mut best_base, mut best_len) = (None::<usize>, 0usize);
    let (mut cur_base, mut cur_len) = (None::<usize>, 0usize);
    for (i, w) in words.iter().enumerate() {
        if *w == 0 {
            if cur_base.is_none() {
                cur_base = Some(i);
                cur_len = 1;
            } else {
                cur_len += 1;
            }
        } else if let Some(b) = cur_base.take() {
            if best_base.is_none() || cur_len > best_len {
                best_base = Some(b);
                best_len = cur_len;
            }
        }
    }
    if let Some(b) = cur_base {
        if best_base.is_none() || cur_len > best_len {
            best_base = Some(b);
            best_len = cur_len;
        }
    }
    if best_len < 2 {
        best_base = None;
    }
    let mut s = String::new();
    let mut i = 0;
    while i < 8 {
        if let Some(b) = best_base {
            if i >= b && i < b + best_len {
                if i == b {
                    s.push(':');
                }
                i += 1;
                continue;
            }
        }
        if i != 0 {
            s.push(':');
        }
        if i == 6
            && best_base == Some(0)
            && (best_len == 6 || (best_len == 5 && words[5] == 0xffff))
        {
            s.push_str(&format!("{}.{}.{}.{}", gid[12], gid[13], gid[14], gid[15]));
            break;
        }
        s.push_str(&format!("{:x}", words[i]));
        i += 1;
    }
    if let Some(b) = best_base {
        if b + best_len == 8 {
            s.push(':');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_pad_with_dots_to_column_32() {
        assert_eq!(field("Lid", "1"), format!("Lid:{}1", ".".repeat(29)));
        assert_eq!(
            field("McastPkeyTrapSuppressionEnabled", "0"),
            "McastPkeyTrapSuppressionEnabled:.0"
        );
        assert_eq!(label(&"x".repeat(32)), format!("{}:", "x".repeat(32)));
        assert_eq!(label("BaseVers").len(), 33);
    }

    #[test]
    fn hex_width_follows_the_field_size() {
        assert_eq!(hex(0, 1), "0x00");
        assert_eq!(hex(0xa1, 4), "0x000000a1");
        assert_eq!(hex(0x2c9, 3), "0x0002c9");
        assert_eq!(hex(0x20_0000, 8), "0x0000000000200000");
        assert_eq!(hex(0x1ff, 1), "0xff");
        assert_eq!(rhex(0xfe80_0000_0000_0000, 8), "fe80000000000000");
    }

    #[test]
    fn link_width_texts_match_libibmad() {
        assert_eq!(link_width(2), "4X");
        assert_eq!(link_width(0), "undefined (0)");
        assert_eq!(link_width(3), "undefined (3)");
        assert_eq!(link_width_enabled(2), "4X");
        assert_eq!(link_width_enabled(3), "1X or 4X");
        assert_eq!(link_width_enabled(0), "undefined (0)");
        assert_eq!(link_width_enabled(0x21), "1X or undefined (33)");
        assert_eq!(link_width_supported(31), "1X or 4X or 8X or 12X or 2X");
        assert_eq!(link_width_supported(3), "1X or 4X");
        assert_eq!(link_width_supported(2), "4X (IBA extension)");
        assert_eq!(link_width_supported(0), "undefined (0) (IBA extension)");
        assert_eq!(link_width_supported(0x40), "undefined (64)");
    }

    #[test]
    fn link_speed_texts_match_libibmad() {
        assert_eq!(link_speed(1), "2.5 Gbps");
        assert_eq!(link_speed(0), "Extended speed");
        assert_eq!(link_speed(3), "undefined (3)");
        assert_eq!(link_speed_supported(7), "2.5 Gbps or 5.0 Gbps or 10.0 Gbps");
        assert_eq!(link_speed_enabled(1), "2.5 Gbps");
        assert_eq!(link_speed_enabled(2), "5.0 Gbps (IBA extension)");
        assert_eq!(
            link_speed_supported(6),
            "5.0 Gbps or 10.0 Gbps (IBA extension)"
        );
        assert_eq!(link_speed_supported(0), "undefined (0) (IBA extension)");
        assert_eq!(link_speed_supported(8), "undefined (8)");
        assert_eq!(link_speed_supported(9), "2.5 Gbps or undefined (9)");
    }

    #[test]
    fn extended_speed_texts_match_libibmad() {
        assert_eq!(link_speed_ext(0), "No Extended Speed");
        assert_eq!(link_speed_ext(2), "25.78125 Gbps");
        assert_eq!(link_speed_ext(3), "undefined (3)");
        assert_eq!(link_speed_ext_supported(0), "0");
        assert_eq!(link_speed_ext_supported(3), "14.0625 Gbps or 25.78125 Gbps");
        assert_eq!(link_speed_ext_enabled(30), "Extended link speeds disabled");
        assert_eq!(link_speed_ext_enabled(16), "undefined (16)");
        assert_eq!(link_speed_ext_enabled(17), "14.0625 Gbps or undefined (17)");
        assert_eq!(link_speed_ext_enabled(0), "0");
    }

    #[test]
    fn state_and_capacity_names_match_libibmad() {
        assert_eq!(port_state(2), "Initialize");
        assert_eq!(port_state(7), "?(7)");
        assert_eq!(phys_port_state(5), "LinkUp");
        assert_eq!(phys_port_state(9), "?(9)");
        assert_eq!(link_down_def_state(2), "Polling");
        assert_eq!(link_down_def_state(3), "?(3)");
        assert_eq!(mtu(4), "2048");
        assert_eq!(mtu(0), "?(0)");
        assert_eq!(vl_cap(4), "VL0-7");
        assert_eq!(oper_vls(0), "No change");
        assert_eq!(oper_vls(5), "VL0-14");
        assert_eq!(node_type(2), "Switch");
        assert_eq!(node_type(9), "?(9)?");
        assert_eq!(node_type_str(9), "UNKNOWN");
    }

    #[test]
    fn capability_masks_put_each_bit_on_a_line_after_four_tabs() {
        assert_eq!(port_cap_mask(0), "0x0");
        assert_eq!(
            port_cap_mask(0x0050_c048),
            "0x50c048\n\t\t\t\tIsTrapSupported\n\t\t\t\tIsSLMappingSupported\n\
             \t\t\t\tIsExtendedSpeedsSupported\n\t\t\t\tIsCapabilityMask2Supported\n\
             \t\t\t\tIsVendorClassSupported\n\t\t\t\tIsCapabilityMaskNoticeSupported"
        );
        // Bit 0 and bit 13 have no text.
        assert_eq!(port_cap_mask(0x2001), "0x2001");
        assert_eq!(
            port_cap_mask2(0x30),
            "0x30\n\t\t\t\tIsLinkWidth2xSupported\n\t\t\t\tIsLinkSpeedHDRSupported"
        );
    }

    #[test]
    fn string_dump_quotes_and_cuts_to_the_field_size() {
        assert_eq!(string(b"abc\0\0", 64), "'abc'");
        let long = [b'a'; 64];
        let s = string(&long, 64);
        assert_eq!(s.len(), 63);
        assert!(s.starts_with("'aaa") && !s.ends_with('\''));
        assert_eq!(array(&[0xfe, 0x80, 0x01]), "fe8001");
    }

    #[test]
    fn sl2vl_and_vlarb_rows() {
        let t = SlToVlTable {
            vl: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7],
        };
        assert_eq!(
            sl_to_vl(&t),
            "| 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14| 7|\n"
        );
        let mut v = VlArbTable::default();
        v.entries[0] = VlArbTable::entry(1, 4);
        v.entries[1] = 0xF2FF; // reserved bits are not shown
        assert_eq!(
            vl_arbitration(&v, 3),
            "\nVL    : |0x1 |0x2 |0x0 |\nWEIGHT: |0x4 |0xFF|0x0 |\n"
        );
    }

    #[test]
    fn nodedesc_cleaning_replaces_unprintables_with_spaces() {
        let mut d = NodeDescription::from_text("ab\tc");
        d.desc[4] = 0xC3;
        assert_eq!(clean_nodedesc(&d), "ab c ");
        assert_eq!(
            clean_nodedesc(&NodeDescription::from_text(&"z".repeat(64))),
            "z".repeat(64)
        );
    }

    #[test]
    fn gids_print_as_glibc_inet_ntop_does() {
        let mut g = [0u8; 16];
        assert_eq!(inet_ntop6(&g), "::");
        g[0] = 0xfe;
        g[1] = 0x80;
        g[13] = 0x20;
        assert_eq!(inet_ntop6(&g), "fe80::20:0");
        let mc = [
            0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        ];
        assert_eq!(inet_ntop6(&mc), "ff12:401b:ffff::ffff:ffff");
        let mut v4 = [0u8; 16];
        v4[12..].copy_from_slice(&[10, 0, 0, 1]);
        assert_eq!(inet_ntop6(&v4), "::10.0.0.1");
        v4[10] = 0xff;
        v4[11] = 0xff;
        assert_eq!(inet_ntop6(&v4), "::ffff:10.0.0.1");
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(inet_ntop6(&one), "::1");
        // Ties: the first run of equal length is compressed.
        let t = [0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4];
        assert_eq!(inet_ntop6(&t), "1::2:0:0:3:4");
        let longer = [0, 1, 0, 0, 0, 2, 0, 3, 0, 0, 0, 0, 0, 4, 0, 5];
        assert_eq!(inet_ntop6(&longer), "1:0:2:3::4:5");
        // A single zero group is not compressed.
        let s1 = [0, 1, 0, 0, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7];
        assert_eq!(inet_ntop6(&s1), "1:0:2:3:4:5:6:7");
        let tail = [0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(inet_ntop6(&tail), "1:2::");
    }
}
