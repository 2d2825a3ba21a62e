//! Running infiniband-diags under libumad2sim against an [`IbSim`] and
//! reading what they print: one run ([`diag`]), several at once
//! ([`diags_parallel`]), the LIDs in `ibnetdiscover`'s output, the
//! entries of an `ibroute` (or `dump_lfts.sh`) table, a field of
//! `smpquery`'s output.

use std::collections::{BTreeMap, VecDeque};
use std::process::Command;

use super::IbSim;

/// Runs a diag tool under libumad2sim; returns its stdout, panicking
/// with its output when it fails.
pub fn diag(sim: &IbSim, program: &str, args: &[&str]) -> String {
    let out = sim.umad2sim_output(program, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{program} {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Starts several diag tool runs at once (a few at a time, ibsim takes
/// 10 clients and SM-lite holds one) and returns their outputs in order.
pub fn diags_parallel(sim: &IbSim, program: &str, arg_sets: &[Vec<String>]) -> Vec<String> {
    let mut out = vec![String::new(); arg_sets.len()];
    let mut running: VecDeque<(usize, std::process::Child)> = VecDeque::new();
    let mut next = 0;
    while next < arg_sets.len() || !running.is_empty() {
        while next < arg_sets.len() && running.len() < 6 {
            let mut c: Command = sim.umad2sim_command(program);
            c.args(&arg_sets[next])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            running.push_back((next, c.spawn().expect("spawn a diag")));
            next += 1;
        }
        let (k, child) = running.pop_front().expect("one running");
        let mut o = child.wait_with_output().expect("wait for a diag");
        // A run libumad2sim failed to attach never reached the fabric:
        // it is made again, one at a time.
        if super::umad2sim_not_attached(&o) {
            o = sim.umad2sim_output(program, &arg_sets[k]);
        }
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{program} {:?} failed ({}):\n{stdout}\n{}",
            arg_sets[k],
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        out[k] = stdout;
    }
    out
}

/// LIDs as ibnetdiscover prints them: switch node GUID -> LID (from
/// `base port 0 lid N`) and CA port GUID -> LID (from a CA port line's
/// `# lid N`).
pub fn ibnetdiscover_lids(text: &str) -> BTreeMap<u64, u16> {
    let num_after = |s: &str, key: &str| -> Option<u16> {
        let (_, rest) = s.split_once(key)?;
        rest.split_whitespace().next()?.parse().ok()
    };
    let mut lids = BTreeMap::new();
    let mut in_ca = false;
    for l in text.lines() {
        if l.starts_with("Switch") {
            in_ca = false;
            let id = l.split('"').nth(1).expect("a quoted node id");
            let guid =
                u64::from_str_radix(id.split_once('-').expect("S-GUID").1, 16).expect("a hex GUID");
            let lid = num_after(l, "base port 0 lid ").unwrap_or(0);
            lids.insert(guid, lid);
        } else if l.starts_with("Ca") {
            in_ca = true;
        } else if in_ca && l.starts_with('[') {
            let pg = l
                .split_once('(')
                .expect("(GUID)")
                .1
                .split_once(')')
                .expect("(GUID)")
                .0;
            let guid = u64::from_str_radix(pg, 16).expect("a hex port GUID");
            let comment = l.split_once('#').expect("a # lid comment").1;
            lids.insert(guid, num_after(comment, "lid ").unwrap_or(0));
        }
    }
    lids
}

/// `ibroute` lines `0x0001 000 : (...)` -> (LID, port).
pub fn ibroute_entries(text: &str) -> BTreeMap<u16, u8> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let lid = u16::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            let port = w.next()?.parse().ok()?;
            (w.next()? == ":").then_some((lid, port))
        })
        .collect()
}

/// `Name:.....value` -> value, from smpquery-style output.
pub fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim_start_matches('.'))
}
