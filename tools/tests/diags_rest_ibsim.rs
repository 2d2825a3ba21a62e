//! The rest of infiniband-diags (`iblinkinfo`, ...) against the real
//! tools: ours with `--ibsim` and infiniband-diags 44 under libumad2sim,
//! against the same ibsim fabric, before any SM (every LID 0) and after
//! OpenSM. Compared: stdout byte for byte, the exit status, and the first
//! line of stderr (libumad2sim's own `sim_connect` line left out, the
//! PID in `ibwarn: [PID]` ignored).
//!
//! The fabrics are kept in `tests/fixtures/topologies` (one of ibsim's
//! examples, and one whose node descriptions have spaces, punctuation,
//! UTF-8 and more than 30 bytes). Outside CI a missing ibsim /
//! infiniband-diags / libumad2sim / OpenSM makes these tests print "NOT
//! RUN" and return; with `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod diags_compare;

use std::process::{Command, Stdio};
use std::time::Duration;

use diags_compare::*;
use support::opensm::OpenSm;
use support::IbSim;

/// iblinkinfo's cases on one fabric.
fn iblinkinfo_cases(sim: &IbSim, what: &str, fails: &mut Vec<String>) {
    let (sw, _ca) = some_guids(sim);
    let dir = std::env::temp_dir().join(format!(
        "madstack-iblinkinfo-{}-{}",
        std::process::id(),
        what.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let map = dir.join("map");
    std::fs::write(&map, format!("{sw} \"mapped switch name\"\n")).unwrap();
    let m = map.to_str().unwrap();
    for args in [
        &[][..],
        &["-l"],
        &["-d"],
        &["-p"],
        &["--line", "--additional"],
        &["--switches-only"],
        &["--cas-only"],
        &["-l", "-d", "--cas-only"],
        &["-D", "0"],
        &["-D", "0,3"],
        &["-D", "0,3", "-l"],
        &["-D", "0,3", "--cas-only"],
        &["-D", "0,9"],
        &["-S", "0x1234"],
        &["--node-name-map", m],
        &["--node-name-map", m, "-l"],
        &["-o", "1"],
        &["-t", "0"],
        &["-x"],
        &["--line=1"],
        &["-D"],
    ] {
        compare(sim, what, "iblinkinfo", args, fails);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// iblinkinfo prints what infiniband-diags' prints, with every option
/// this implementation has, on both fixture fabrics, before an SM and
/// after OpenSM.
#[test]
fn iblinkinfo_matches_infiniband_diags() {
    if !needs(&["iblinkinfo"]) {
        return;
    }
    let mut fails = Vec::new();
    for name in FABRICS {
        let sim = IbSim::start(fixture(name));
        iblinkinfo_cases(&sim, &format!("{name} (no SM)"), &mut fails);
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        iblinkinfo_cases(&sim, &format!("{name} (OpenSM)"), &mut fails);
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// Symlinks named like the tools run them, the transport flag and
/// options among their arguments, and report usage errors under that
/// name, as the real ones do.
#[test]
fn tools_run_under_their_own_names() {
    let tools = [
        "iblinkinfo",
        "ibqueryerrors",
        "ibnodes",
        "ibrouters",
        "smpdump",
    ];
    if !needs(&tools) {
        return;
    }
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
    let dir = std::env::temp_dir().join(format!("madstack-rest-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("iblinkinfo", &["-l", "--ibsim"]),
        ("iblinkinfo", &["--ibsim", "-y"]),
        ("ibqueryerrors", &["--ibsim", "-c", "--switch"]),
        ("ibqueryerrors", &["--ibsim", "--bogus"]),
        ("ibnodes", &["--ibsim"]),
        ("ibnodes", &["--ibsim", "-x"]),
        ("ibrouters", &["--ibsim", "-t", "200"]),
        ("ibrouters", &["--ibsim", "-h"]),
        ("smpdump", &["-s", "--ibsim", "-D", "0,1", "16"]),
        ("smpdump", &["--ibsim", "1"]),
    ];
    for (tool, args) in cases {
        let link = dir.join(tool);
        if !link.exists() {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mad"), &link).unwrap();
        }
        let o = Command::new(&link)
            .args(*args)
            .env("IBSIM_SOCKNAME", sim.sockname())
            .env_remove("SIM_HOST")
            .current_dir(&dir)
            .output()
            .unwrap();
        let real: Vec<&str> = args.iter().copied().filter(|a| *a != "--ibsim").collect();
        let t = theirs(&sim, tool, &real);
        let o = summarize(&o);
        assert_eq!(o.stdout, t.stdout, "{tool} {args:?}");
        assert_eq!(o.code, t.code, "{tool} {args:?}");
        // Ours was started by its full path, the real one by its bare
        // name: compare the complaint after the name.
        assert_eq!(
            o.stderr_first.rsplit(": ").next(),
            t.stderr_first.rsplit(": ").next(),
            "{tool} {args:?}"
        );
        // A getopt complaint names the program as started.
        if t.code == Some(2) && !t.stderr_first.is_empty() {
            assert!(o.stderr_first.starts_with(link.to_str().unwrap()), "{o:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compares one case whose output holds counters that move: the real
/// tool before and after ours.
fn compare_bracketed(sim: &IbSim, what: &str, tool: &str, args: &[&str], fails: &mut Vec<String>) {
    let t = theirs(sim, tool, args);
    let o = ours(sim, tool, args);
    let a = theirs(sim, tool, args);
    if t.code != o.code
        || t.stderr_first != o.stderr_first
        || !bracketed(&t.stdout, &o.stdout, &a.stdout)
    {
        fails.push(format!(
            "{what}: {tool} {args:?}\n--- infiniband-diags ({:?}, stderr {:?}):\n{}--- ours ({:?}, stderr {:?}):\n{}--- infiniband-diags again:\n{}",
            t.code, t.stderr_first, t.stdout, o.code, o.stderr_first, o.stdout, a.stdout
        ));
    }
}

/// ibqueryerrors' cases on one fabric.
fn ibqueryerrors_cases(sim: &IbSim, what: &str, fails: &mut Vec<String>) {
    let (sw, _) = some_guids(sim);
    let dir = std::env::temp_dir().join(format!(
        "madstack-ibqueryerrors-{}-{}",
        std::process::id(),
        what.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let map = dir.join("map");
    std::fs::write(&map, format!("{sw} \"mapped switch name\"\n")).unwrap();
    let thres = dir.join("thresholds");
    std::fs::write(
        &thres,
        "# test\nPortRcvSwitchRelayErrors=1000\nSymbolErrorCounter=3\nNotACounter=1\n",
    )
    .unwrap();
    let (m, th) = (map.to_str().unwrap(), thres.to_str().unwrap());
    for args in [
        &[][..],
        &["-r"],
        &["--switch"],
        &["--ca"],
        &["--router"],
        &["--switch", "--ca"],
        &["-c"],
        &["-s", "PortXmitWait,SymbolErrorCounter,Bogus"],
        &["-D", "0"],
        &["-D", "0,3"],
        &["-D", "0,9"],
        &["-G", "0x1234"],
        &["--skip-sl"],
        &["--skip-sl", "-r", "--ca"],
        &["--node-name-map", m],
        &["--threshold-file", th],
        &["--threshold-file", "/nonexistent"],
        &["-R", "-o", "2"],
        &["-x"],
        &["--data=1"],
    ] {
        compare(sim, what, "ibqueryerrors", args, fails);
    }
    for args in [
        &["--data"][..],
        &["--counters"],
        &["--counters", "-r", "--switch"],
    ] {
        compare_bracketed(sim, what, "ibqueryerrors", args, fails);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// ibqueryerrors prints what infiniband-diags' prints (stdout, first
/// stderr line, exit status), with every option this implementation
/// has, on both fixture fabrics, before an SM and after OpenSM (the
/// real tool's MADs to LID 0 without an SM leave relay errors on a
/// switch: the error lines are compared too); then `-k` and `-K` clear.
#[test]
fn ibqueryerrors_matches_infiniband_diags() {
    if !needs(&["ibqueryerrors"]) {
        return;
    }
    let mut fails = Vec::new();
    let mut saw_errors = false;
    for name in FABRICS {
        let sim = IbSim::start(fixture(name));
        ibqueryerrors_cases(&sim, &format!("{name} (no SM)"), &mut fails);
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        ibqueryerrors_cases(&sim, &format!("{name} (OpenSM)"), &mut fails);
        saw_errors |= clear_checks(&sim, &format!("{name} (OpenSM)"), &mut fails);
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
    assert!(
        saw_errors,
        "no fabric had errors to report: the error lines and -k went untested"
    );
}

/// `-k` clears the error counters after reading them (its report is the
/// one before clearing, the next finds nothing); `-K` the data counters.
/// Returns false when there were no errors to clear.
fn clear_checks(sim: &IbSim, what: &str, fails: &mut Vec<String>) -> bool {
    let data = |r: &Run| -> u64 {
        r.stdout
            .split(" [PortXmitData == ")
            .skip(1)
            .map(|t| t.split(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    let c1 = theirs(sim, "ibqueryerrors", &["--counters"]);
    let _ = ours(sim, "ibqueryerrors", &["-K"]);
    let c2 = theirs(sim, "ibqueryerrors", &["--counters"]);
    if data(&c2) >= data(&c1) / 2 {
        fails.push(format!(
            "{what}: -K did not clear\n{}\n{}",
            c1.stdout, c2.stdout
        ));
    }
    let before = theirs(sim, "ibqueryerrors", &[]);
    if !before.stdout.contains("Errors for") {
        return false;
    }
    let o = ours(sim, "ibqueryerrors", &["-k"]);
    if o != before {
        fails.push(format!("{what}: -k report\n{:?}\n{:?}", before, o));
    }
    let after = theirs(sim, "ibqueryerrors", &[]);
    if after.stdout.contains("Errors for") || after.code != Some(0) {
        fails.push(format!("{what}: -k did not clear\n{}", after.stdout));
    }
    true
}

/// The scripts' cases (ibnodes, ibrouters) on one fabric.
fn script_cases(sim: &IbSim, what: &str, fails: &mut Vec<String>) {
    let file = fixture("with-router.topo");
    let f = file.to_str().unwrap();
    for tool in ["ibnodes", "ibrouters"] {
        for args in [
            &[][..],
            &["-t", "500"],
            &["-y", "0", "-P", "1"],
            &[f],
            &["-h"],
            &["-x"],
            &["-y"],
            &["-t", "-1"],
            &[f, f],
            &["/nonexistent.topo"],
        ] {
            compare(sim, what, tool, args, fails);
        }
    }
}

/// ibnodes and ibrouters (shell scripts over ibnetdiscover in
/// infiniband-diags 44) print what the real ones print, from the fabric
/// and from a topology file with routers (ibsim has none), with their
/// usage errors, on both fixture fabrics before an SM and after OpenSM.
#[test]
fn ibnodes_and_ibrouters_match_infiniband_diags() {
    if !needs(&["ibnodes", "ibrouters", "ibhosts", "ibswitches"]) {
        return;
    }
    let mut fails = Vec::new();
    for name in FABRICS {
        let sim = IbSim::start(fixture(name));
        script_cases(&sim, &format!("{name} (no SM)"), &mut fails);
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        script_cases(&sim, &format!("{name} (OpenSM)"), &mut fails);
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// smpdump's cases on one fabric: the local node, one and two hops away,
/// by LID (with an SM), a port's PortInfo, a status answer, no answer,
/// text (`-s`), bad command lines.
fn smpdump_cases(sim: &IbSim, what: &str, fails: &mut Vec<String>) {
    for args in [
        &["-D", "0", "0x11"][..],
        &["-D", "0,1", "16"],
        &["-s", "-D", "0,1", "16"],
        &["-D", "0,3,1", "0x11"],
        &["-D", "0", "0x15", "3"],
        &["-D", "0", "0x15", "99"],
        &["-D", ",", "0x11"],
        &["-D", "", "0x11"],
        &["-D", "0,9", "0x11"],
        &["1", "0x15", "2"],
        &["-L", "3", "0x12"],
        &["-s", "1", "0x10"],
        &["0xa0", "0x11"],
        &["-t", "200", "-D", "0,3", "0x11"],
        &["1"],
        &["-h"],
        &["-x"],
        &["-G", "1", "0x11"],
    ] {
        compare(sim, what, "smpdump", args, fails);
    }
}

/// smpdump prints what infiniband-diags' prints (hex or text, the status
/// line, usage errors) on both fixture fabrics, before an SM and after
/// OpenSM.
#[test]
fn smpdump_matches_infiniband_diags() {
    if !needs(&["smpdump"]) {
        return;
    }
    let mut fails = Vec::new();
    for name in FABRICS {
        let sim = IbSim::start(fixture(name));
        smpdump_cases(&sim, &format!("{name} (no SM)"), &mut fails);
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        smpdump_cases(&sim, &format!("{name} (OpenSM)"), &mut fails);
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// `mad --sim ARGS` (the built-in fabric): stdout, after checking that it
/// exited 0 without a panic.
fn on_sim(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_mad"))
        .arg("--sim")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && !err.contains("panicked"),
        "{args:?}: {err}"
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// On the built-in fabric iblinkinfo shows every node once and every
/// link from both ends (as many connected port lines as twice
/// ibnetdiscover's links), `-l` one line per port, and `--json` the same
/// nodes and connected ports.
#[test]
fn iblinkinfo_on_the_built_in_fabric_shows_every_link_from_both_ends() {
    let topo: serde_json::Value =
        serde_json::from_str(&on_sim(&["--json", "ibnetdiscover"])).unwrap();
    let nodes = topo["summary"]["nodes"].as_u64().unwrap() as usize;
    let links = topo["summary"]["links"].as_u64().unwrap() as usize;
    let text = on_sim(&["iblinkinfo"]);
    let headers = text
        .lines()
        .filter(|l| l.starts_with("Switch: ") || l.starts_with("CA: "))
        .count();
    assert_eq!(headers, nodes, "{text}");
    let ports: Vec<&str> = text.lines().filter(|l| l.contains("==(")).collect();
    let connected = ports.iter().filter(|l| !l.ends_with("\"\" ( )")).count();
    assert_eq!(connected, 2 * links, "{text}");
    assert!(!text.contains("Port not available"), "{text}");
    let line_mode = on_sim(&["iblinkinfo", "-l"]);
    assert_eq!(line_mode.lines().count(), ports.len(), "{line_mode}");
    let down = on_sim(&["iblinkinfo", "-d", "-l"]);
    assert_eq!(down.lines().count(), ports.len() - connected, "{down}");
    let j: serde_json::Value = serde_json::from_str(&on_sim(&["iblinkinfo", "--json"])).unwrap();
    let jn = j["nodes"].as_array().unwrap();
    assert_eq!(jn.len(), nodes);
    let jconnected = jn
        .iter()
        .flat_map(|n| n["ports"].as_array().unwrap())
        .filter(|p| !p["remote"].is_null())
        .count();
    assert_eq!(jconnected, 2 * links);
}

/// On the built-in fabric ibqueryerrors reads every node and port
/// (ibnetdiscover's), finds no errors and no failed query (exit 0), and
/// `--counters` prints one line per port.
#[test]
fn ibqueryerrors_on_the_built_in_fabric_checks_every_port() {
    let topo: serde_json::Value =
        serde_json::from_str(&on_sim(&["--json", "ibnetdiscover"])).unwrap();
    let nodes = topo["nodes"].as_array().unwrap();
    let ports: usize = nodes
        .iter()
        .map(|n| n["ports"].as_array().unwrap().len())
        .sum();
    let text = on_sim(&["ibqueryerrors"]);
    assert!(
        text.contains(&format!(
            "## Summary: {} nodes checked, 0 bad nodes found\n",
            nodes.len()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("##          {ports} ports checked, 0 ports have")),
        "{text}"
    );
    assert!(!text.contains("PMA query failures"), "{text}");
    let j: serde_json::Value = serde_json::from_str(&on_sim(&["ibqueryerrors", "--json"])).unwrap();
    assert_eq!(j["summary"]["ports_checked"].as_u64(), Some(ports as u64));
    let counters = on_sim(&["ibqueryerrors", "--counters"]);
    let lines = counters
        .lines()
        .filter(|l| l.starts_with("   GUID "))
        .count();
    assert_eq!(lines, ports, "{counters}");
}

/// On the built-in fabric ibnodes prints ibhosts' lines then
/// ibswitches', and ibrouters nothing (it has no routers), both exit 0;
/// from a topology file ibrouters lists its routers.
#[test]
fn ibnodes_and_ibrouters_on_the_built_in_fabric() {
    let hosts = on_sim(&["ibhosts"]);
    let switches = on_sim(&["ibswitches"]);
    assert!(hosts.starts_with("Ca\t: 0x") && switches.starts_with("Switch\t: 0x"));
    assert_eq!(on_sim(&["ibnodes"]), format!("{hosts}{switches}"));
    assert_eq!(on_sim(&["ibrouters"]), "");
    let f = fixture("with-router.topo");
    let routers = on_sim(&["ibrouters", f.to_str().unwrap()]);
    assert_eq!(
        routers,
        "Rt\t: 0x0000000000300000 ports 2 \"Router one\"\nRt\t: 0x0000000000300010 ports 4 \"rt #2 (odd)\"\n"
    );
}

/// On the built-in fabric smpdump reads the local NodeInfo (its NodeGUID
/// is the one discovery starts from; a directed-route answer carries
/// status 0x8000) and, with `-s`, the NodeDescription as text.
#[test]
fn smpdump_on_the_built_in_fabric_reads_the_local_node() {
    let topo: serde_json::Value =
        serde_json::from_str(&on_sim(&["--json", "ibnetdiscover"])).unwrap();
    let guid = topo["from"]["node_guid"]
        .as_str()
        .unwrap()
        .trim_start_matches("0x")
        .to_owned();
    let out = on_sim(&["smpdump", "-D", "0", "0x11"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[4], "SMP status: 0x8000");
    // NodeGUID: data bytes 12..20, i.e. groups 6 and 7 of line 1 and
    // groups 0 and 1 of line 2.
    let l0: Vec<&str> = lines[0].split(' ').collect();
    let l1: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(
        format!("{}{}{}{}", l0[6], l0[7], l1[0], l1[1]),
        guid,
        "{out}"
    );
    let desc = topo["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["guid"].as_str().unwrap().trim_start_matches("0x") == guid)
        .unwrap()["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        on_sim(&["smpdump", "-s", "-D", "0", "16"]),
        format!("{desc}\nSMP status: 0x8000\n")
    );
}
