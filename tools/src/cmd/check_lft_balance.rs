//! `check_lft_balance` (infiniband-diags' `check_lft_balance.pl`): reads
//! a dump of the switches' unicast forwarding tables (what `dump_fts` /
//! `dump_lfts` print: `-l FILE`) and an ibnetdiscover cache (`-i FILE`),
//! counts the LIDs each switch routes out of each port (1 to 36), and
//! prints the switches whose port usage is unbalanced (a port carrying
//! more than one route over another), or every switch with `-v`. `-e`
//! adds the script's two heuristics (leaf switches with about half their
//! ports balanced, and partly populated switches). Options as the script
//! (Perl's `Getopt::Std`); its line patterns are used as they are.
//!
//! The script asks `iblinkinfo --load-cache CACHE -S GUID` which ports
//! are up and what they connect to; this reads the cache itself (a port
//! is up unless iblinkinfo would print it `Down`).
//!
//! # `--json` (stable shape)
//! ```json
//! {"command": "check_lft_balance", "version": "0.1.0", "complete": true,
//!  "switches": [{"guid": "0x...", "name": "...", "unbalanced": false,
//!                "ports": [{"port": 1, "routes": 3}]}]}
//! ```
//! Every switch of the dump, with the ports the text lists for it.

use std::collections::HashMap;

use mad_core::wire::attr::PortState;
use regex::Regex;

use crate::command::{CliError, Invocation};
use crate::discover::model::Fabric;
use crate::ibdiag::getopt_std::{script_options, Script};
use crate::ibdiag::{self, fabric::cached_discovery};
use crate::json::{Json, JsonExt};

/// The script's usage text (on stdout, exit status 2).
fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog} -l lft-output -i ibnetdiscover-cache [-e] [-v]\n  Generate lft-output via \"dump_lfts.sh > lft-output\"\n  Generate ibnetdiscover-cache via \"ibnetdiscover --cache ibnetdiscover-cache\"\n  -e turn on heuristic(s) to look at switch balances deeper\n  -v verbose output, output all switches\n"
    )
}

/// Perl's numeric value of a string: leading blanks, then the longest
/// decimal number there (0 when there is none).
fn perl_num(s: &str) -> f64 {
    let t = s.trim_start();
    let mut end = 0;
    let b = t.as_bytes();
    if matches!(b.first(), Some(b'+' | b'-')) {
        end = 1;
    }
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    end = digits(end);
    if b.get(end) == Some(&b'.') {
        end = digits(end + 1);
    }
    t[..end].parse().unwrap_or(0.0)
}

/// The ports the script looks at, as it names them.
fn port_names() -> impl Iterator<Item = String> {
    (1..=36).map(|p| format!("{p:03}"))
}

/// One switch's section of the dump, as the script's globals hold it.
#[derive(Default)]
struct Section {
    guid: String,
    name: String,
    counts: HashMap<String, u32>,
    maybe_direct_hosts: Vec<String>,
    host: String,
    host_ports: Vec<String>,
    lids_per_port: u32,
    lids_per_port_calculated: u32,
}

impl Section {
    /// `process_host_ports`.
    fn process_host_ports(&mut self) {
        if self.host_ports.len() == self.lids_per_port as usize {
            let first = perl_num(&self.host_ports[0]);
            if self.host_ports.iter().all(|p| perl_num(p) == first) {
                self.maybe_direct_hosts.push(self.host.clone());
            }
        }
    }
}

/// The result for one switch.
struct Usage {
    guid: String,
    name: String,
    unbalanced: bool,
    ports: Vec<(String, u32)>,
}

/// What the script learns from iblinkinfo about one port of the switch:
/// `None` when iblinkinfo prints no line for it, else (up, active, the
/// remote node's description when linked).
fn link(f: Option<&Fabric>, guid: &str, port: &str) -> Option<(bool, bool, Option<String>)> {
    let f = f?;
    // The script hands the text to the shell: anything but one plain
    // word (a name with parentheses or blanks captured along) gets no
    // answer from iblinkinfo.
    if !guid.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let g = crate::cnum::c_strtoul_full(guid)?;
    let i = f.listed().find(|&i| {
        let n = &f.nodes[i];
        n.info.port_guid == g || n.ports.iter().flatten().any(|p| p.guid == g)
    })?;
    let num: u8 = port.parse().ok()?;
    let p = f.nodes[i].port(num)?;
    let state = p.info.as_ref().map(|pi| pi.port_state);
    let remote = p
        .remote
        .map(|r| String::from_utf8_lossy(&f.nodes[r.node].desc).into_owned());
    Some((
        state.is_some_and(|s| s != PortState::DOWN),
        state == Some(PortState::ACTIVE),
        remote,
    ))
}

