//! `mad check-routes` (the binary) on the routes of three SMs: the
//! built-in fabric's SM-lite with each routing engine (`--sim`, `-R`),
//! and OpenSM 3.3.23 on ibsim (read through `--ibsim`). On every fixture
//! fabric `updn` and `ftree` routes have no cycle in the channel
//! dependency graph and connect every CA pair; on the 4x4 torus min-hop
//! routes have one (a credit loop), OpenSM's as mad sm's, and `updn`
//! routes, OpenSM's given a root_guid_file, have none; OpenSM's `ftree`
//! routes on the fat trees have none. Each ibsim / OpenSM started is
//! stopped by its PID (their guards). Outside CI a missing ibsim /
//! OpenSM / libumad2sim makes the OpenSM tests print "NOT RUN"; with
//! `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use support::opensm::{require_sbin, OpenSm, NEEDS_OPENSM};
use support::IbSim;

const MAD: &str = env!("CARGO_BIN_EXE_mad");

/// The fat-tree fixtures (ftree must route them itself).
const FAT_TREES: &[&str] = &["net.medium", "net.large", "net.large3", "net.ft3-k8"];

fn fixture(name: &str) -> PathBuf {
    let in_tools = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topologies");
    let p = in_tools.join(name);
    if p.is_file() {
        p
    } else {
        support::topologies_dir().join(name)
    }
}

/// Every fixture fabric: the shared ones and the tools' own.
fn every_fixture() -> Vec<PathBuf> {
    let mut v = support::topology_files();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topologies");
    let mut own: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    own.sort();
    v.extend(own);
    v
}

/// `mad --sim=FILE check-routes --json EXTRA`: (exit status, the JSON,
/// stderr).
fn sim_check(file: &std::path::Path, extra: &[&str]) -> (i32, Value, String) {
    let out = Command::new(MAD)
        .arg(format!("--sim={}", file.display()))
        .args(["check-routes", "--json"])
        .args(extra)
        .output()
        .unwrap();
    parse(&out)
}

fn parse(out: &Output) -> (i32, Value, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}); stderr: {stderr}"));
    (out.status.code().unwrap_or(-1), v, stderr)
}

/// `mad --ibsim check-routes --json` on `sim`.
fn ibsim_check(sim: &IbSim) -> (i32, Value, String) {
    let out = sim
        .mad_command(MAD, &["check-routes", "--json"])
        .output()
        .unwrap();
    parse(&out)
}

fn deadlock_free(v: &Value) -> bool {
    v["deadlock_free"].as_bool().unwrap()
}

fn assert_clean(what: &str, (code, v, err): &(i32, Value, String)) {
    assert!(
        deadlock_free(v),
        "{what}: cycle {}; stderr: {err}",
        v["cycle"]
    );
    assert_eq!(v["unreachable"], 0, "{what}: {}", v["unreachable_examples"]);
    assert!(v["pairs"].as_u64().unwrap() > 0, "{what}: no pair checked");
    assert_eq!(*code, 0, "{what}: {err}");
}

#[test]
fn min_hop_on_the_torus_has_a_cycle_and_updn_has_none_builtin_sm() {
    let torus = fixture("net.torus4x4");
    let (code, v, err) = sim_check(&torus, &[]);
    assert!(!deadlock_free(&v), "min-hop on the 4x4 torus: no cycle");
    assert!(v["cycle"].as_array().unwrap().len() >= 2);
    assert_eq!(v["unreachable"], 0);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cycle of"), "{err}");
    let r = sim_check(&torus, &["-R", "updn"]);
    assert_clean("updn on the torus", &r);
    // OpenSM's root rule finds none on a torus: the SM names its choice.
    assert!(r.2.contains("most central switch"), "{}", r.2);
    assert!(r.2.contains("routing engine updn routed"), "{}", r.2);
}

#[test]
fn ftree_on_a_torus_says_so_and_falls_back_builtin_sm() {
    let r = sim_check(&fixture("net.torus3x3"), &["-R", "ftree,updn"]);
    assert!(r.2.contains("ftree: not a fat tree"), "{}", r.2);
    assert!(r.2.contains("routing engine updn routed"), "{}", r.2);
    assert_clean("ftree,updn on the 3x3 torus", &r);
}

#[test]
fn updn_routes_have_no_cycle_on_every_fixture_builtin_sm() {
    let files = every_fixture();
    assert!(files.len() >= 14, "{files:?}");
    for f in files {
        let r = sim_check(&f, &["-R", "updn"]);
        assert_clean(&format!("updn on {}", f.display()), &r);
    }
}

