//! infiniband-diags' Perl scripts over the switches' routes, against the
//! real scripts of infiniband-diags 44 on the same ibsim fabrics routed
//! by OpenSM: `check_lft_balance` on the forwarding tables the real
//! `dump_fts` dumped and the cache the real `ibnetdiscover` wrote (the
//! same files for both; also after skewing the routes of one switch so
//! that it is unbalanced), and its usage errors: same stdout, first line
//! of stderr and exit status.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod diags_compare;

use std::time::Duration;

use diags_compare::{fixture, needs, ours, theirs, Scratch};
use support::opensm::OpenSm;
use support::IbSim;

/// The fabrics compared on.
const FABRICS: &[&str] = diags_compare::FOUR_FABRICS;

/// The dump with every host route of the first switch sent out of its
/// first port that carries one: that switch is unbalanced.
fn skewed(dump: &str) -> String {
    let mut out = String::new();
    let mut section = 0;
    let mut port: Option<String> = None;
    for line in dump.lines() {
        if line.contains("Unicast") {
            section += 1;
        }
        let mut l = line.to_owned();
        if section == 1 && line.contains("portguid") && !line.contains("(Switch") {
            let words: Vec<&str> = line.split(' ').collect();
            if words.len() > 2 && words[2] == ":" {
                let p = port.get_or_insert_with(|| words[1].to_owned()).clone();
                l = format!("{} {p} {}", words[0], words[2..].join(" "));
            }
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// `ours` with `--json`, checked against the command's schema.
fn ours_json(sim: &IbSim, tool: &str, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let r = ours(sim, tool, &a);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("schemas/{tool}.schema.json")),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        jsonschema::validator_for(&schema).unwrap().is_valid(&v),
        "{tool} {args:?}: {v}"
    );
    v
}

/// Compares as [`diags_compare::compare`], except a first stderr line
/// that is the shell's complaint about the script's unquoted command
/// line (a switch name with parentheses, on net.odd-names), which ours,
/// running no shell, has no reason to print.
fn compare_beside_the_shell(
    sim: &IbSim,
    what: &str,
    tool: &str,
    args: &[&str],
    fails: &mut Vec<String>,
) {
    diags_compare::compare_with(sim, what, tool, args, fails, |t, o| {
        (t.stdout.as_str(), t.code) == (o.stdout.as_str(), o.code)
            && (t.stderr_first == o.stderr_first
                || (t.stderr_first.starts_with("sh: ") && o.stderr_first.is_empty()))
    });
}

/// check_lft_balance prints what the real script prints, plain, `-v`,
/// `-e` and `-ve`, on four fabrics routed by OpenSM, also for a switch
/// whose routes were skewed to one port.
#[test]
fn check_lft_balance_matches_infiniband_diags() {
    if !needs(&[
        "check_lft_balance",
        "dump_fts",
        "ibnetdiscover",
        "iblinkinfo",
    ]) {
        return;
    }
    let mut fails = Vec::new();
    let mut unbalanced_seen = false;
    for name in FABRICS {
        let dir = Scratch::new(&format!("lft-{name}"));
        let sim = IbSim::start(fixture(name));
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        let (lft, skew, cache) = (dir.path("lft"), dir.path("skew"), dir.path("cache"));
        let dump = theirs(&sim, "dump_fts", &[]);
        assert_eq!(dump.code, Some(0), "{name}: dump_fts: {dump:?}");
        assert!(dump.stdout.contains("Unicast lids"), "{name}: {dump:?}");
        std::fs::write(&lft, &dump.stdout).unwrap();
        std::fs::write(&skew, skewed(&dump.stdout)).unwrap();
        assert_eq!(
            theirs(&sim, "ibnetdiscover", &["--cache", &cache]).code,
            Some(0)
        );
        for file in [&lft, &skew] {
            for flags in [&[][..], &["-v"], &["-e"], &["-ve"]] {
                let mut args = flags.to_vec();
                args.extend(["-l", file.as_str(), "-i", cache.as_str()]);
                compare_beside_the_shell(&sim, name, "check_lft_balance", &args, &mut fails);
            }
        }
        let r = ours(&sim, "check_lft_balance", &["-l", &skew, "-i", &cache]);
        unbalanced_seen |= r.stdout.starts_with("Unbalanced Switch Port Usage: ");
        // JSON: the same verdicts and counts as the text of `-v`.
        let v = ours_json(&sim, "check_lft_balance", &["-l", &skew, "-i", &cache]);
        let mut text = String::new();
        for sw in v["switches"].as_array().unwrap() {
            let head = if sw["unbalanced"] == true {
                "Unbalanced Switch"
            } else {
                "Switch"
            };
            text.push_str(&format!(
                "{head} Port Usage: {}, {}\n",
                sw["name"].as_str().unwrap(),
                sw["guid"].as_str().unwrap()
            ));
            for p in sw["ports"].as_array().unwrap() {
                text.push_str(&format!(
                    "Port {:03}: {}\n",
                    p["port"].as_u64().unwrap(),
                    p["routes"]
                ));
            }
        }
        let verbose = ours(
            &sim,
            "check_lft_balance",
            &["-v", "-l", &skew, "-i", &cache],
        );
        assert_eq!(text, verbose.stdout, "{name}: {v}");
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
    assert!(unbalanced_seen, "no skewed dump was found unbalanced");
}

/// Missing and unknown options give the script's complaint, usage and
/// exit status; a dump or cache that cannot be read is named and fails
/// (the script goes on without it and exits 0).
#[test]
fn check_lft_balance_usage_errors_match_infiniband_diags() {
    if !needs(&["check_lft_balance"]) {
        return;
    }
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let mut fails = Vec::new();
    for args in [
        &[][..],
        &["-h"],
        &["-x"],
        &["-h", "-x"],
        &["-vx", "-l", "f"],
        &["-l"],
        &["-l", "f"],
        &["-i", "c"],
        &["-lf", "-e", "-i"],
    ] {
        diags_compare::compare(&sim, "usage", "check_lft_balance", args, &mut fails);
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
    let dir = Scratch::new("lft-bad");
    let (lft, cache) = (dir.path("lft"), dir.path("cache"));
    std::fs::write(
        &lft,
        "Unicast lids [0x0-0x1] of switch Lid 1 guid 0x1 (s):\n",
    )
    .unwrap();
    std::fs::write(&cache, "not a cache").unwrap();
    let missing = dir.path("missing");
    let r = ours(&sim, "check_lft_balance", &["-l", &missing, "-i", &cache]);
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr_first,
        format!("Couldn't open dump lfts file: {missing}: No such file or directory")
    );
    let r = ours(&sim, "check_lft_balance", &["-l", &lft, "-i", &cache]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr_first.contains(&cache), "{r:?}");
    assert_eq!(r.stdout, "");
}

/// The switches of a topology file (`ibnetdiscover -g`): GUID text and
/// number of ports.
fn switches(topology: &str) -> Vec<(String, u32)> {
    topology
        .lines()
        .filter(|l| l.starts_with("Switch"))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let ports = w.nth(1)?.parse().ok()?;
            let guid = l.split("\"S-").nth(1)?.split('"').next()?;
            Some((format!("0x{guid}"), ports))
        })
        .collect()
}

