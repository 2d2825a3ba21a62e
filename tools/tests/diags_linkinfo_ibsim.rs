//! iblinkinfo's partial scans (`-a`, `-n`, `-D`, `-S` / `-G`) and
//! ibqueryerrors' `--details` and partial scans (`-D`, `-G`) against
//! infiniband-diags 44 on the same ibsim fabric: stdout byte for byte,
//! the exit status and stderr's first line (see `diags_compare`).
//!
//! One ibsim per fabric (with its console, to set error counters) and
//! one OpenSM bring-up serve every case: first before any SM (every LID
//! 0), then after OpenSM. Outside CI a missing ibsim / infiniband-diags /
//! libumad2sim / OpenSM makes the test print "NOT RUN" and return; with
//! `CI=true` it fails.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod diags_compare;

use std::time::Duration;

use diags_compare::{compare, fixture, needs, ours, some_guids, theirs, Run};
use support::opensm::OpenSm;
use support::IbSim;

/// The fabrics: ibsim's two-switch example and the odd names (a switch
/// is the local node), and the 3x3 torus (a CA is).
const FABRICS: &[&str] = &["net.2sw2path4hca2port", "net.odd-names", "net.torus3x3"];

/// iblinkinfo's partial scans that need no SM, on one fabric. The routes
/// lead to switches, to CAs (whose scan goes back out of the CA, which
/// ibsim does not answer), back to where they came from, and nowhere.
fn iblinkinfo_cases(sim: &IbSim, what: &str, fails: &mut Vec<String>) {
    for args in [
        &["-n", "1"][..],
        &["-n", "2"],
        &["-n", "3"],
        &["-n", "0"],
        &["-n", "-1"],
        &["--hops=1", "-l"],
        &["-n", "1", "-d"],
        &["-n", "2", "--switches-only"],
        &["-n", "1", "--cas-only", "-p"],
        &["-a"],
        &["--all", "-n", "2"],
        &["-D", "0,1", "-n", "1"],
        &["-D", "0,1", "-a"],
        &["-D", "0,1", "-a", "-n", "2"],
        &["-D", "0,3", "-a"],
        &["-D", "0,3", "-a", "-n", "1", "-l"],
        &["-D", "0,3", "-n", "2"],
        &["-D", "0,3,1"],
        &["-D", "0,3,1", "-a"],
        &["-D", "0,3,1", "-n", "3"],
        &["-D", "0,3,3", "-a", "--switches-only"],
        &["-D", "0,1,3", "-a", "-n", "2", "--cas-only"],
        &["-D", "0,1,1", "-a"],
        &["-D", "0", "-a", "-n", "1"],
        &["-D", "0,9", "-a"],
        &["-D", "0,9"],
        &["-n"],
        &["-n", "x"],
        &["--all=1"],
    ] {
        compare(sim, what, "iblinkinfo", args, fails);
    }
}

/// iblinkinfo's `-S` / `-G` partial scans (the SA resolves the GUID to
/// a LID): a CA reached by LID is scanned alone. (A switch's scan goes on
/// by combined LID + directed routes, which ibsim refuses and the C
/// tool waits on forever: not compared, tools/README.md.)
fn iblinkinfo_guid_cases(sim: &IbSim, what: &str, fails: &mut Vec<String>) {
    let (_, ca) = some_guids(sim);
    for args in [
        &["-S", ca.as_str()][..],
        &["-G", &ca, "-a"],
        &["-G", &ca, "-a", "-n", "3", "-l"],
        &["-S", &ca, "--switches-only"],
    ] {
        compare(sim, what, "iblinkinfo", args, fails);
    }
}

/// ibqueryerrors' partial scans: `-D` to a switch, to a CA (only the
/// port the route reaches is checked), back and nowhere; `-G` of a CA.
fn ibqueryerrors_scan_cases(sim: &IbSim, what: &str, fails: &mut Vec<String>) {
    let (_, ca) = some_guids(sim);
    for args in [
        &["-D", "0,1"][..],
        &["-D", "0,1", "-r"],
        &["-D", "0,3,1"],
        &["-D", "0,1,1"],
        &["-G", ca.as_str()],
        &["-G", &ca, "--details"],
    ] {
        compare(sim, what, "ibqueryerrors", args, fails);
    }
}

