//! Runs infiniband-diags' `ibnetdiscover` against an ibsim (under
//! libumad2sim) and parses its default output format (fields are
//! separated by tabs, shown here as spaces):
//!
//! ```text
//! switchguid=0x200000(200000)
//! Switch    8 "S-0000000000200000"        # "Switch1" base port 0 lid 0 lmc 0
//! [1]    "H-0000000000100000"[1](100001)         # "Hca1" lid 0 4xSDR
//!
//! caguid=0x100003
//! Ca    2 "H-0000000000100003"        # "Hca2"
//! [2](100005)     "S-0000000000200000"[2]        # lid 0 lmc 0 "Switch1" lid 0 4xSDR
//! ```

use std::collections::{BTreeMap, BTreeSet};

use super::sweep::Link;
use super::IbSim;

/// A node as ibnetdiscover lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscNode {
    /// "Switch", "Ca" or "Rt".
    pub kind: String,
    /// Number of ports.
    pub num_ports: u8,
    /// NodeDescription (the quoted text after `#`).
    pub desc: String,
    /// Port GUIDs printed in parentheses, by port number.
    pub port_guids: BTreeMap<u8, u64>,
}

/// ibnetdiscover's view of a fabric.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    /// Nodes by node GUID.
    pub nodes: BTreeMap<u64, DiscNode>,
    /// Links.
    pub links: BTreeSet<Link>,
    /// Width and speed label of each link (`4xSDR`).
    pub link_rates: BTreeMap<Link, String>,
}

/// Runs `ibnetdiscover` against `sim` and parses what it prints.
///
/// # Panics
/// When it cannot be run, fails, or prints something unparsable.
#[must_use]
pub fn run(sim: &IbSim) -> Discovered {
    let out = sim.umad2sim_output("ibnetdiscover", [""; 0]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ibnetdiscover failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        sim.output()
    );
    parse(&stdout).unwrap_or_else(|e| panic!("unparsable ibnetdiscover output: {e}\n{stdout}"))
}

fn hex(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let s = s.strip_prefix("0x").unwrap_or(s);
    u64::from_str_radix(s, 16).map_err(|e| format!("bad hex {s:?}: {e}"))
}

/// `"S-0000000000200000"` -> node GUID.
fn node_id(s: &str) -> Result<u64, String> {
    let inner = s.trim().trim_matches('"');
    let (_, g) = inner
        .split_once('-')
        .ok_or_else(|| format!("bad node id {s:?}"))?;
    hex(g)
}

/// Splits off a leading `OPEN...CLOSE` (after white space), returning
/// (inside, rest); `what` names the expected item in the error.
fn delimited<'a>(
    s: &'a str,
    open: char,
    close: char,
    what: &str,
) -> Result<(&'a str, &'a str), String> {
    let s = s.trim_start();
    let body = s
        .strip_prefix(open)
        .ok_or_else(|| format!("expected {what} at {s:?}"))?;
    let end = body
        .find(close)
        .ok_or_else(|| format!("no closing {close:?} in {s:?}"))?;
    Ok((&body[..end], &body[end + 1..]))
}

/// Splits off a leading `"..."`, returning (inside, rest).
fn quoted(s: &str) -> Result<(&str, &str), String> {
    delimited(s, '"', '"', "a quoted string")
}

/// Splits off a leading `[N]`.
fn bracket(s: &str) -> Result<(u8, &str), String> {
    let (n, rest) = delimited(s, '[', ']', "[port]")?;
    let n = n.parse().map_err(|e| format!("bad port {n:?}: {e}"))?;
    Ok((n, rest))
}

/// Splits off an optional leading `(hex)`.
fn paren_guid(s: &str) -> Result<(Option<u64>, &str), String> {
    match s.strip_prefix('(') {
        Some(body) => {
            let end = body
                .find(')')
                .ok_or_else(|| format!("unterminated ( in {s:?}"))?;
            Ok((Some(hex(&body[..end])?), &body[end + 1..]))
        }
        None => Ok((None, s)),
    }
}

/// Parses ibnetdiscover's default output.
///
/// # Errors
/// A line that does not have the expected shape.
pub fn parse(text: &str) -> Result<Discovered, String> {
    let mut d = Discovered::default();
    let mut current: Option<u64> = None;
    // Remote port GUIDs (printed after a remote port), applied at the end
    // when every node record is known.
    let mut remote_port_guids: Vec<(u64, u8, u64)> = Vec::new();
    for line in text.lines() {
        let l = line.trim_end();
        if l.is_empty() || l.starts_with('#') || l.contains('=') && !l.starts_with('[') {
            continue;
        }
        if l.starts_with("Switch") || l.starts_with("Ca") || l.starts_with("Rt") {
            let (kind, rest) = l.split_once(char::is_whitespace).ok_or("bad node line")?;
            let rest = rest.trim_start();
            let (nports, rest) = rest
                .split_once(char::is_whitespace)
                .ok_or("bad node line")?;
            let (id, rest) = quoted(rest)?;
            let guid = node_id(id)?;
            let comment = rest.split_once('#').map_or("", |(_, c)| c);
            let desc = quoted(comment)
                .map(|(d, _)| d.to_owned())
                .unwrap_or_default();
            d.nodes.insert(
                guid,
                DiscNode {
                    kind: kind.to_owned(),
                    num_ports: nports
                        .parse()
                        .map_err(|e| format!("bad port count in {l:?}: {e}"))?,
                    desc,
                    port_guids: BTreeMap::new(),
                },
            );
            current = Some(guid);
            continue;
        }
        if l.starts_with('[') {
            let guid = current.ok_or_else(|| format!("port line before any node: {l:?}"))?;
            let (port, rest) = bracket(l)?;
            let (pguid, rest) = paren_guid(rest)?;
            let (rid, rest) = quoted(rest)?;
            let rguid = node_id(rid)?;
            let (rport, rest) = bracket(rest)?;
            let (rpguid, rest) = paren_guid(rest)?;
            let rate = rest
                .split_once('#')
                .and_then(|(_, c)| c.split_whitespace().last())
                .unwrap_or("")
                .to_owned();
            if let Some(n) = d.nodes.get_mut(&guid) {
                if let Some(g) = pguid {
                    n.port_guids.insert(port, g);
                }
            }
            let link = Link::new((guid, port), (rguid, rport));
            d.links.insert(link);
            d.link_rates.insert(link, rate);
            if let Some(g) = rpguid {
                remote_port_guids.push((rguid, rport, g));
            }
            continue;
        }
        return Err(format!("unexpected line {l:?}"));
    }
    for (g, p, pg) in remote_port_guids {
        if let Some(n) = d.nodes.get_mut(&g) {
            n.port_guids.entry(p).or_insert(pg);
        }
    }
    Ok(d)
}