#[test]
fn ftree_routes_the_fat_trees_without_cycles_builtin_sm() {
    for name in FAT_TREES {
        let r = sim_check(&fixture(name), &["-R", "ftree"]);
        assert!(
            r.2.contains("routing engine ftree routed"),
            "{name}: {}",
            r.2
        );
        assert_clean(&format!("ftree on {name}"), &r);
        // Balanced: every leaf's uplinks carry the same number of routes
        // (within one).
        for s in r.1["per_switch"].as_array().unwrap() {
            let ups: Vec<u64> = s["ports"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["to"] == "switch")
                .map(|p| p["routes"].as_u64().unwrap())
                .collect();
            let has_ca = s["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["to"] == "ca");
            if has_ca {
                let (lo, hi) = (ups.iter().min().unwrap(), ups.iter().max().unwrap());
                assert!(hi - lo <= 1, "{name}: leaf {} uplinks {ups:?}", s["name"]);
            }
        }
        // And the traffic: uniform all-to-all spreads over every spine
        // port, none idle, none with more than twice another's pairs (as
        // OpenSM's ftree: 48-60 on net.ft3-k8, 972-1278 on net.large3;
        // counting LFT entries alone left some at 0 and others at 192).
        let spine_pairs: Vec<u64> = r.1["per_switch"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| {
                s["ports"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|p| p["to"] == "switch")
            })
            .flat_map(|s| s["ports"].as_array().unwrap().iter())
            .map(|p| p["pairs"].as_u64().unwrap())
            .collect();
        let (lo, hi) = (
            *spine_pairs.iter().min().unwrap(),
            *spine_pairs.iter().max().unwrap(),
        );
        assert!(
            lo > 0 && hi <= 2 * lo,
            "{name}: spine ports carry {lo} to {hi} pairs"
        );
    }
}

#[test]
fn bad_options_are_refused_naming_them() {
    let out = Command::new(MAD)
        .args(["--sim", "check-routes", "-R", "lash"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'lash'"));
    let out = Command::new(MAD)
        .args(["--ibsim", "check-routes", "-R", "updn"])
        .env("IBSIM_SOCKNAME", "madstack-no-such-ibsim")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("built-in fabric"));
    let dir = std::env::temp_dir().join(format!("check-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let roots = dir.join("roots");
    std::fs::write(&roots, "0x10\nnot-a-guid\n").unwrap();
    let out = Command::new(MAD)
        .args(["--sim", "check-routes", "-R", "updn", "-a"])
        .arg(&roots)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2") && err.contains("not-a-guid"),
        "{err}"
    );
    assert_ne!(out.status.code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

fn needs_opensm() -> bool {
    require_sbin(NEEDS_OPENSM)
}

/// OpenSM (with `conf`) on a fresh ibsim of `name`, checked.
fn opensm_check(name: &str, conf: &str) -> ((i32, Value, String), String) {
    let sim = IbSim::start(fixture(name));
    let sm = OpenSm::start(&sim, conf, Duration::from_secs(120));
    let r = ibsim_check(&sim);
    let log = sm.log();
    drop(sm);
    drop(sim);
    (r, log)
}

#[test]
fn opensm_min_hop_on_the_torus_has_a_cycle_and_its_updn_with_a_root_has_none() {
    if !needs_opensm() {
        return;
    }
    let ((code, v, err), log) = opensm_check("net.torus4x4", "");
    assert!(
        log.contains("minhop tables configured on all switches"),
        "{log}"
    );
    assert!(!deadlock_free(&v), "OpenSM min-hop on the torus: no cycle");
    assert_eq!(v["unreachable"], 0, "{}", v["unreachable_examples"]);
    assert_eq!(code, 1, "{err}");
    // The root: switch r1c1 (its GUID as ibsim gives it).
    let guid = v["per_switch"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "torus sw r1c1")
        .map(|s| s["guid"].as_str().unwrap().to_owned())
        .unwrap();
    let dir = std::env::temp_dir().join(format!("check-routes-osm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let roots = dir.join("roots");
    std::fs::write(&roots, format!("{guid}\n")).unwrap();
    let (r, log) = opensm_check(
        "net.torus4x4",
        &format!("routing_engine updn\nroot_guid_file {}\n", roots.display()),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        log.contains("updn tables configured on all switches")
            && !log.contains("no root nodes were found"),
        "OpenSM did not route by updn with the root:\n{log}"
    );
    assert_clean("OpenSM updn with a root on the torus", &r);
}

#[test]
fn opensm_ftree_on_the_fat_trees_has_no_cycle() {
    if !needs_opensm() {
        return;
    }
    for name in ["net.ft3-k8", "net.medium"] {
        let (r, log) = opensm_check(name, "routing_engine ftree\n");
        assert!(
            log.contains("ftree tables configured on all switches"),
            "{name}: OpenSM did not route by ftree:\n{log}"
        );
        assert_clean(&format!("OpenSM ftree on {name}"), &r);
    }
}

/// `mad --ibsim sm -o EXTRA` on `sim` (one sweep, then exit): its
/// stderr (the log) once it exited 0.
fn mad_sm_once(sim: &IbSim, extra: &[&str]) -> String {
    let out = Command::new(MAD)
        .args(["--ibsim", "sm", "-o"])
        .args(extra)
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env_remove("SIM_HOST")
        .env_remove("IBSIM_SERVER_NAME")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "mad sm -o {extra:?}: {log}");
    log
}

#[test]
fn mad_sm_routing_engines_program_ibsim_without_cycles() {
    if !support::require(support::NEEDS_IBSIM) {
        return;
    }
    // Min-hop on the torus: the cycle, read back from ibsim's switches.
    let sim = IbSim::start(fixture("net.torus4x4"));
    mad_sm_once(&sim, &[]);
    let (code, v, _) = ibsim_check(&sim);
    assert!(!deadlock_free(&v) && code == 1);
    // updn over the same fabric: the tables it rewrites have none.
    let log = mad_sm_once(&sim, &["-R", "updn"]);
    assert!(log.contains("most central switch"), "{log}");
    assert!(
        log.contains("routing engine updn routed the fabric"),
        "{log}"
    );
    assert_clean("mad sm -R updn on the ibsim torus", &ibsim_check(&sim));
    drop(sim);
    // ftree first in the list: on the torus it says why and updn routes.
    let sim = IbSim::start(fixture("net.torus3x3"));
    let log = mad_sm_once(&sim, &["--routing_engine", "ftree,updn"]);
    assert!(log.contains("ftree: not a fat tree"), "{log}");
    assert!(
        log.contains("routing engine updn routed the fabric"),
        "{log}"
    );
    assert_clean(
        "mad sm -R ftree,updn on the ibsim 3x3 torus",
        &ibsim_check(&sim),
    );
    drop(sim);
    // ftree on a 3-level fat tree.
    let sim = IbSim::start(fixture("net.ft3-k8"));
    let log = mad_sm_once(&sim, &["-R", "ftree"]);
    assert!(
        log.contains("routing engine ftree routed the fabric"),
        "{log}"
    );
    assert_clean(
        "mad sm -R ftree on the ibsim 3-level fat tree",
        &ibsim_check(&sim),
    );
}

#[test]
fn mad_sim_routes_its_served_fabric_with_the_engine_asked_for() {
    use support::served::Served;
    let torus = fixture("net.torus4x4");
    let t = torus.to_str().unwrap();
    let mad = std::path::Path::new(MAD);
    // Min-hop (the default): the cycle, read through the served fabric.
    let s = Served::start_with(mad, "minhop", &[t]);
    let (code, v, _) = parse(&s.mad(&["check-routes", "--json"]));
    assert!(!deadlock_free(&v) && code == 1);
    drop(s);
    let s = Served::start_with(mad, "updn", &[t, "-R", "updn"]);
    assert_clean(
        "mad sim -R updn, served",
        &parse(&s.mad(&["check-routes", "--json"])),
    );
    drop(s);
    // -R without an SM is refused.
    let out = Command::new(MAD)
        .args(["sim", "--no-sm", "-R", "updn", t])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-sm"));
}

/// `-l 2` on the built-in fabric: SM-lite gives every CA port four LIDs
/// and the check reads the LMC back from the fabric and follows every
/// LID of every range (four times the pairs of LMC 0), with no cycle
/// under ftree; an LMC over 7 is refused naming the option.
#[test]
fn lmc_2_routes_and_checks_every_lid_of_a_range_builtin_sm() {
    let medium = fixture("net.medium");
    let base = sim_check(&medium, &["-R", "ftree"]);
    assert_clean("ftree", &base);
    let r = sim_check(&medium, &["-R", "ftree", "-l", "2"]);
    assert_clean("ftree -l 2", &r);
    assert_eq!(r.1["ca_ports"], 324);
    assert_eq!(base.1["pairs"], 324 * 323);
    assert_eq!(r.1["pairs"], 324 * 323 * 4);
    let r = sim_check(&medium, &["-l", "2"]);
    assert_eq!(r.1["pairs"], 324 * 323 * 4, "min-hop: {}", r.2);
    assert_eq!(r.1["unreachable"], 0);
    for bad in ["8", "x", "-1"] {
        let out = Command::new(MAD)
            .args(["--sim", "check-routes", "-l", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("--lmc") && err.contains("0-7"), "{err}");
    }
}
