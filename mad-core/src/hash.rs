//! The hash maps of the stack's internal tables, built on [`foldhash`].
//!
//! The hot-path tables of madstack (send lists keyed by work-request or
//! send ids, TID → request maps, RMPP transfers keyed by (peer, TID), the
//! simulator's endpoint tables) are keyed by small integers or small
//! tuples of them. The standard library's default hasher (SipHash-1-3) was
//! about a fifth of all instructions of an in-process SMP round trip;
//! [`FastMap`] and [`FastSet`] use foldhash's fast hasher instead.
//!
//! # Why this is acceptable for keys that come from the network
//!
//! Some keys come from the network (TIDs, LIDs, QPNs), so a peer could
//! try to pick keys that collide. Two things keep that harmless:
//!
//! - The hasher is seeded: [`FastState`] is
//!   [`foldhash::fast::RandomState`], not `FixedState`. Every map draws
//!   its own seed from a random per-process one, so which keys share a
//!   bucket cannot be computed offline. It is not a keyed PRF like
//!   SipHash: treat it as a hurdle, not a proof.
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

/// The seeded hasher builder of [`FastMap`] and [`FastSet`] (see the
/// [module docs](self)).
pub type FastState = foldhash::fast::RandomState;

/// A `HashMap` with foldhash's seeded fast hasher; create it with
/// `FastMap::default()`.
pub type FastMap<K, V> = HashMap<K, V, FastState>;

/// A `HashSet` with foldhash's seeded fast hasher; create it with
/// `FastSet::default()`.
pub type FastSet<K> = HashSet<K, FastState>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;
    use std::sync::OnceLock;

    /// One hasher builder for the whole test, so equal keys hash equal.
    fn hash<T: std::hash::Hash>(t: &T) -> u64 {
        static STATE: OnceLock<FastState> = OnceLock::new();
        STATE.get_or_init(FastState::default).hash_one(t)
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
            // Some per-process seeds clump these keys more than others:
            // over 80,000 maps in 400 processes the worst bucket reached
            // 68 (one run in CI saw 38 where an older bound said 24). A
            // hasher that ignores the varying bits would put all 4096
            // keys in one bucket, so 256 (64 times the mean) still
            // catches that and is never hit by chance.
            let max = buckets.iter().copied().max().unwrap_or(0);
            assert!(
                max <= 256,
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
        // An unseeded multiply hasher puts all 4096 keys in one bucket.
        // foldhash's fast hasher, seeded at random per process, spreads
        // them but not perfectly (a worst bucket of up to 68 was seen over
        // 80,000 maps), so the bound is 64 times the mean: far from the
        // attack, never hit by chance.
        let max = buckets.iter().copied().max().unwrap_or(0);
        assert!(
            max <= 256,
            "worst bucket {max} of 4096 keys in 1024 (mean 4)"
        );
    }

    #[test]
    fn each_map_is_seeded_apart_so_collisions_cannot_be_precomputed() {
        // RandomState, not FixedState: two maps hash the same key apart.
        let seen: FastSet<u64> = (0..8)
            .map(|_| FastState::default().hash_one(0x1234u64))
            .collect();
        assert!(seen.len() > 1, "every FastState hashed alike: {seen:?}");
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
