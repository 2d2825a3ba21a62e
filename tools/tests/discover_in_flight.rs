//! What makes our discovery faster than infiniband-diags' over ibsim:
//! `mad --ibsim ibnetdiscover` keeps many SMPs in flight (up to 4 per
//! node, 256 in all) where infiniband-diags keeps 2, and every one it
//! sends is answered. Its speed against theirs is measured by
//! `cargo bench -p mad-tools --bench discover_vs_diags`, never asserted
//! here; its SMP count against theirs is `discover_smp_count`'s.
//!
//! Outside CI a missing ibsim / libumad2sim makes this test print
//! "NOT RUN"; with `CI=true` it fails.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::process::Command;

use support::{topologies_dir, IbSim, NEEDS_DIAGS};

/// The number after `key` in `line` (`"at most "` → the 17 of
/// `"at most 17 in flight"`).
fn number_after(line: &str, key: &str) -> u64 {
    line.split(key)
        .nth(1)
        .and_then(|r| r.split([' ', ',', ')']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {key:?} in {line:?}"))
}

#[test]
fn discovery_over_ibsim_keeps_more_smps_in_flight_than_infiniband_diags() {
    if !support::require(NEEDS_DIAGS) {
        return;
    }
    let sim = IbSim::start(topologies_dir().join("net.large"));
    let out = Command::new(env!("CARGO_BIN_EXE_mad"))
        .current_dir(std::env::temp_dir())
        .args(["--ibsim", "ibnetdiscover", "-v"])
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env_remove("SIM_HOST")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ibnetdiscover -v: {err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("# discovered "))
        .unwrap_or_else(|| panic!("no summary line in {err:?}"));
    let nodes = number_after(line, "# discovered ");
    let sent = number_after(line, " with ");
    let answered = number_after(line, "(");
    let retried = number_after(line, "answered, ");
    let in_flight = number_after(line, "at most ");
    // net.large: 1,536 CAs and 80 switches.
    assert_eq!(nodes, 1_616, "{line}");
    assert!(in_flight > 2, "{line}");
    assert!(in_flight <= 256, "{line}");
    assert_eq!(answered + retried, sent, "{line}");
    assert!(answered >= nodes, "{line}");
}
