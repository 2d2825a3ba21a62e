//! Printing decoded MADs: libibmad-style text and the `--json` shape.
//!
//! Text lines are `Label:` followed by dots up to column 33 and the value,
//! the way libibmad's `mad_dump_field` prints (`Label:` + dots to 32
//! characters of label-plus-dots). Values:
//! - enum fields print their symbolic name when known, else the number;
//! - GUIDs, keys, masks, GIDs, prefixes, vendor/device ids, revisions, TIDs,
//!   status words and attribute modifiers print as zero-padded hex;
//! - everything else prints in decimal;
//! - text fields (descriptions, names) print as text, GIDs as eight
//!   colon-separated groups, directed-route paths as comma-separated port
//!   numbers (trailing zeros cut), other byte runs as `0x` hex;
//! - reserved fields print only when non-zero.

use crate::hex::to_hex;
use crate::json::{Json, JsonExt};
use core::fmt::Write as _;
use mad_core::wire::decode::{DecodedMad, Layer, LayerData};
use mad_core::wire::{AttributeId, FieldDesc, FieldKind, FieldValue, Fields, MgmtClass};

/// Width of label plus dots, as libibmad uses.
const LABEL_COLUMNS: usize = 32;

/// Substrings of a field name or label (lower-cased) that make it print in hex.
const HEX_HINTS: &[&str] = &[
    "guid",
    "key",
    "mask",
    "gid",
    "tid",
    "oui",
    "prefix",
    "vendorid",
    "vendor_id",
    "devid",
    "device_id",
    "revision",
    "capab",
    "status",
    "class_specific",
    "classspecific",
    "attrmod",
    "attr_mod",
    "attrid",
    "attr_id",
];

/// Substrings that make a byte field print as text.
const TEXT_HINTS: &[&str] = &["desc", "name", "string"];

fn hinted(desc: &FieldDesc, hints: &[&str]) -> bool {
    let name = desc.name.to_ascii_lowercase();
    let label = desc.label.unwrap_or("").to_ascii_lowercase();
    hints.iter().any(|h| name.contains(h) || label.contains(h))
}

fn hex_width(bits: u32) -> usize {
    bits.div_ceil(4).max(1) as usize
}

/// The symbolic name of an enum field's value. Attribute IDs are named by
/// the MAD's class (0x12 is SwitchInfo in an SMP, PortCounters in PerfMgt).
fn value_name(desc: &FieldDesc, v: u64, class: Option<MgmtClass>) -> Option<&'static str> {
    if let (Some(class), "attr_id") = (class, desc.name) {
        return u16::try_from(v)
            .ok()
            .and_then(|a| AttributeId(a).name_in(class));
    }
    desc.value_name.and_then(|f| f(v))
}

/// Formats one integer the way the text output does.
fn format_uint(desc: &FieldDesc, bits: u32, v: u64, class: Option<MgmtClass>) -> String {
    if let Some(name) = value_name(desc, v, class) {
        return name.to_owned();
    }
    if bits > 4 && hinted(desc, HEX_HINTS) {
        format!("0x{v:0w$x}", w = hex_width(bits))
    } else {
        v.to_string()
    }
}

/// Formats a byte run: text, GID or hex.
fn format_bytes(desc: &FieldDesc, b: &[u8]) -> String {
    if hinted(desc, TEXT_HINTS) {
        let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
        let mut s = String::new();
        for &c in &b[..end] {
            if c.is_ascii_graphic() || c == b' ' {
                s.push(c as char);
            } else {
                let _ = write!(s, "\\x{c:02x}");
            }
        }
        return s;
    }
    if desc.name.ends_with("_path") {
        // Directed-route port lists: decimal, trailing unused entries cut.
        let used = b.iter().rposition(|c| *c != 0).map_or(1, |p| p + 1);
        return b[..used]
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(",");
    }
    if b.len() == 16 && hinted(desc, &["gid"]) {
        return b
            .chunks(2)
            .map(|p| format!("{:02x}{:02x}", p[0], p[1]))
            .collect::<Vec<_>>()
            .join(":");
    }
    format!("0x{}", to_hex(b))
}

fn is_zero(v: &FieldValue<'_>) -> bool {
    match v {
        FieldValue::Uint(x) => *x == 0,
        FieldValue::Bytes(b) => b.iter().all(|c| *c == 0),
        FieldValue::Array(a) => a.iter().all(|c| *c == 0),
        FieldValue::Nested(f) => {
            (0..f.field_descs().len()).all(|i| f.field_value(i).is_none_or(|v| is_zero(&v)))
        }
    }
}

