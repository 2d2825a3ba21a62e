//! Shared pieces of the criterion benches: a fixed-seed byte generator (so
//! every run measures the same inputs) and one criterion configuration.
#![allow(dead_code)]

use criterion::Criterion;
use std::time::Duration;

/// xorshift64*: a tiny deterministic generator; the seeds are fixed per
/// bench so inputs are identical from run to run and machine to machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is mapped to a non-zero state).
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
    /// `n` random bytes.
    #[must_use]
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        self.fill(&mut v);
        v
    }
}

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
