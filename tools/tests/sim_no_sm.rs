//! `mad sim --serve NAME --no-sm`: the built-in fabric with no SM of its
//! own, every port in Initialize, brought up by another process over
//! ibsim's protocol: OpenSM 3.3 under libumad2sim (then `mad --ibsim`
//! commands see OpenSM's LIDs, as its guid2lid file lists them, and its
//! routes), and `mad --ibsim sm`. And `mad --sim --no-sm COMMAND`, the
//! same fabric in the command's own process: `sm` brings it up there,
//! other commands see it unconfigured. Every process is stopped by its PID
//! (the served fabric by `quit` on its console, then reaped). Outside
//! CI a missing OpenSM / libumad2sim makes these tests print "NOT RUN";
//! with `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use support::diags::ibnetdiscover_lids;
use support::opensm::{require_sbin, sbin, OpenSm, NEEDS_OPENSM};
use support::served::Served;

const MAD: &str = env!("CARGO_BIN_EXE_mad");
const TOPOLOGY: &str = "net.medium";

fn served(tag: &str) -> Served {
    let topo = support::topologies_dir().join(TOPOLOGY);
    Served::start_with(Path::new(MAD), tag, &[topo.to_str().unwrap(), "--no-sm"])
}

/// `mad --ibsim ibnetdiscover` on the served fabric: port GUID (switch:
/// node GUID) -> LID.
fn lids(s: &Served) -> BTreeMap<u64, u16> {
    let o = s.mad(&["ibnetdiscover"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    ibnetdiscover_lids(&text)
}

/// `mad --ibsim ibtracert A B` reaches B.
fn traces(s: &Served, a: u16, b: u16) {
    let o = s.mad(&["ibtracert", &a.to_string(), &b.to_string()]);
    let text = String::from_utf8_lossy(&o.stdout);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        o.status.success() && last.starts_with("To ") && last.contains(&format!(" lid {b}-{b} ")),
        "ibtracert {a} {b}:\n{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn without_sm_the_served_fabric_has_no_lids() {
    let s = served("bare");
    let l = lids(&s);
    assert_eq!(l.len(), 351);
    assert!(l.values().all(|v| *v == 0), "a LID without an SM: {l:?}");
}

#[test]
fn opensm_brings_up_the_served_fabric_without_sm() {
    if !require_sbin(NEEDS_OPENSM) {
        return;
    }
    let s = served("osm");
    let osm = OpenSm::start_cmd(
        s.umad2sim_command(sbin("opensm").to_str().unwrap()),
        "",
        Duration::from_secs(60),
    );
    let seen = lids(&s);
    assert_eq!(seen.len(), 351);
    assert!(
        seen.values().all(|v| *v != 0),
        "ports left without a LID: {seen:?}"
    );
    // OpenSM's own record of the LIDs it gave (its guid2lid cache file:
    // "0xGUID FIRST_LID LAST_LID" lines) is what the fabric holds.
    let g2l = std::fs::read_to_string(osm.dir().join("guid2lid")).unwrap();
    let mut checked = 0;
    for line in g2l.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 2 {
            continue;
        }
        let guid = u64::from_str_radix(w[0].trim_start_matches("0x"), 16).unwrap();
        let lid = u16::from_str_radix(w[1].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(
            seen.get(&guid),
            Some(&lid),
            "GUID {guid:#x}: OpenSM gave LID {lid}"
        );
        checked += 1;
    }
    assert_eq!(checked, 351, "guid2lid:\n{g2l}");
    let o = s.mad(&["sminfo"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("SMINFO_MASTER"), "{text}");
    // CA port GUIDs are 0x10xxxx, switches' 0x20xxxx in this fabric.
    let cas: Vec<u16> = seen
        .iter()
        .filter(|(g, _)| **g < 0x20_0000)
        .map(|(_, l)| *l)
        .collect();
    let hosts = [
        cas[0],
        cas[cas.len() / 3],
        cas[cas.len() / 2],
        cas[cas.len() - 1],
    ];
    for (i, a) in hosts.iter().enumerate() {
        for b in &hosts[i + 1..] {
            traces(&s, *a, *b);
        }
    }
    drop(osm);
}

#[test]
fn mad_sm_brings_up_the_served_fabric_without_sm() {
    let s = served("madsm");
    let o = s.mad(&["sm", "-o"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("] SUBNET UP\n"), "{err}");
    let seen = lids(&s);
    assert!(
        seen.values().all(|v| *v != 0),
        "ports left without a LID: {seen:?}"
    );
    let l: Vec<u16> = seen.values().copied().collect();
    traces(&s, l[0], l[l.len() - 1]);
}

/// `mad --sim=net.medium --no-sm ARGS...`.
fn in_process(args: &[&str]) -> std::process::Output {
    let topo = support::topologies_dir().join(TOPOLOGY);
    let sim = format!("--sim={}", topo.display());
    std::process::Command::new(MAD)
        .arg(&sim)
        .arg("--no-sm")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn mad_sm_brings_up_the_in_process_fabric_without_sm() {
    let o = in_process(&["--json", "sm", "-o"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let events: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let done = events
        .iter()
        .find(|e| e["event"] == "sweep_done")
        .unwrap_or_else(|| panic!("no sweep_done: {out}"));
    // Every node got a LID: on a fabric with its own SM there would be
    // nothing to set and no second SM would be Master.
    assert_eq!(done["nodes"], 351, "{out}");
    assert_eq!(done["lids"], 351, "{out}");
    assert_eq!(done["errors"], 0, "{out}");
    assert!(done["sets"].as_u64().unwrap() > 351, "{out}");
    assert!(events.iter().any(|e| e["event"] == "subnet_up"), "{out}");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "state" && e["state"] == "MASTER"),
        "{out}"
    );
}

#[test]
fn without_sm_directed_routes_answer_and_lid_routes_fail_with_a_note() {
    let o = in_process(&["ibnetdiscover"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    let l = ibnetdiscover_lids(&text);
    assert_eq!(l.len(), 351);
    assert!(l.values().all(|v| *v == 0), "a LID without an SM: {l:?}");
    let o = in_process(&["smpquery", "-D", "nodeinfo", "0,1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("NodeType:"));
    let o = in_process(&["smpquery", "-t", "50", "nodeinfo", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(255), "{err}");
    assert!(
        err.contains("without an SM (--no-sm)") && err.contains("LID 0"),
        "{err}"
    );
    let o = in_process(&["saquery"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("there is no SA"),
        "{err}"
    );
}

#[test]
fn no_sm_is_refused_off_the_built_in_fabric_and_sm_on_it_asks_for_it() {
    let o = std::process::Command::new(MAD)
        .args(["--ibsim", "--no-sm", "sminfo"])
        .output()
        .unwrap();
    // sminfo says it on stdout as infiniband-diags' IBEXIT lines go.
    let err = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--no-sm is for the built-in fabric"),
        "{err}"
    );
    let o = std::process::Command::new(MAD)
        .args(["--sim", "sm", "-o"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code() == Some(2) && err.contains("add --no-sm"),
        "{err}"
    );
}