fn label_line(out: &mut String, indent: usize, label: &str, value: &str) {
    let dots = LABEL_COLUMNS.saturating_sub(label.len());
    let _ = writeln!(
        out,
        "{:indent$}{label}:{}{value}",
        "",
        ".".repeat(dots),
        indent = indent
    );
}

/// Writes every field of `f` as text lines (reserved ones only when set).
/// `class` names attribute IDs by management class.
pub fn write_fields_text(
    out: &mut String,
    f: &dyn Fields,
    indent: usize,
    class: Option<MgmtClass>,
) {
    for (i, desc) in f.field_descs().iter().enumerate() {
        let Some(value) = f.field_value(i) else {
            continue;
        };
        if desc.is_reserved() && is_zero(&value) {
            continue;
        }
        let label = desc.label.unwrap_or(desc.name);
        match value {
            FieldValue::Uint(v) => label_line(
                out,
                indent,
                label,
                &format_uint(desc, desc.bit_len, v, class),
            ),
            FieldValue::Bytes(b) => label_line(out, indent, label, &format_bytes(desc, b)),
            FieldValue::Array(a) => {
                let bits = match desc.kind {
                    FieldKind::Array { elem_bits, .. } => elem_bits,
                    _ => 64,
                };
                let text = a
                    .iter()
                    .map(|v| format_uint(desc, bits, *v, class))
                    .collect::<Vec<_>>()
                    .join(" ");
                label_line(out, indent, label, &text);
            }
            FieldValue::Nested(n) => {
                let _ = writeln!(out, "{:indent$}{label}:", "", indent = indent);
                write_fields_text(out, n, indent + 2, class);
            }
        }
    }
}

fn layer_title(l: &Layer) -> String {
    let mut t = format!("# {}", l.name);
    if let Some(i) = l.index {
        let _ = write!(t, " [{i}]");
    }
    let _ = write!(t, " (byte {})", l.offset);
    t
}

/// Writes one decoded MAD as text. `source` says where it came from.
pub fn write_mad_text(out: &mut String, source: &str, d: &DecodedMad) {
    let _ = writeln!(out, "## MAD from {source}: {} bytes", d.len);
    for n in &d.notes {
        let _ = writeln!(out, "# note: {n}");
    }
    let _ = writeln!(out, "# {} (byte 0)", d.header.struct_name());
    let class = Some(d.header.mgmt_class);
    write_fields_text(out, &d.header, 0, class);
    for l in &d.layers {
        let _ = writeln!(out, "{}", layer_title(l));
        if let Some(n) = &l.note {
            let _ = writeln!(out, "# note: {n}");
        }
        match &l.data {
            LayerData::Fields(f) => write_fields_text(out, f.as_ref(), 0, class),
            LayerData::Raw(b) => {
                for (i, chunk) in b.chunks(16).enumerate() {
                    let bytes = chunk.iter().map(|c| format!("{c:02x}")).collect::<Vec<_>>();
                    let _ = writeln!(out, "{:04x}: {}", l.offset + i * 16, bytes.join(" "));
                }
            }
        }
    }
}

/// The JSON object of a structure's fields, keyed by field name, in wire
/// order, reserved fields included. `class` names attribute IDs.
#[must_use]
pub fn fields_json(f: &dyn Fields, class: Option<MgmtClass>) -> Json {
    let mut o = Json::obj();
    for (i, desc) in f.field_descs().iter().enumerate() {
        let Some(value) = f.field_value(i) else {
            continue;
        };
        let j = match value {
            FieldValue::Uint(v) if desc.value_name.is_some() || desc.name == "attr_id" => {
                Json::obj()
                    .with("value", crate::json::uint_field(desc.bit_len, v))
                    .with("name", Json::opt_str(value_name(desc, v, class)))
            }
            FieldValue::Uint(v) => crate::json::uint_field(desc.bit_len, v),
            FieldValue::Bytes(b) => Json::String(to_hex(b)),
            FieldValue::Array(a) => {
                let bits = match desc.kind {
                    FieldKind::Array { elem_bits, .. } => elem_bits,
                    _ => 64,
                };
                Json::Array(
                    a.into_iter()
                        .map(|x| crate::json::uint_field(bits, x))
                        .collect(),
                )
            }
            FieldValue::Nested(n) => fields_json(n, class),
        };
        o.push(desc.name, j);
    }
    o
}

