//! The physical reference for the in-process rates: copying 256-byte
//! buffers (one MAD) with `copy_from_slice`. BENCHMARKS.md states every
//! per-MAD cost as a multiple of this.
//!
//! - `memcpy_256/one`: the same 256-byte buffer copied again and again (L1
//!   resident), the floor for "touching one MAD".
//! - `memcpy_256/stream_1MiB`: 4,096 different MADs (1 MiB) copied in turn,
//!   which also pays for cache misses, like a stream of received MADs.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::{black_box, Criterion, Throughput};

#[path = "support/mod.rs"]
mod support;

fn memcpy(c: &mut Criterion) {
    let mut rng = support::Rng::new(0x6d65_6d63);
    let src = rng.bytes(256);
    let mut dst = [0u8; 256];
    let mut g = c.benchmark_group("memcpy_256");
    g.throughput(Throughput::Bytes(256));
    g.bench_function("one", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src[..]));
            black_box(&mut dst);
        });
    });
    const N: usize = 4096;
    let big = rng.bytes(N * 256);
    let mut out = vec![0u8; N * 256];
    g.throughput(Throughput::Bytes((N * 256) as u64));
    g.bench_function("stream_1MiB", |b| {
        b.iter(|| {
            for (d, s) in out
                .chunks_exact_mut(256)
                .zip(black_box(&big).chunks_exact(256))
            {
                d.copy_from_slice(s);
            }
            black_box(&mut out);
        });
    });
    g.finish();
}

support::bench_main!(memcpy);
