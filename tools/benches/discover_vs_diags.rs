//! Discovery speed against infiniband-diags on the same ibsim: our
//! `mad --ibsim ibnetdiscover` and theirs (under libumad2sim), alternating,
//! on the largest shared topologies; prints each side's median and the
//! ratio (theirs / ours: above 1 is ours faster). The figures for
//! BENCHMARKS.md:
//!
//! ```text
//! cargo bench -p mad-tools --bench discover_vs_diags -- [TOPOLOGY ...] [--runs N]
//! ```
//!
//! TOPOLOGY is a file name under `tests/fixtures/topologies` (default
//! `net.medium net.large net.large3`), N the runs of each side (default 5).
//! Without ibsim, infiniband-diags or libumad2sim it says what is missing
//! and exits 0. Speed is measured here, never asserted: that our discovery
//! keeps many SMPs in flight is `tests/discover_in_flight.rs`'s business,
//! that it sends no more SMPs than theirs `tests/discover_smp_count.rs`'s.

#![expect(
    clippy::unwrap_used,
    reason = "bench code: a failed unwrap stops the bench with its cause"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use support::opensm::sbin;
use support::{topologies_dir, IbSim, NEEDS_DIAGS};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs `c` to completion; its failure stops the bench with its output.
fn timed(what: &str, mut c: Command) -> Result<Duration, String> {
    let s = Instant::now();
    let o = c.output().map_err(|e| format!("{what}: {e}"))?;
    let t = s.elapsed();
    if !o.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(t)
}

fn bench(name: &str, runs: usize) -> Result<(), String> {
    let net = topologies_dir().join(name);
    if !net.is_file() {
        return Err(format!("no topology {}", net.display()));
    }
    let sim = IbSim::start(net);
    let theirs = || sim.umad2sim_command(sbin("ibnetdiscover").to_str().unwrap());
    let ours = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_mad"));
        c.current_dir(std::env::temp_dir())
            .args(["--ibsim", "ibnetdiscover"])
            .env("IBSIM_SOCKNAME", sim.sockname())
            .env_remove("SIM_HOST");
        c
    };
    let (mut t, mut o) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        t.push(timed("infiniband-diags ibnetdiscover", theirs())?);
        o.push(timed("mad --ibsim ibnetdiscover", ours())?);
    }
    let (mt, mo) = (median(t), median(o));
    println!(
        "{name}: infiniband-diags ibnetdiscover median {mt:.1?}, ours {mo:.1?}, ratio {:.2} ({runs} runs each, alternating)",
        mt.as_secs_f64() / mo.as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    let mut names = Vec::new();
    let mut runs = 5;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            // What `cargo bench` passes to every bench executable.
            "--bench" => {}
            "--runs" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => runs = n,
                _ => {
                    eprintln!("discover_vs_diags: --runs needs a number above 0");
                    return ExitCode::FAILURE;
                }
            },
            s if s.starts_with('-') => {
                eprintln!("discover_vs_diags: unknown option {s}");
                return ExitCode::FAILURE;
            }
            s => names.push(s.to_owned()),
        }
    }
    if names.is_empty() {
        names = ["net.medium", "net.large", "net.large3"]
            .map(String::from)
            .to_vec();
    }
    if !support::require(NEEDS_DIAGS) {
        return ExitCode::SUCCESS;
    }
    for name in &names {
        if let Err(e) = bench(name, runs) {
            eprintln!("discover_vs_diags: {name}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