/// `output_switch_port_usage`.
fn switch_usage(s: &mut Section, f: Option<&Fabric>, heuristic: bool) -> Usage {
    let (mut min, mut max) = (999_999u32, 0u32);
    let mut output = Vec::new();
    let mut on_switch = 0usize;
    for port in port_names() {
        let count = *s.counts.entry(port.clone()).or_insert(0);
        let l = link(f, &s.guid, &port);
        if count == 0 && !l.as_ref().is_some_and(|l| l.0) {
            continue;
        }
        on_switch += 1;
        // `is_directly_connected`: the remote's description and the
        // hosts are compared as Perl numbers (`==`).
        let direct = count == s.lids_per_port
            && !s.maybe_direct_hosts.is_empty()
            && l.as_ref().is_some_and(|l| l.1)
            && {
                let remote = l
                    .as_ref()
                    .and_then(|l| l.2.as_deref())
                    .filter(|d| !d.is_empty())
                    .map_or(0.0, perl_num);
                s.maybe_direct_hosts.iter().any(|h| perl_num(h) == remote)
            };
        if direct {
            continue;
        }
        output.push(port);
        min = min.min(count);
        max = max.max(count);
    }
    let c = |p: &String| s.counts.get(p).copied().unwrap_or(0);
    let mut unbalanced = max > min + 1;
    if heuristic && unbalanced && on_switch > 12 {
        let check: Vec<&String> = output
            .iter()
            .filter(|p| c(p) != max && c(p) + 1 != max && c(p) != 0)
            .collect();
        let half = on_switch / 2;
        if check.len() == half || check.len() == half + 1 || check.len() + 1 == half {
            let min2 = check.iter().map(|p| c(p)).min().unwrap_or(999_999);
            let max2 = check.iter().map(|p| c(p)).max().unwrap_or(0);
            if max2 <= min2 + 1 {
                unbalanced = false;
            }
        }
    }
    // A partly populated switch: the ports below max - 1 all unused.
    if heuristic
        && unbalanced
        && on_switch > 12
        && output
            .iter()
            .filter(|p| c(p) != max && c(p) + 1 != max)
            .all(|p| c(p) == 0)
    {
        unbalanced = false;
    }
    Usage {
        guid: s.guid.clone(),
        name: s.name.clone(),
        unbalanced,
        ports: output.iter().map(|p| (p.clone(), c(p))).collect(),
    }
}

/// The patterns of the script's loop.
struct Patterns {
    dr: Regex,
    lid: Regex,
    host: Regex,
    path: Regex,
}

impl Patterns {
    fn new() -> Result<Self, regex::Error> {
        Ok(Self {
            dr: Regex::new(r"Unicast lids .+ of switch DR path slid .+ guid (.+) \((.+)\)")?,
            lid: Regex::new(r"Unicast lids .+ of switch Lid .+ guid (.+) \((.+)\)")?,
            host: Regex::new(r".+ (.+) : \(.+ portguid .+: '(.+)'\)")?,
            path: Regex::new(r".+ (.+) : \(path #. out of .: portguid .+\)")?,
        })
    }
}

/// Runs the script's loop over the dump.
fn balance(text: &str, f: Option<&Fabric>, heuristic: bool, pat: &Patterns) -> Vec<Usage> {
    let mut out = Vec::new();
    let mut s = Section::default();
    let mut have_switch = false;
    for line in text.lines() {
        if line.contains("Unicast") {
            if !s.host_ports.is_empty() {
                s.process_host_ports();
            }
            if have_switch {
                out.push(switch_usage(&mut s, f, heuristic));
            }
            let (guid, name) = (std::mem::take(&mut s.guid), std::mem::take(&mut s.name));
            s = Section {
                guid,
                name,
                ..Section::default()
            };
            for re in [&pat.dr, &pat.lid] {
                if let Some(c) = re.captures(line) {
                    s.guid = c[1].to_owned();
                    s.name = c[2].to_owned();
                    have_switch = true;
                }
            }
        } else if line.contains("Channel") || line.contains("Router") {
            // A line the pattern misses leaves Perl's $1 and $2 undefined.
            let (port, host) = pat
                .host
                .captures(line)
                .map_or_else(Default::default, |c| (c[1].to_owned(), c[2].to_owned()));
            s.host = host;
            *s.counts.entry(port.clone()).or_insert(0) += 1;
            if !s.host_ports.is_empty() {
                s.process_host_ports();
            }
            s.host_ports = vec![port];
            if s.lids_per_port == 0 {
                s.lids_per_port += 1;
            } else {
                s.lids_per_port_calculated += 1;
            }
        } else if line.contains("path") {
            let port = pat
                .path
                .captures(line)
                .map_or_else(String::new, |c| c[1].to_owned());
            *s.counts.entry(port.clone()).or_insert(0) += 1;
            if s.lids_per_port_calculated == 0 {
                s.lids_per_port += 1;
            }
            s.host_ports.push(port);
        } else if s.lids_per_port != 0 {
            s.lids_per_port_calculated += 1;
        }
    }
    if !s.host_ports.is_empty() {
        s.process_host_ports();
    }
    out.push(switch_usage(&mut s, f, heuristic));
    out
}