/// The JSON object of one decoded MAD (see the `--help` text for the shape).
#[must_use]
pub fn mad_json(source: &str, d: &DecodedMad) -> Json {
    let class = Some(d.header.mgmt_class);
    let layers = d
        .layers
        .iter()
        .map(|l| {
            let mut j = Json::obj()
                .with("name", Json::String(l.name.to_owned()))
                .with("offset", Json::from(l.offset as u64))
                .with(
                    "index",
                    l.index.map_or(Json::Null, |i| Json::from(i as u64)),
                )
                .with("note", Json::opt_str(l.note.as_deref()));
            match &l.data {
                LayerData::Fields(f) => {
                    j.push("struct", Json::String(f.struct_name().to_owned()));
                    j.push("fields", fields_json(f.as_ref(), class));
                }
                LayerData::Raw(b) => j.push("raw", Json::String(to_hex(b))),
            }
            j
        })
        .collect();
    Json::obj()
        .with("source", Json::String(source.to_owned()))
        .with("length", Json::from(d.len as u64))
        .with("header", fields_json(&d.header, class))
        .with("layers", Json::Array(layers))
        .with(
            "notes",
            Json::Array(d.notes.iter().map(|n| Json::String(n.clone())).collect()),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::wire::decode::decode_mad;

    fn sample() -> Vec<u8> {
        let mut b = vec![0u8; 256];
        b[0] = 1;
        b[1] = 0x08; // SNMP: header + raw data (CM has its own layers now)
        b[2] = 2;
        b[3] = 0x81;
        b[8..16].copy_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        b[17] = 0x10;
        b
    }

    #[test]
    fn text_pads_labels_with_dots_to_column_33() {
        let d = decode_mad(&sample()).unwrap();
        let mut out = String::new();
        write_mad_text(&mut out, "test", &d);
        assert!(
            out.contains(&format!("BaseVers:{}1\n", ".".repeat(24))),
            "{out}"
        );
        assert!(
            out.contains("TID:.............................0x0102030405060708\n"),
            "{out}"
        );
        // Method has a value name; the response bit prints as a number.
        assert!(
            out.contains("Method:..........................Get\n"),
            "{out}"
        );
        assert!(
            out.contains("IsResponse:......................1\n"),
            "{out}"
        );
        for line in out
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(":."))
        {
            let colon = line.find(':').unwrap();
            let value_col = line[colon + 1..].find(|c| c != '.').unwrap() + colon + 1;
            assert_eq!(value_col.max(33), value_col, "{line}");
        }
    }

    #[test]
    fn reserved_fields_print_only_when_non_zero() {
        let mut b = sample();
        let d = decode_mad(&b).unwrap();
        let mut out = String::new();
        write_mad_text(&mut out, "t", &d);
        assert!(!out.contains("reserved"), "{out}");
        b[19] = 0x12; // reserved word of the common header (bytes 18-19)
        let d = decode_mad(&b).unwrap();
        let mut out = String::new();
        write_mad_text(&mut out, "t", &d);
        assert!(
            out.contains("reserved:........................18\n"),
            "{out}"
        );
    }

    #[test]
    fn gids_print_as_groups_and_dr_paths_as_port_lists() {
        let gid = FieldDesc {
            name: "dgid",
            label: Some("PathRecDGid"),
            bit_offset: 0,
            bit_len: 128,
            kind: FieldKind::Bytes,
            value_name: None,
        };
        let mut g = [0u8; 16];
        g[0] = 0xfe;
        g[1] = 0x80;
        g[15] = 0x01;
        assert_eq!(
            format_bytes(&gid, &g),
            "fe80:0000:0000:0000:0000:0000:0000:0001"
        );
        let path = FieldDesc {
            name: "initial_path",
            label: Some("DrSmpPath"),
            ..gid
        };
        let mut p = [0u8; 64];
        p[1] = 1;
        p[2] = 17;
        assert_eq!(format_bytes(&path, &p), "0,1,17");
        assert_eq!(format_bytes(&path, &[0u8; 64]), "0");
    }

    #[test]
    fn json_has_header_fields_by_name_and_raw_layers_as_hex() {
        let d = decode_mad(&sample()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&mad_json("s", &d).to_text()).unwrap();
        assert_eq!(v["header"]["tid"], "0x0102030405060708");
        assert_eq!(v["header"]["method"]["name"], "Get");
        assert_eq!(v["header"]["method"]["value"], 1);
        assert_eq!(v["header"]["mgmt_class"]["name"], "SNMP");
        assert_eq!(v["layers"][0]["name"], "Data");
        assert_eq!(v["layers"][0]["offset"], 24);
        assert_eq!(v["layers"][0]["raw"].as_str().map(str::len), Some(232 * 2));
        assert_eq!(v["length"], 256);
    }
}
