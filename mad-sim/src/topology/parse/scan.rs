//! ibsim's C-style scanning of header and port lines (`sscanf`, `strtoul`
//! and its own `parse_node_*` helpers).

use super::cnum::{self, is_c_space, strtoul};
use crate::topology::{speed, width};

pub(super) fn signed(v: cnum::CNum) -> i64 {
    let m = i64::try_from(v.value).unwrap_or(i64::MAX);
    if v.negative {
        -m
    } else {
        m
    }
}

pub(super) fn range_text(lo: i64, hi: i64) -> &'static str {
    match (lo, hi) {
        (1, 31) => "1-31",
        (1, 7) => "1-7",
        (0, 7) => "0-7",
        _ => "in range",
    }
}

/// ibsim's `parse_node_ports`: skip to the first digit, then `strtoul`
/// base 0.
pub(super) fn parse_node_ports(s: &str) -> cnum::CNum {
    match s.find(|c: char| c.is_ascii_digit()) {
        Some(p) => strtoul(&s[p..], true),
        None => strtoul("", true),
    }
}

/// The first `"quoted"` string of `s` and what follows its closing quote.
pub(super) fn quoted(s: &str) -> Option<(&str, &str)> {
    let open = s.find('"')?;
    let close = open + 1 + s[open + 1..].find('"')?;
    Some((&s[open + 1..close], &s[close + 1..]))
}

/// ibsim's `parse_node_desc` on the text after a header's node id:
/// the description and the rest of the line after it (`None` when ibsim
/// keeps no rest).
pub(super) fn parse_node_desc(s: &str) -> (Option<&str>, Option<&str>) {
    let Some(hash) = s.find('#') else {
        return (None, Some(s));
    };
    let b = s.as_bytes();
    let mut k = hash + 1;
    while k < b.len() && is_c_space(b[k]) {
        k += 1;
    }
    let body = &s[k..];
    if let Some(q) = body.strip_prefix('"') {
        return match q.find('"') {
            Some(e) => (Some(&q[..e]), Some(&q[e + 1..])),
            None => (Some(q), None),
        };
    }
    for pat in [" enhanced port ", " base port ", " lid ", " lmc "] {
        if let Some(e) = body.find(pat) {
            return (Some(&body[..e]), Some(&body[e + 1..]));
        }
    }
    (Some(body), None)
}

/// `sscanf(s, "lid %d %dx%9s")`: the width and speed text, if all three
/// conversions succeed.
pub(in crate::topology) fn scan_lid_width_speed(s: &str) -> Option<(i64, &str)> {
    let rest = s.strip_prefix("lid")?;
    let (_, rest) = scan_int(rest)?;
    let (w, rest) = scan_int(rest)?;
    let rest = rest.strip_prefix('x')?;
    let rest = rest.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let end = rest
        .char_indices()
        .find(|(_, c)| c.is_ascii() && is_c_space(*c as u8))
        .map_or(rest.len(), |(i, _)| i);
    let word = &rest[..end];
    if word.is_empty() {
        return None;
    }
    // %9s keeps at most 9 characters.
    let cut = word.char_indices().nth(9).map_or(word.len(), |(i, _)| i);
    Some((w, &word[..cut]))
}

/// `%d`: white space, optional sign, at least one decimal digit.
pub(super) fn scan_int(s: &str) -> Option<(i64, &str)> {
    let t = s.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    let v: i64 = digits[..end].parse().unwrap_or(i64::MAX);
    Some((if neg { -v } else { v }, &digits[end..]))
}

pub(super) fn truncate(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// The widest width in `common` (12X, 8X, 4X, 2X, 1X).
pub(super) fn active_width(common: u8) -> Option<u8> {
    [width::W12X, width::W8X, width::W4X, width::W2X, width::W1X]
        .into_iter()
        .find(|w| common & w != 0)
}

/// The fastest speed in `common` (QDR, DDR, SDR).
pub(super) fn active_speed(common: u8) -> Option<u8> {
    [speed::QDR, speed::DDR, speed::SDR]
        .into_iter()
        .find(|s| common & s != 0)
}

/// The fastest extended speed in `common` (HDR, EDR, FDR), else 0.
pub(super) fn active_speed_ext(common: u8) -> u8 {
    [speed::EXT_HDR, speed::EXT_EDR, speed::EXT_FDR]
        .into_iter()
        .find(|s| common & s != 0)
        .unwrap_or(0)
}
