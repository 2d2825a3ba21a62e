//! Discovery speed against infiniband-diags on the same ibsim: our
//! ibnetdiscover and theirs, five runs each, alternating, on the largest
//! shared topologies; medians printed (the figures for BENCHMARKS.md:
//! run `cargo test --release -p mad-tools --test discover_bench --
//! --nocapture`).
//!
//! Ours keeps up to 256 SMPs in flight (4 per node) where
//! infiniband-diags keeps 2, and both send about the same number of
//! SMPs. An optimized build must be faster than infiniband-diags; a debug
//! build (several times slower per SMP) is only checked for the
//! mechanism: many SMPs in flight, the same SMP count within 5 %.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::opensm::sbin;
use support::{IbSim, NEEDS_DIAGS};

const RUNS: usize = 5;

fn topologies_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/topologies")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ours(sim: &IbSim, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mad"))
        .current_dir(std::env::temp_dir())
        .arg("--ibsim")
        .arg("ibnetdiscover")
        .args(args)
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env_remove("SIM_HOST")
        .output()
        .unwrap()
}

fn bench(name: &str) {
    let sim = IbSim::start(topologies_dir().join(name));
    let theirs_cmd = || {
        sim.umad2sim_command(sbin("ibnetdiscover").to_str().unwrap())
            .output()
            .unwrap()
    };
    let (mut t, mut o) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let s = Instant::now();
        assert!(theirs_cmd().status.success());
        t.push(s.elapsed());
        let s = Instant::now();
        assert!(ours(&sim, &[]).status.success());
        o.push(s.elapsed());
    }
    let (mt, mo) = (median(t), median(o));
    let ratio = mt.as_secs_f64() / mo.as_secs_f64();
    eprintln!(
        "BENCH {name}: infiniband-diags ibnetdiscover median {mt:.1?}, ours {mo:.1?}, ratio {ratio:.1} ({} build, {RUNS} runs each)",
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    // The mechanism: SMPs in flight, and no more SMPs than theirs.
    let v = ours(&sim, &["-v"]);
    let line = String::from_utf8_lossy(&v.stderr).into_owned();
    let smps: u64 = line
        .split(" with ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    let in_flight: u64 = line
        .split("at most ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    let m = sim
        .umad2sim_command(sbin("ibnetdiscover").to_str().unwrap())
        .arg("-m")
        .output()
        .unwrap();
    let theirs_smps: u64 = String::from_utf8_lossy(&m.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("# Total MADs used: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(in_flight > 2, "{name}: at most {in_flight} SMPs in flight");
    assert!(
        smps * 100 <= theirs_smps * 105,
        "{name}: {smps} SMPs, infiniband-diags {theirs_smps}"
    );
    if !cfg!(debug_assertions) {
        assert!(mo < mt, "{name}: ours {mo:?}, infiniband-diags {mt:?}");
    }
}

#[test]
fn ibnetdiscover_speed_against_infiniband_diags() {
    if !support::require(NEEDS_DIAGS) {
        return;
    }
    for name in ["net.medium", "net.large", "net.large3"] {
        bench(name);
    }
}