/// What the script prints for `usages`.
fn usage_text(usages: &[Usage], verbose: bool) -> String {
    let mut o = String::new();
    for u in usages.iter().filter(|u| verbose || u.unbalanced) {
        let head = if u.unbalanced {
            "Unbalanced Switch"
        } else {
            "Switch"
        };
        o.push_str(&format!("{head} Port Usage: {}, {}\n", u.name, u.guid));
        for (p, n) in &u.ports {
            o.push_str(&format!("Port {p}: {n}\n"));
        }
    }
    o
}

/// What the script prints for the forwarding-table dump `dump` (`-v`:
/// `verbose`, `-e`: `heuristic`), the ports' links read from `fabric`
/// (`None`: iblinkinfo answered nothing).
///
/// # Errors
/// A pattern of the script's that does not compile (none does).
pub fn report(
    dump: &str,
    fabric: Option<&Fabric>,
    verbose: bool,
    heuristic: bool,
) -> Result<String, String> {
    let pat = Patterns::new().map_err(|e| e.to_string())?;
    Ok(usage_text(&balance(dump, fabric, heuristic, &pat), verbose))
}

/// Runs `check_lft_balance`.
///
/// # Errors
/// Usage (exit 2, the script's); a dump or cache that cannot be read
/// (exit 1, naming the file: the script goes on without it).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let Script {
        prog,
        json,
        opts: g,
    } = script_options(inv, "hl:i:ve", usage)?;
    let missing = if g.value('l').is_none() {
        Some("Must specify dump lfts file\n")
    } else if g.value('i').is_none() {
        Some("Must specify ibnetdiscover cache\n")
    } else {
        None
    };
    let (None, Some(lft), Some(cache)) = (missing, g.value('l'), g.value('i')) else {
        inv.io.err(missing.unwrap_or_default());
        inv.io.out(&usage(&prog));
        return Err(CliError::Exit(2));
    };
    let text = std::fs::read(lft).map_err(|e| {
        let e = e.to_string();
        let e = e.split(" (os error").next().unwrap_or(&e).to_owned();
        CliError::Stderr(format!("Couldn't open dump lfts file: {lft}: {e}\n"), 1)
    })?;
    let fabric = cached_discovery(cache).map_err(|e| {
        CliError::Stderr(
            format!("{prog}: cannot load ibnetdiscover cache {cache}: {e}\n"),
            1,
        )
    })?;
    let pat = Patterns::new().map_err(|e| CliError::Stderr(format!("{prog}: {e}\n"), 1))?;
    let usages = balance(
        &String::from_utf8_lossy(&text),
        Some(&fabric.fabric),
        g.has('e'),
        &pat,
    );
    if json {
        let switches = usages.iter().map(|u| {
            let ports = u.ports.iter().map(|(p, n)| {
                Json::obj()
                    .with("port", Json::from(p.parse::<u64>().unwrap_or(0)))
                    .with("routes", Json::from(u64::from(*n)))
            });
            Json::obj()
                .with("guid", Json::from(u.guid.as_str()))
                .with("name", Json::from(u.name.as_str()))
                .with("unbalanced", Json::from(u.unbalanced))
                .with("ports", Json::Array(ports.collect()))
        });
        ibdiag::print_json(
            inv,
            &Json::obj().with("switches", Json::Array(switches.collect())),
        );
        return Ok(());
    }
    let o = usage_text(&usages, g.has('v'));
    inv.io.out(&o);
    Ok(())
}
