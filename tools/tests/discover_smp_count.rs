//! SMPs per discovery, counted at the port discovery runs from: our
//! `ibnetdiscover` never sends more than infiniband-diags' on the same
//! ibsim fabric, on every topology of `tests/fixtures/topologies` (that
//! both print the same fabric is `discover_ibsim`'s business).
//!
//! The count is ibsim's own: it adds one to a port's PortXmitPkts for
//! every packet that leaves it, so the SMPs a discovery sent beyond the
//! local node (retries included) are the rise of PortXmitPkts at the
//! client's node across the run. LIDs are needed to read the counters, so
//! SM-lite brings the fabric up first and is stopped before counting.
//! The numbers are printed (`-- --nocapture`) for docs/benchmarks/fabric-scale.md.
//!
//! Outside CI a missing ibsim / infiniband-diags / libumad2sim makes these
//! tests print "NOT RUN" and return; with `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod sm_lite;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mad_sm::SmConfig;
use sm_lite::RunningSm;
use support::opensm::sbin;
use support::{topologies_dir, topology_files, IbSim, NEEDS_DIAGS};

/// The first node line of a topology file (where ibsim attaches clients
/// that name none): its name and whether it is a switch.
fn first_node(netfile: &Path) -> (String, bool) {
    let text = std::fs::read_to_string(netfile).unwrap();
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Switch") || l.starts_with("Hca") || l.starts_with("Ca"))
        .unwrap();
    (
        line.split('"').nth(1).unwrap().to_owned(),
        line.starts_with("Switch"),
    )
}

/// PortXmitPkts of the client's node, read with infiniband-diags'
/// `perfquery` (all ports summed on a switch: SMPs leave it by its
/// external ports). A LID-routed query to the own LID does not itself
/// leave the port.
fn xmit_pkts(sim: &IbSim, switch: bool) -> u64 {
    let perfquery = |args: &[&str]| {
        let o = sim.umad2sim_output(sbin("perfquery").to_str().unwrap(), args);
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "perfquery {args:?}: {text}");
        text
    };
    let mut text = perfquery(&[]);
    if switch {
        // "# Port counters: Lid 1 port 0 ...": all ports of that LID.
        let lid = text
            .split("Lid ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .unwrap_or_else(|| panic!("no LID in {text}"))
            .to_owned();
        text = perfquery(&["-a", &lid]);
    }
    text.lines()
        .find_map(|l| l.strip_prefix("PortXmitPkts:"))
        .map(|v| v.trim_start_matches('.').trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no PortXmitPkts in {text}"))
}

/// SMPs that left the client's node while `run` ran (which must succeed).
fn counted(sim: &IbSim, switch: bool, what: &str, mut run: Command) -> u64 {
    let before = xmit_pkts(sim, switch);
    let o = run.output().unwrap();
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    xmit_pkts(sim, switch) - before
}

/// Ours and theirs on `netfile`, SMPs counted at the port; asserts ours
/// is no more.
fn compare(netfile: &Path) {
    let name = netfile.file_name().unwrap().to_string_lossy().into_owned();
    let sim = IbSim::start(netfile);
    let (node, switch) = first_node(netfile);
    let cfg = SmConfig {
        timeout: Duration::from_secs(1),
        ..SmConfig::default()
    };
    drop(RunningSm::start(
        &sim,
        &node,
        cfg,
        Duration::from_secs(180),
        true,
    ));
    let mut theirs = sim.umad2sim_command(sbin("ibnetdiscover").to_str().unwrap());
    theirs.stdout(std::process::Stdio::null());
    let theirs = counted(&sim, switch, "ibnetdiscover", theirs);
    let mut ours = Command::new(env!("CARGO_BIN_EXE_mad"));
    ours.current_dir(std::env::temp_dir())
        .args(["--ibsim", "ibnetdiscover"])
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env_remove("SIM_HOST")
        .stdout(std::process::Stdio::null());
    let ours = counted(&sim, switch, "mad ibnetdiscover", ours);
    eprintln!("SMPS {name}: ours {ours}, infiniband-diags ibnetdiscover {theirs}");
    assert!(ours > 0, "{name}: no SMP counted for ours");
    assert!(
        ours <= theirs,
        "{name}: ours sent {ours} SMPs, infiniband-diags {theirs}"
    );
}

/// Ours sends no more SMPs than infiniband-diags on every fixture.
#[test]
fn no_more_smps_than_ibnetdiscover_on_every_topology() {
    if !support::require(NEEDS_DIAGS)
        || !support::opensm::require_sbin(&[("perfquery", "infiniband-diags")])
    {
        return;
    }
    let files = topology_files();
    let names: BTreeSet<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.len() >= 8,
        "topologies in {}: {names:?}",
        topologies_dir().display()
    );
    for f in &files {
        compare(f);
    }
}