/// Error counters and their details set through ibsim's console
/// (`PerformanceSet`): a switch port with PortRcvErrors and details, a CA
/// port with PortXmitDiscards and one details counter, a CA port with
/// PortRcvErrors and no details.
const ERRORS: &[&str] = &[
    "PerformanceSet \"Switch2\"[3] PortCounters.PortRcvErrors=5",
    "PerformanceSet \"Switch2\"[3] PortRcvErrorDetails.PortLocalPhysicalErrors=2",
    "PerformanceSet \"Switch2\"[3] PortRcvErrorDetails.PortDLIDMappingErrors=9",
    // Beyond the four counters the C tool shows of it.
    "PerformanceSet \"Switch2\"[3] PortRcvErrorDetails.PortLoopingErrors=6",
    "PerformanceSet \"Hca1\"[1] PortCounters.PortXmitDiscards=7",
    "PerformanceSet \"Hca1\"[1] PortXmitDiscardDetails.PortNeighborMTUDiscards=3",
    "PerformanceSet \"Hca2\"[2] PortCounters.PortRcvErrors=4",
];

/// ibqueryerrors `--details` on the fabric with [`ERRORS`] set: the
/// details follow each count (named as the C tool names them), also
/// when thresholds, suppression or node types change what is reported.
fn details_cases(sim: &mut IbSim, what: &str, fails: &mut Vec<String>) {
    for c in ERRORS {
        sim.console(c);
    }
    let thres = diags_compare::Scratch::new(what);
    let th = thres.path("thresholds");
    std::fs::write(&th, "PortRcvErrors=4\n").unwrap();
    for args in [
        &["--details"][..],
        &["--details", "-r"],
        &["--details", "--switch"],
        &["--details", "--ca"],
        &["--details", "-s", "PortRcvErrors"],
        &[
            "--details",
            "-s",
            "PortXmitDiscards,PortRcvSwitchRelayErrors",
        ],
        &["--details", "--threshold-file", &th],
        &["--details", "-D", "0,3"],
        &["--details", "--counters"],
        &["--details=1"],
    ] {
        if args.contains(&"--counters") {
            // Data counters move: compared by bracketing.
            let t = theirs(sim, "ibqueryerrors", args);
            let o = ours(sim, "ibqueryerrors", args);
            let a = theirs(sim, "ibqueryerrors", args);
            if t.code != o.code || !diags_compare::bracketed(&t.stdout, &o.stdout, &a.stdout) {
                fails.push(diags_compare::differ(
                    &format!("{what}: ibqueryerrors {args:?}"),
                    "infiniband-diags",
                    &t,
                    "ours",
                    &o,
                ));
            }
        } else {
            compare(sim, what, "ibqueryerrors", args, fails);
        }
    }
    let shows_details = |r: &Run| {
        r.stdout
            .contains("[PortInactiveDiscards == 2] [PortSwHOQLifetimeLimitDiscards == 9]")
            && r.stdout.contains("[PortMalformedPktErrors == 3]")
    };
    let before = theirs(sim, "ibqueryerrors", &["--details"]);
    if !shows_details(&before) {
        fails.push(format!(
            "{what}: the details set are not shown:\n{}",
            before.stdout
        ));
    }
    // -k --details clears the details too: with the counts set again
    // (but not the details), nothing of them is left to show.
    let o = ours(sim, "ibqueryerrors", &["--details", "-k"]);
    if o != before {
        fails.push(diags_compare::differ(
            &format!("{what}: ibqueryerrors --details -k reports what it clears"),
            "infiniband-diags before",
            &before,
            "ours",
            &o,
        ));
    }
    for c in ERRORS.iter().filter(|c| c.contains("PortCounters.")) {
        sim.console(c);
    }
    let after = theirs(sim, "ibqueryerrors", &["--details"]);
    if !after.stdout.contains("[PortRcvErrors == 5]\n") || shows_details(&after) {
        fails.push(format!(
            "{what}: -k --details left details (or the counts were not set again):\n{}",
            after.stdout
        ));
    }
}

/// iblinkinfo's `-a` / `-n` and its partial scans from `-D` / `-S` /
/// `-G`, and ibqueryerrors' `--details` and partial scans, print what
/// infiniband-diags 44 prints, on each fabric before an SM and after
/// OpenSM.
#[test]
fn partial_scans_and_details_match_infiniband_diags() {
    if !needs(&["iblinkinfo", "ibqueryerrors"]) {
        return;
    }
    let mut fails = Vec::new();
    for name in FABRICS {
        let mut sim = IbSim::start_with_console(fixture(name));
        iblinkinfo_cases(&sim, &format!("{name} (no SM)"), &mut fails);
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        let what = format!("{name} (OpenSM)");
        iblinkinfo_cases(&sim, &what, &mut fails);
        iblinkinfo_guid_cases(&sim, &what, &mut fails);
        ibqueryerrors_scan_cases(&sim, &what, &mut fails);
        if *name == "net.2sw2path4hca2port" {
            details_cases(&mut sim, &what, &mut fails);
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}
