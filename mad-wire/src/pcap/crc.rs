//! The two link CRCs of an InfiniBand packet (IBA 1.x vol. 1 §7.8).
//!
//! - **ICRC** (invariant CRC, 32 bits): the Ethernet CRC-32 (polynomial
//!   `0x04C11DB7`, bit-reflected, initial value and final XOR `0xFFFF_FFFF`)
//!   over the packet from the first byte of the LRH to the end of the
//!   payload (pad bytes included), with the *variant* fields replaced by
//!   ones: LRH VL; GRH TClass, FlowLabel and HopLmt; BTH FECN, BECN and the
//!   six reserved bits next to them (BTH byte 4, "resv8a").
//! - **VCRC** (variant CRC, 16 bits): polynomial `0x100B`, bit-reflected,
//!   initial value and final XOR `0xFFFF`, over the whole packet from the
//!   LRH through the ICRC.
//!
//! Both are transmitted least significant byte first, like the Ethernet
//! FCS (Linux `rxe` stores the RoCE ICRC that way). With that order the CRC
//! over "data followed by its CRC" is a constant residue
//! ([`ICRC_RESIDUE`], [`VCRC_RESIDUE`]), which the unit tests check.
//!
//! Tables are built at compile time; nothing here can panic.

/// Reflected form of the CRC-32 polynomial `0x04C11DB7`.
const POLY32_REFLECTED: u32 = 0xEDB8_8320;
/// Reflected form of the VCRC polynomial `0x100B`.
const POLY16_REFLECTED: u16 = 0xD008;

/// CRC-32 over `data ‖ icrc_le(data)` (after the final XOR): the residue
/// of the reflected Ethernet CRC.
pub const ICRC_RESIDUE: u32 = 0x2144_DF1C;
/// VCRC over `data ‖ vcrc_le(data)` (after the final XOR).
pub const VCRC_RESIDUE: u16 = vcrc_residue();

/// The byte table of the bit-reflected CRC with the (reflected)
/// polynomial `poly`; for a 16-bit polynomial every entry fits 16 bits.
const fn table(poly: u32) -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// The VCRC's table.
const fn table16() -> [u16; 256] {
    let wide = table(POLY16_REFLECTED as u32);
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = wide[i] as u16;
        i += 1;
    }
    t
}

static TABLE32: [u32; 256] = table(POLY32_REFLECTED);
static TABLE16: [u16; 256] = table16();

/// The residue of the reflected CRC-16 with initial value and final XOR
/// `0xFFFF`: the CRC of any message followed by its own CRC (LSB first).
const fn vcrc_residue() -> u16 {
    // CRC of the empty message is 0x0000 (0xFFFF ^ 0xFFFF); appending it
    // LSB first gives the residue.
    let t = table16();
    let mut c: u16 = 0xFFFF;
    let bytes = [0u8, 0u8];
    let mut i = 0;
    while i < 2 {
        c = t[((c ^ bytes[i] as u16) & 0xFF) as usize] ^ (c >> 8);
        i += 1;
    }
    c ^ 0xFFFF
}

/// Running CRC-32 state (before the final XOR).
#[derive(Debug, Clone, Copy)]
struct Crc32(u32);

impl Crc32 {
    fn new() -> Self {
        Self(0xFFFF_FFFF)
    }
    #[inline]
    fn byte(&mut self, b: u8) {
        self.0 = TABLE32[((self.0 ^ u32::from(b)) & 0xFF) as usize] ^ (self.0 >> 8);
    }
    fn finish(self) -> u32 {
        !self.0
    }
}

/// Ethernet CRC-32 of `data` (the ICRC algorithm without masking).
#[must_use]
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = Crc32::new();
    for &b in data {
        c.byte(b);
    }
    c.finish()
}

