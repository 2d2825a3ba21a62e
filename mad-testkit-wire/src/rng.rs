//! The one seeded RNG of the tests, benches and fuzz helpers: the
//! project's xorshift64* seeded through splitmix64, the generator of
//! `mad_core::transport::fault::Rng` (which the fault injector and the
//! simulated fabric's links draw from), with a fixed default seed so that
//! every run of a test sees the same numbers, and the few helpers tests
//! need.
//!
//! This tier cannot depend on `mad-core` (its users include `mad-core`'s
//! own tests), so the generator is written here a second time; the upper
//! kit (`mad-testkit`) has a test that both give the same numbers for the
//! same seed, so a fault seed and a test seed still mean one thing.

/// xorshift64* (Vigna) seeded through splitmix64, never zero: the same
/// numbers as `mad_core::transport::fault::Rng` for the same seed.
#[derive(Debug, Clone)]
struct Core(u64);

impl Core {
    fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Self(if z == 0 { 0x2545_f491_4f6c_dd1d } else { z })
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        #[allow(clippy::cast_precision_loss)]
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        u < p
    }
}

/// The seed [`Rng::default`] uses.
pub const DEFAULT_SEED: u64 = 0x6d61_6473_7461_636b; // "madstack"

/// A seeded, repeatable RNG.
#[derive(Debug, Clone)]
pub struct Rng(Core);

impl Default for Rng {
    fn default() -> Self {
        Self::new(DEFAULT_SEED)
    }
}

impl Rng {
    /// A generator for `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(Core::new(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// The next random byte.
    pub fn byte(&mut self) -> u8 {
        self.next_u64().to_le_bytes()[0]
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        self.next_u64() % n
    }

    /// An index into a collection of `len` items (0 when `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).unwrap_or(0)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.0.chance(p)
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.fill(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers_and_ranges_hold() {
        let (mut a, mut b) = (Rng::new(1), Rng::new(1));
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Rng::new(2).next_u64(), xs[0]);
        let mut r = Rng::default();
        assert!((0..1000).all(|_| r.below(7) < 7));
        assert_eq!(r.below(0), 0);
        assert_eq!(r.bytes(13).len(), 13);
    }
}
