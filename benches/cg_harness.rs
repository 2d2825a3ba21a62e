//! Callgrind harness for the `rmpp` and `agent_round_trip` benches: sets up
//! exactly as those benches do (it compiles their own files as modules and
//! calls their setup and bodies), runs one warm iteration, then runs the
//! bench body N times inside one `#[inline(never)] fn cg_measured`, so that
//!
//! ```text
//! valgrind --tool=callgrind --collect-atstart=no '--toggle-collect=*cg_measured*' \
//!     HARNESS segment 1048576 5      # rmpp: BENCH SIZE N
//! valgrind --tool=callgrind --collect-atstart=no '--toggle-collect=*cg_measured*' \
//!     HARNESS 16 200                 # agent round trip: W N
//! ```
//!
//! counts the instructions of N criterion iterations and nothing else.
//! `scripts/callgrind-compare.sh BASE_REV` builds it in two trees and prints
//! the per-iteration table (docs/benchmarks/architecture-side-by-side.md).
#![allow(missing_docs)]
// Each bench file declares `support` itself, and so does this one.
#![allow(clippy::duplicate_mod)]

use criterion::black_box;
use mad_rmpp::{Sender, SenderConfig};
use std::process::ExitCode;
use std::time::Instant;

#[path = "agent_round_trip.rs"]
#[allow(dead_code)]
mod agent_round_trip;
#[path = "rmpp.rs"]
#[allow(dead_code)]
mod rmpp;
#[path = "support/mod.rs"]
#[allow(unused_macros, unused_imports)]
mod support;

/// The seed `benches/rmpp.rs` draws its data with.
const RMPP_SEED: u64 = 0x726d_7070;

/// The body of the `rmpp/segment` bench.
fn segment(header: &[u8], data: &[u8], now: Instant) -> u32 {
    let cfg = SenderConfig {
        initial_window: u32::MAX,
        ..SenderConfig::default()
    };
    let mut seg = [0u8; 256];
    let mut tx = Sender::new(header, black_box(data), cfg, now).expect("valid SA header");
    let mut n = 0u32;
    while let Some(s) = tx.poll_transmit_into(now, &mut seg) {
        black_box(&seg);
        n = s;
    }
    n
}

/// Runs `body` `n` times; the only function callgrind collects in.
#[inline(never)]
fn cg_measured(n: usize, body: &mut dyn FnMut() -> usize) -> usize {
    let mut acc = 0usize;
    for _ in 0..n {
        acc = acc.wrapping_add(black_box(body()));
    }
    acc
}

/// One warm iteration, then `n` measured ones.
fn measure(n: usize, mut body: impl FnMut() -> usize) -> usize {
    black_box(body());
    cg_measured(n, &mut body)
}

fn rmpp_bench(bench: &str, size: usize, n: usize) -> Result<usize, String> {
    let now = Instant::now();
    let header = rmpp::sa_header();
    let data = support::Rng::new(RMPP_SEED).bytes(size);
    Ok(match bench {
        "segment" => measure(n, || segment(&header, &data, now) as usize),
        "reassemble" => {
            let segs = rmpp::segments(&header, &data, now);
            measure(n, || rmpp::reassemble(black_box(&segs), now))
        }
        "transfer" => {
            let mut steady = rmpp::Steady::new(now);
            measure(n, || {
                steady.transfer(&header, black_box(&data), |m| {
                    black_box(m);
                })
            })
        }
        "transfer_cold" => measure(n, || {
            rmpp::transfer_cold(&header, black_box(&data), now).len()
        }),
        other => return Err(format!("unknown rmpp bench {other:?}")),
    })
}

fn round_trip_bench(w: usize, n: usize) -> Result<usize, String> {
    if w == 0 {
        return Err("W must be at least 1".into());
    }
    let now = Instant::now();
    let (mut e, a, reqs) = agent_round_trip::setup();
    let ok = measure(n, || {
        agent_round_trip::round_trips(&mut e, a, black_box(&reqs), w, now)
    });
    if ok != n * w {
        return Err(format!("{ok} of {} round trips succeeded", n * w));
    }
    Ok(ok)
}

fn number(s: Option<&String>, what: &str) -> Result<usize, String> {
    let s = s.ok_or(format!("missing {what}"))?;
    s.parse()
        .map_err(|_| format!("{what} {s:?} is not a number"))
}

fn run(args: &[String]) -> Result<usize, String> {
    match args.first().map(String::as_str) {
        Some(b @ ("segment" | "reassemble" | "transfer" | "transfer_cold")) => {
            rmpp_bench(b, number(args.get(1), "SIZE")?, number(args.get(2), "N")?)
        }
        Some(_) => round_trip_bench(number(args.first(), "W")?, number(args.get(1), "N")?),
        None => Err("missing arguments".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` runs every bench target with `--bench`: nothing to do.
    if args.iter().any(|a| a == "--bench") {
        return ExitCode::SUCCESS;
    }
    match run(&args) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cg_harness: {e}");
            eprintln!(
                "usage: cg_harness segment|reassemble|transfer|transfer_cold SIZE N\n       cg_harness W N"
            );
            ExitCode::FAILURE
        }
    }
}