/// The VCRC algorithm over `data`.
#[must_use]
pub fn vcrc(data: &[u8]) -> u16 {
    let mut c: u16 = 0xFFFF;
    for &b in data {
        c = TABLE16[((c ^ u16::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    c ^ 0xFFFF
}

/// Link Next Header value of an LRH followed by a GRH.
const LNH_IBA_GLOBAL: u8 = 3;
/// Link Next Header value of an LRH followed directly by a BTH.
const LNH_IBA_LOCAL: u8 = 2;

/// The ICRC of `packet`, which runs from the first byte of the LRH to the
/// last byte of the payload (pad included) and stops before the ICRC.
///
/// Variant fields are read as ones, per IBA §7.8.1. Returns `None` when the
/// LRH's Link Next Header says the packet has no transport header (raw
/// packets carry no ICRC) or the buffer is too short for its headers.
#[must_use]
pub fn icrc(packet: &[u8]) -> Option<u32> {
    let lnh = packet.get(1)? & 0x03;
    let bth = match lnh {
        LNH_IBA_LOCAL => 8,
        LNH_IBA_GLOBAL => 48,
        _ => return None,
    };
    if packet.len() < bth + 12 {
        return None;
    }
    let mut c = Crc32::new();
    for (i, &b) in packet.iter().enumerate() {
        let masked = match i {
            // LRH: VL (high nibble of byte 0).
            0 => b | 0xF0,
            // GRH: IPVer(4) TClass(8) FlowLabel(20) in bytes 0-3; HopLmt byte 7.
            8 if lnh == LNH_IBA_GLOBAL => b | 0x0F,
            9..=11 if lnh == LNH_IBA_GLOBAL => 0xFF,
            15 if lnh == LNH_IBA_GLOBAL => 0xFF,
            // BTH byte 4: FECN, BECN, resv6.
            i if i == bth + 4 => 0xFF,
            _ => b,
        };
        c.byte(masked);
    }
    Some(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Textbook bit-at-a-time CRC over an MSB-first polynomial, applied
    /// with reflected input and output: independent of the tables above.
    fn bitwise_reflected(data: &[u8], width: u32, poly: u64, init: u64, xorout: u64) -> u64 {
        let top = 1u64 << (width - 1);
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let mut reg = init;
        for &byte in data {
            // Reflected input: feed bits LSB first.
            for bit in 0..8 {
                let inbit = u64::from((byte >> bit) & 1);
                let fb = ((reg & top) != 0) as u64 ^ inbit;
                reg = (reg << 1) & mask;
                if fb != 0 {
                    reg ^= poly;
                }
            }
        }
        // Reflected output.
        let mut out = 0u64;
        for i in 0..width {
            if reg & (1 << i) != 0 {
                out |= 1 << (width - 1 - i);
            }
        }
        out ^ xorout
    }

    fn pseudo_random(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect()
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn table_crcs_match_a_bitwise_implementation() {
        for (n, seed) in [(0usize, 1u64), (1, 2), (9, 3), (290, 4), (1000, 5)] {
            let d = pseudo_random(n, seed);
            assert_eq!(
                u64::from(crc32(&d)),
                bitwise_reflected(&d, 32, 0x04C1_1DB7, 0xFFFF_FFFF, 0xFFFF_FFFF),
                "crc32 len {n}"
            );
            assert_eq!(
                u64::from(vcrc(&d)),
                bitwise_reflected(&d, 16, 0x100B, 0xFFFF, 0xFFFF),
                "vcrc len {n}"
            );
        }
        // The check value of this CRC-16 ("123456789"), from the bitwise
        // implementation, pins the table result too.
        assert_eq!(
            u64::from(vcrc(b"123456789")),
            bitwise_reflected(b"123456789", 16, 0x100B, 0xFFFF, 0xFFFF)
        );
    }

    #[test]
    fn appending_a_crc_lsb_first_gives_the_constant_residue() {
        for seed in 1..20u64 {
            let mut d = pseudo_random(40 + seed as usize, seed);
            let c = crc32(&d);
            d.extend_from_slice(&c.to_le_bytes());
            assert_eq!(crc32(&d), ICRC_RESIDUE);
            let v = vcrc(&d);
            d.extend_from_slice(&v.to_le_bytes());
            assert_eq!(vcrc(&d), VCRC_RESIDUE);
        }
    }

    #[test]
    fn eight_ones_bytes_give_the_roce_icrc_seed_of_linux_rxe() {
        // RoCE replaces the LRH in the ICRC by 8 bytes of ones; Linux rxe
        // (rxe_icrc.c) starts from the resulting running CRC, 0xdebb20e3.
        let mut c = Crc32::new();
        for _ in 0..8 {
            c.byte(0xFF);
        }
        assert_eq!(c.0, 0xDEBB_20E3);
    }

    #[test]
    fn icrc_ignores_exactly_the_variant_fields() {
        // LRH (LNH = 2) + BTH + 16 bytes of payload.
        let mut p = pseudo_random(8 + 12 + 16, 99);
        p[1] = (p[1] & !0x03) | LNH_IBA_LOCAL;
        let base = icrc(&p).unwrap();
        // Changing VL or BTH byte 4 leaves the ICRC alone.
        let mut q = p.clone();
        q[0] ^= 0xA0;
        q[8 + 4] ^= 0xC3;
        assert_eq!(icrc(&q), Some(base));
        // Changing any other byte changes it.
        for i in (0..p.len()).filter(|&i| i != 8 + 4) {
            let mut q = p.clone();
            // Byte 0: flip an LVer bit; elsewhere the top bit (never LNH).
            q[i] ^= if i == 0 { 0x01 } else { 0x80 };
            assert_ne!(icrc(&q), Some(base), "byte {i}");
        }
        // It equals a plain CRC-32 over the masked copy.
        let mut m = p.clone();
        m[0] |= 0xF0;
        m[12] = 0xFF;
        assert_eq!(base, crc32(&m));
    }

    #[test]
    fn icrc_masks_grh_traffic_class_flow_label_and_hop_limit() {
        let mut p = pseudo_random(8 + 40 + 12 + 8, 7);
        p[1] = (p[1] & !0x03) | LNH_IBA_GLOBAL;
        let base = icrc(&p).unwrap();
        let mut q = p.clone();
        q[8] ^= 0x0F; // TClass high nibble
        q[9] ^= 0xFF; // TClass low nibble + FlowLabel
        q[11] ^= 0x55; // FlowLabel
        q[15] ^= 0x33; // HopLmt
        q[48 + 4] ^= 0xFF; // BTH resv8a
        assert_eq!(icrc(&q), Some(base));
        let mut q = p.clone();
        q[8] ^= 0x10; // IPVer is invariant
        assert_ne!(icrc(&q), Some(base));
    }

    #[test]
    fn icrc_is_undefined_for_raw_or_short_packets() {
        assert_eq!(icrc(&[]), None);
        assert_eq!(icrc(&[0x00, 0x00, 0, 0, 0, 0, 0, 0]), None); // raw IPv6
        assert_eq!(icrc(&[0x00, 0x02, 0, 0, 0, 0, 0, 0, 0x64]), None); // BTH cut
    }
}
