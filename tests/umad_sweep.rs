//! The hardware code path on every CI run: the same directed-route sweep
//! as `ibsim_sweep.rs`, but through the umad transport (rdma-core's
//! libibumad, loaded at run time) under libumad2sim against a real ibsim,
//! compared with infiniband-diags' `ibnetdiscover` on every topology.
//!
//! libumad2sim must be preloaded before the process starts, so the test
//! re-runs its own binary as a child with `LD_PRELOAD` set; the child
//! sweeps and prints the fabric as text, the parent compares.

mod support;

use std::time::Duration;

use mad_core::transport::umad::UmadTransport;
use support::sweep::{compare_with_ibnetdiscover, dr_sweep, Fabric};
use support::{ibnetdiscover, IbSim, NEEDS_DIAGS};

const CHILD_ENV: &str = "MADSTACK_UMAD_SWEEP_CHILD";
const TEST_NAME: &str = "umad_sweep_under_libumad2sim_equals_ibnetdiscover_on_every_topology";
const BEGIN: &str = "-----BEGIN FABRIC-----";
const END: &str = "-----END FABRIC-----";

/// The child's half: open the first CA libibumad (i.e. umad2sim) offers
/// and sweep through it.
fn child() {
    let mut t = UmadTransport::open(None, 0).unwrap_or_else(|e| panic!("umad open: {e}"));
    let (fabric, stats) = dr_sweep(&mut t, 64, |_t: &mut UmadTransport| {
        std::thread::sleep(Duration::from_micros(20));
        Ok(())
    })
    .unwrap_or_else(|e| panic!("umad sweep: {e}"));
    println!("{BEGIN}\n{}{END}", fabric.to_text());
    eprintln!("umad sweep: {} SMPs in {:?}", stats.sent, stats.elapsed);
}

#[test]
fn umad_sweep_under_libumad2sim_equals_ibnetdiscover_on_every_topology() {
    if std::env::var_os(CHILD_ENV).is_some() {
        child();
        return;
    }
    if !support::require(NEEDS_DIAGS) {
        return;
    }
    assert!(
        std::path::Path::new(support::UMAD2SIM).exists(),
        "{} missing: install Debian package libumad2sim0",
        support::UMAD2SIM
    );
    for file in support::topology_files() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let sim = IbSim::start(&file);
        let theirs = ibnetdiscover::run(&sim);
        let stdout = sim.run_child_test(TEST_NAME, CHILD_ENV);
        let body = stdout
            .split(BEGIN)
            .nth(1)
            .and_then(|s| s.split(END).next())
            .unwrap_or_else(|| panic!("{name}: no fabric in the child's output: {stdout}"));
        let ours = Fabric::from_text(body).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!ours.nodes.is_empty(), "{name}: empty sweep");
        compare_with_ibnetdiscover(&name, &ours, &theirs);
        eprintln!(
            "{name}: {} nodes, {} links equal ibnetdiscover's",
            ours.nodes.len(),
            ours.links.len()
        );
    }
}

const BAD_PORT_TEST: &str = "umad_open_of_a_port_that_does_not_exist_names_it";

#[test]
fn umad_open_of_a_port_that_does_not_exist_names_it() {
    if std::env::var_os(CHILD_ENV).is_some() {
        let ca = mad_core::transport::umad::list_cas().expect("list CAs");
        let name = ca.first().expect("umad2sim presents a CA").name.clone();
        let err = UmadTransport::open(Some(&name), 9).expect_err("port 9 does not exist");
        println!("ERROR: {err}");
        let err = UmadTransport::open(Some("no_such_ca"), 1).expect_err("no such CA");
        println!("ERROR: {err}");
        return;
    }
    if !support::require(NEEDS_DIAGS) {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join("net"));
    let stdout = sim.run_child_test(BAD_PORT_TEST, CHILD_ENV);
    // The harness prints "test NAME ... " without a newline before the
    // child's first line, so look for the marker anywhere in a line.
    let errors: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.find("ERROR: ").map(|i| &l[i..]))
        .collect();
    assert_eq!(errors.len(), 2, "{stdout}");
    assert!(
        errors[0].contains("port 9 does not exist on CA"),
        "{}",
        errors[0]
    );
    assert!(errors[1].contains("no_such_ca"), "{}", errors[1]);
}
