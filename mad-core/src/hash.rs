//! A fast hasher for the stack's internal maps.
//!
//! The hot-path tables of madstack (send lists keyed by work-request or
//! send ids, TID → request maps, RMPP transfers keyed by (peer, TID), the
//! simulator's endpoint tables) are keyed by small integers or small
//! tuples of them. The standard library's default hasher (SipHash-1-3) was
//! about a fifth of all instructions of an in-process SMP round trip;
//! [`FastHasher`] is a multiply–xor hasher of one multiplication per word.
//!
//! # Why this is acceptable for keys that come from the network
//!
//! Some keys come from the network (TIDs, LIDs, QPNs), so a peer could
//! try to pick keys that collide. Two things keep that harmless:
//!
//! - The hasher is seeded: every [`FastState`] starts from a random
//!   per-process seed and [`Hasher::finish`] ends with a full avalanche
//!   step, so which keys share a bucket cannot be computed offline (plain
//!   FxHash-style hashers let a peer vary a key's high bits and keep its
//!   bucket). It is not a keyed PRF like SipHash: treat it as a hurdle,
//!   not a proof.
//! - Every map that such keys *insert* into is bounded: outstanding sends
//!   by the send queue and the agents' flow-control limits (with TIDs we
//!   chose), RMPP receive transfers by `ReceiverConfig`'s per-source and
//!   total caps plus the linger time. Keys from the network that are only
//!   *looked up* (responses matched by TID) cannot grow a table. The peers
//!   are the local management network (QP0/QP1), not the Internet.
//!
//! Do not use [`FastMap`] for tables whose size a remote peer controls
//! without a cap.
//!
//! ```
//! use mad_core::hash::FastMap;
//! let mut m: FastMap<(u64, u8), usize> = FastMap::default();
//! m.insert((0x1234, 0x81), 7);
//! assert_eq!(m.get(&(0x1234, 0x81)), Some(&7));
//! ```

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A `HashMap` with [`FastHasher`]; create it with `FastMap::default()`.
pub type FastMap<K, V> = HashMap<K, V, FastState>;

/// A `HashSet` with [`FastHasher`]; create it with `FastSet::default()`.
pub type FastSet<K> = HashSet<K, FastState>;

/// Builds [`FastHasher`]s starting from the per-process random seed (see
/// the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastState {
    seed: u64,
}

impl Default for FastState {
    #[inline]
    fn default() -> Self {
        static SEED: OnceLock<u64> = OnceLock::new();
        let seed = *SEED.get_or_init(|| {
            // std's RandomState draws its keys from the OS.
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(0x6d61_6473_7461_636b);
            h.finish()
        });
        Self { seed }
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;

    #[inline]
    fn build_hasher(&self) -> FastHasher {
        FastHasher { h: self.seed }
    }
}

/// Odd 64-bit multiplier with well-spread bits (from the golden ratio).
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Multiply–xor hasher: each word is mixed in with one xor and one
/// multiplication; [`Hasher::finish`] avalanches the state so that every
/// bit of the result depends on every bit of the key and the seed.
#[derive(Debug, Clone, Copy, Default)]
pub struct FastHasher {
    h: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.h = (self.h.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            // The length keeps "ab" and "ab\0" apart.
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // A murmur3-style finaliser.
        let mut h = self.h;
        h ^= h >> 33;
        h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 33;
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash<T: std::hash::Hash>(t: &T) -> u64 {
        FastState::default().hash_one(t)
    }

    #[test]
    fn equal_keys_hash_equal_and_the_hasher_is_deterministic() {
        assert_eq!(hash(&(5u64, 0x81u8)), hash(&(5u64, 0x81u8)));
        assert_eq!(hash(&"ca0"), hash(&String::from("ca0")));
    }

    #[test]
    fn neighbouring_integers_and_tuples_hash_apart() {
        let hs: FastSet<u64> = (0u64..10_000).map(|i| hash(&i)).collect();
        assert_eq!(hs.len(), 10_000);
        assert_ne!(hash(&(1u64, 2u8)), hash(&(2u64, 1u8)));
        assert_ne!(hash(&"ab"), hash(&"ab\0"));
    }

    #[test]
    fn sequential_tids_spread_over_the_low_bits_used_as_bucket_index() {
        // TIDs differ in their low bits (sequence) or only in the high
        // agent bits; both must fill a 1024-bucket table evenly.
        for base in [0u64, 0x0000_0001_0000_0000] {
            let mut buckets = [0u32; 1024];
            for i in 0u64..4096 {
                let key = if base == 0 { i } else { i << 32 };
                buckets[(hash(&key) & 1023) as usize] += 1;
            }
            let max = buckets.iter().copied().max().unwrap_or(0);
            assert!(
                max <= 24,
                "worst bucket {max} of 4096 keys in 1024 (mean 4)"
            );
        }
    }

    #[test]
    fn keys_differing_only_in_high_bits_do_not_share_a_bucket() {
        // The classic attack on unseeded multiply hashers: vary the top
        // bits of a TID; the product's low bits do not change.
        let mut buckets = [0u32; 1024];
        for i in 0u64..4096 {
            buckets[(hash(&(0x1234u64 | (i << 52))) & 1023) as usize] += 1;
        }
        let max = buckets.iter().copied().max().unwrap_or(0);
        assert!(
            max <= 24,
            "worst bucket {max} of 4096 keys in 1024 (mean 4)"
        );
    }

    #[test]
    fn fast_map_behaves_like_a_map() {
        let mut m: FastMap<(u64, u8), usize> = FastMap::default();
        for i in 0..1000u64 {
            m.insert((i, (i % 3) as u8), i as usize);
        }
        for i in 0..1000u64 {
            assert_eq!(m.remove(&(i, (i % 3) as u8)), Some(i as usize));
        }
        assert!(m.is_empty());
    }
}
