//! Shared pieces of the criterion benches: the kit's fixed-seed generator
//! (so every run measures the same inputs) and one criterion configuration.
#![allow(dead_code)]

use criterion::measurement::WallTime;
use criterion::{black_box, BenchmarkGroup, Criterion};
use mad_core::wire::Repr;
use std::time::Duration;

/// The test kit's seeded generator; the seeds are fixed per bench so
/// inputs are identical from run to run and machine to machine.
#[allow(unused_imports, reason = "not every bench draws random inputs")]
pub use mad_testkit::Rng;

/// The criterion configuration every bench uses: 1 s warm-up, 3 s of
/// measurement, 50 samples (enough for stable medians of nanosecond-scale
/// operations while keeping a full `cargo bench` run short).
#[must_use]
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .configure_from_args()
}

/// `criterion_group!` named `benches` with [`criterion`]'s configuration,
/// and `criterion_main!` for it: the end of every bench file.
macro_rules! bench_main {
    ($($target:path),+ $(,)?) => {
        criterion::criterion_group! {
            name = benches;
            config = support::criterion();
            targets = $($target),+
        }
        criterion::criterion_main!(benches);
    };
}
pub(crate) use bench_main;

/// Benches `T::parse` and `T::emit` on `T::LEN` random bytes (from
/// `seed`) in group `g`, as `name/parse` and `name/emit`.
pub fn repr<T: Repr>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, seed: u64) {
    let buf = Rng::new(seed).bytes(T::LEN);
    let value = T::parse(&buf).expect("every bit pattern parses");
    let mut out = vec![0u8; T::LEN];
    g.bench_function(format!("{name}/parse"), |b| {
        b.iter(|| T::parse(black_box(&buf)))
    });
    g.bench_function(format!("{name}/emit"), |b| {
        b.iter(|| black_box(&value).emit(black_box(&mut out)))
    });
}
