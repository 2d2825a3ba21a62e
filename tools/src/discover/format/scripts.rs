//! ibhosts / ibrouters / ibswitches: the awk programs of the
//! infiniband-diags scripts, applied to ibnetdiscover's topology text.

use std::fmt::Write as _;

/// awk's default field splitting: runs of blanks, leading ones ignored.
fn awk_field(line: &str, n: usize) -> &str {
    line.split([' ', '\t', '\n'])
        .filter(|s| !s.is_empty())
        .nth(n.saturating_sub(1))
        .unwrap_or("")
}

/// awk `substr(s, m, n)` (1-based; characters, here bytes of ASCII).
fn awk_substr(s: &str, m: i64, n: Option<i64>) -> String {
    let chars: Vec<char> = s.chars().collect();
    let len = chars.len() as i64;
    // gawk: the range is [m, m+n) intersected with [1, len].
    let start = m;
    let end = n.map_or(len + 1, |n| m.saturating_add(n));
    let lo = start.max(1);
    let hi = end.min(len + 1);
    if hi <= lo {
        return String::new();
    }
    chars[(lo - 1) as usize..(hi - 1) as usize].iter().collect()
}

/// Position (1-based) and length of the first `#` followed by blanks
/// (`match($0, "#[ \t]*")`), or (0, -1).
fn awk_match_hash(s: &str) -> (i64, i64) {
    let chars: Vec<char> = s.chars().collect();
    match chars.iter().position(|&c| c == '#') {
        Some(i) => {
            let blanks = chars[i + 1..]
                .iter()
                .take_while(|&&c| c == ' ' || c == '\t')
                .count();
            (i as i64 + 1, blanks as i64 + 1)
        }
        None => (0, -1),
    }
}

/// Position (1-based) of the first occurrence of `needle`, or 0.
fn awk_index(s: &str, needle: &str) -> i64 {
    s.find(needle)
        .map_or(0, |b| s[..b].chars().count() as i64 + 1)
}

/// `/^ib/`, `ibpanic:`, `ibwarn:`, `iberror:` lines: the scripts copy
/// them through.
fn passthrough(line: &str, o: &mut String) -> bool {
    if line.starts_with("ib") {
        o.push_str(line);
        o.push('\n');
        return true;
    }
    for w in ["ibpanic:", "ibwarn:", "iberror:"] {
        if line.contains(w) {
            o.push_str(line);
            o.push('\n');
        }
    }
    false
}

/// The `ibhosts` script's output for a topology text.
#[must_use]
pub fn ibhosts(topology: &str) -> String {
    node_lines(topology, "Ca")
}

/// The `ibrouters` script's output for a topology text.
#[must_use]
pub fn ibrouters(topology: &str) -> String {
    node_lines(topology, "Rt")
}

/// The awk program of ibhosts / ibrouters: the lines starting with
/// `prefix` reshaped, and libibmad's messages passed through.
fn node_lines(topology: &str, prefix: &str) -> String {
    let mut o = String::new();
    for line in topology.lines() {
        if line.starts_with(prefix) {
            let (m, l) = awk_match_hash(line);
            let _ = writeln!(
                o,
                "{}\t: 0x{} ports {} {}",
                awk_field(line, 1),
                awk_substr(awk_field(line, 3), 4, Some(16)),
                awk_field(line, 2),
                awk_substr(line, m + l, None)
            );
        }
        passthrough(line, &mut o);
    }
    o
}

/// The `ibswitches` script's output for a topology text.
#[must_use]
pub fn ibswitches(topology: &str) -> String {
    let mut o = String::new();
    for line in topology.lines() {
        if line.starts_with("Switch") {
            let (m, l) = awk_match_hash(line);
            let mut desc = awk_substr(line, m + l, None);
            // match(desc, "port 0.*"): the first "port 0".
            let pi = awk_index(&desc, "port 0");
            let pinfo = awk_substr(&desc, pi, None);
            desc = awk_substr(&desc, 1, Some(pi - 2));
            let mut ty = "base port 0";
            let mut ti = awk_index(&desc, ty);
            if ti == 0 {
                ty = "enhanced port 0";
                ti = awk_index(&desc, ty);
                if ti != 0 {
                    desc = awk_substr(&desc, 1, Some(ti - 2));
                }
            } else {
                desc = awk_substr(&desc, 1, Some(ti - 2));
            }
            let head = format!(
                "{}\t: 0x{} ports {} ",
                awk_field(line, 1),
                awk_substr(awk_field(line, 3), 4, Some(16)),
                awk_field(line, 2)
            );
            if ti == 0 {
                let _ = writeln!(o, "{head}{desc} {pinfo}");
            } else {
                let _ = writeln!(o, "{head}{desc} {ty} {pinfo}");
            }
        }
        passthrough(line, &mut o);
    }
    o
}
