//! Our leaves, their layout against libibmad's, and the buffer comparisons.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use mad_core::wire::field::{FieldKind, FieldValue, Fields};

use crate::map::*;
use crate::run::*;

// ------------------------------------------------------------------ our leaves

/// One non-nested field of ours, with its bits, relative to the struct.
pub(crate) struct Leaf {
    pub(crate) label: Option<&'static str>,
    pub(crate) path: String,
    pub(crate) off: usize,
    pub(crate) len: usize,
    pub(crate) value: Vec<bool>,
}

pub(crate) fn leaves(f: &dyn Fields, base: usize, prefix: &str, out: &mut Vec<Leaf>) {
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
pub(crate) fn overlap(ls: &[Leaf], off: usize, len: usize) -> (Vec<&Leaf>, Vec<bool>) {
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
pub(crate) fn check_layout(map: Map, ls: &[Leaf], off: usize, len: usize) -> Result<(), String> {
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
pub(crate) struct Report {
    /// group → distinct libibmad enum names compared.
    pub(crate) compared: BTreeMap<String, BTreeSet<String>>,
    /// group → why it is not compared.
    pub(crate) skipped: BTreeMap<String, &'static str>,
    /// Layout does not depend on the round: one entry per field.
    pub(crate) layout_errors: BTreeSet<String>,
    pub(crate) value_errors: Vec<String>,
    pub(crate) emit_errors: Vec<String>,
    pub(crate) unknown_groups: BTreeSet<String>,
    pub(crate) buffers_compared: usize,
    pub(crate) fields_compared: usize,
}

pub(crate) fn compare_all() -> &'static Report {
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

pub(crate) fn compare_buffer(b: &Buffer, rep: &mut Report) {
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

pub(crate) fn fail_if_any(what: &str, errors: &[String]) {
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