/// ibfindnodesusing prints what the real script prints for every port
/// of every switch (and a port beyond the last), by GUID in upper and
/// lower case and without leading zeros, for unknown switches, and for
/// its usage errors, on four fabrics routed by OpenSM; each reads the
/// topology file the other wrote.
#[test]
fn ibfindnodesusing_matches_infiniband_diags() {
    diags_compare::on_each_routed(
        &["ibfindnodesusing", "ibroute", "ibnetdiscover"],
        FABRICS,
        |name, sim, fails| {
            let first = theirs(sim, "ibfindnodesusing", &["-R"]);
            assert_eq!(first.code, Some(2), "{name}: {first:?}");
            let topo =
                std::fs::read_to_string("/var/cache/infiniband-diags/ibnetdiscover--.topology")
                    .unwrap();
            let sws = switches(&topo);
            assert!(!sws.is_empty(), "{name}: no switch in\n{topo}");
            for (guid, ports) in &sws {
                for p in 1..=ports + 1 {
                    let p = p.to_string();
                    diags_compare::compare(sim, name, "ibfindnodesusing", &[guid, &p], fails);
                }
            }
            let (guid, _) = &sws[0];
            let short = format!("0x{}", guid[2..].trim_start_matches('0'));
            let upper = guid.to_uppercase().replace("0X", "0x");
            for args in [
                &[short.as_str(), "1"][..],
                &[upper.as_str(), "1"],
                &["0x1234", "1"],
                &["no-such-switch", "1"],
                &[guid.as_str()],
                &[],
                &["-h"],
                &["-x", guid.as_str(), "1"],
                &["-C"],
            ] {
                diags_compare::compare(sim, name, "ibfindnodesusing", args, fails);
            }
            // JSON: the host lists of the text, without the empty first name.
            let v = ours_json(sim, "ibfindnodesusing", &[guid, "1"]);
            let text = ours(sim, "ibfindnodesusing", &[guid, "1"]).stdout;
            let lines: Vec<&str> = text.lines().collect();
            for (key, line) in [("out", lines[1]), ("back", lines[4])] {
                let hosts: Vec<&str> = v[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| h.as_str().unwrap())
                    .collect();
                let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
                assert_eq!(
                    hosts
                        .join(" ")
                        .split(' ')
                        .filter(|w| !w.is_empty())
                        .collect::<Vec<_>>(),
                    words,
                    "{name}: {v}"
                );
            }
            assert_eq!(v["switch"]["guid"], guid.as_str());
            // Ours regenerates; the script reads ours.
            let _ = ours(sim, "ibfindnodesusing", &["-R"]);
            diags_compare::compare(sim, name, "ibfindnodesusing", &[guid, "1"], fails);
        },
    );
}

