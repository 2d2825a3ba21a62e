//! Transaction ID layout used by the agent layer.
//!
//! ```text
//!  63            48 47            32 31                             0
//! +----------------+----------------+--------------------------------+
//! | transport (0)  |   agent id     |  caller's or allocated         |
//! +----------------+----------------+--------------------------------+
//! ```
//!
//! - Bits 63..48 are left **zero** on every request and ignored when a
//!   response is matched: ibsim writes its client number there and routes
//!   responses by it (it does not restore them), and under umad the kernel
//!   replaces bits 63..32 of every request with its own agent's `hi_tid`
//!   (the umad transport restores them; bits 48..63 would not survive
//!   ibsim, so the agent layer does not rely on them anywhere).
//! - Bits 47..32 are the agent's 16-bit id on its port (allocated
//!   cyclically at registration, as the kernel allocates `hi_tid`). A
//!   response's agent is found from these bits.
//! - Bits 31..0 are allocated from one counter per port, so they are
//!   unique among the port's outstanding requests (the umad transport
//!   restores the upper bits by class and these low 32 bits), or given
//!   by the caller ([`crate::TidChoice::Low`]).
//!
//! A response matches a waiting send by the low 48 bits of its TID and
//! its management class ([`match_key`]), the kernel's "full TID and class"
//! rule restricted to the bits every transport preserves.

/// Bits of the TID that survive every transport and are compared.
pub const TID_MATCH_MASK: u64 = 0x0000_FFFF_FFFF_FFFF;
/// Shift of the agent id field.
pub const AGENT_SHIFT: u32 = 32;

/// The TID for agent `hi` with low bits `low` (bits 63..48 zero).
#[must_use]
pub fn compose(hi: u16, low: u32) -> u64 {
    (u64::from(hi) << AGENT_SHIFT) | u64::from(low)
}

/// The agent id bits (47..32) of `tid`.
#[must_use]
pub fn agent_bits(tid: u64) -> u16 {
    ((tid >> AGENT_SHIFT) & 0xFFFF) as u16
}

/// What a response is matched on: the preserved TID bits and the class.
#[must_use]
pub fn match_key(tid: u64, class: u8) -> (u64, u8) {
    (tid & TID_MATCH_MASK, class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_bits_survive_an_ibsim_rewrite_of_bits_48_to_63() {
        let t = compose(0xBEEF, 0x1234_5678);
        assert_eq!(t >> 48, 0, "bits 63..48 are left to the transport");
        let rewritten = t | (7u64 << 48);
        assert_eq!(agent_bits(rewritten), 0xBEEF);
        assert_eq!(match_key(rewritten, 1), match_key(t, 1));
        assert_ne!(match_key(t, 1), match_key(t, 0x81));
    }
}
