//! The one seeded RNG ([`Rng`]) lives in the lower tier,
//! `mad-testkit-wire`, which writes the generator of
//! [`mad_core::transport::fault::Rng`] a second time because it cannot
//! depend on `mad-core`. The test here keeps the two one generator.

pub use mad_testkit_wire::rng::*;

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::transport::fault::Rng as Fault;

    #[test]
    fn the_kit_rng_draws_what_the_fault_injector_draws() {
        for seed in [0, 1, 7, DEFAULT_SEED, u64::MAX] {
            let (mut kit, mut fault) = (Rng::new(seed), Fault::new(seed));
            for _ in 0..64 {
                assert_eq!(kit.next_u64(), fault.next_u64(), "seed {seed}");
            }
            for p in [0.0, 0.3, 0.5, 1.0] {
                assert_eq!(kit.chance(p), fault.chance(p), "seed {seed}, p {p}");
            }
        }
    }
}