/// A dump of one switch (not in any fabric) with `counts[i]` hosts routed
/// out of port i + 1.
fn synthetic_dump(counts: &[u32]) -> String {
    let mut s = String::from(
        "Unicast lids [0x1-0x400] of switch Lid 7 guid 0x00000000deadbeef (big switch):\n  Lid  Out   Destination\n       Port     Info \n",
    );
    let mut lid = 1;
    for (i, &n) in counts.iter().enumerate() {
        for _ in 0..n {
            s.push_str(&format!(
                "0x{lid:04x} {:03} : (Channel Adapter portguid 0x{:016x}: 'node{lid}')\n",
                i + 1,
                0x0010_0000 + lid
            ));
            lid += 1;
        }
    }
    s.push_str(&format!("{} valid lids dumped \n", lid - 1));
    s
}

/// `-e`'s heuristics on a switch of more than 12 used ports (a leaf
/// switch whose host half is balanced, and one that is not): the same
/// verdicts as the real script. The switch is in no cache, so neither
/// learns anything from iblinkinfo (the script's iblinkinfo complains on
/// stderr; stdout and status are compared).
#[test]
fn check_lft_balance_heuristics_match_infiniband_diags() {
    if !needs(&["check_lft_balance", "ibnetdiscover", "iblinkinfo"]) {
        return;
    }
    let dir = Scratch::new("lft-heuristics");
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let cache = dir.path("cache");
    assert_eq!(
        theirs(&sim, "ibnetdiscover", &["--cache", &cache]).code,
        Some(0)
    );
    let mut fails = Vec::new();
    let mut verdicts = Vec::new();
    for counts in [
        &[9, 9, 9, 9, 9, 9, 9, 3, 4, 3, 4, 3, 4, 3][..],
        &[9, 9, 9, 9, 9, 9, 9, 1, 4, 3, 6, 3, 4, 3],
        &[5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 5],
        &[2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 9],
    ] {
        let lft = dir.path("lft");
        std::fs::write(&lft, synthetic_dump(counts)).unwrap();
        for flags in [&[][..], &["-e"], &["-ve"]] {
            let mut args = flags.to_vec();
            args.extend(["-l", lft.as_str(), "-i", cache.as_str()]);
            let t = theirs(&sim, "check_lft_balance", &args);
            let o = ours(&sim, "check_lft_balance", &args);
            if (&t.stdout, t.code) != (&o.stdout, o.code) {
                fails.push(format!(
                    "{counts:?} {flags:?}\n--- infiniband-diags:\n{}--- ours:\n{}",
                    t.stdout, o.stdout
                ));
            }
            verdicts.push(o.stdout.starts_with("Unbalanced"));
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
    // Balanced by -e only, unbalanced with it, balanced, a 13-port case.
    assert_eq!(verdicts[..6], [true, false, false, true, true, true]);
}

/// Under their own names (symlinks to `mad` found in PATH, so that
/// argv[0] is the bare name as the scripts' `basename $0`), the usage
/// names the script; `--json` failures are the JSON error.
#[test]
fn the_scripts_answer_to_their_own_names() {
    let dir = Scratch::new("route-names");
    for (tool, args, usage) in [
        (
            "check_lft_balance",
            &[][..],
            "Usage: check_lft_balance -l lft-output -i ibnetdiscover-cache [-e] [-v]\n",
        ),
        (
            "ibfindnodesusing",
            &["-h"],
            "Usage: ibfindnodesusing [-R -C <ca_name> -P <ca_port>] <switch_guid|switch_name> <port>\n",
        ),
    ] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mad"), dir.0.join(tool)).unwrap();
        let o = std::process::Command::new(tool)
            .args(args)
            .env("PATH", &dir.0)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{tool}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with(usage), "{tool}: {out}");
    }
    let missing = dir.path("missing");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mad"))
        .args([
            "--json",
            "check_lft_balance",
            "-l",
            &missing,
            "-i",
            &missing,
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["complete"], false);
    assert!(
        v["error"]["message"].as_str().unwrap().contains(&missing),
        "{v}"
    );
}
