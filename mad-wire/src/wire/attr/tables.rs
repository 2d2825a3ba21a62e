//! Table-block attributes: GUIDInfo (0x0014), P_KeyTable (0x0016),
//! SLtoVLMappingTable (0x0017) and VLArbitrationTable (0x0018)
//! (ATTRIBUTES.md §5).

crate::wire_struct! {
    /// One GUIDInfo block: 8 GUIDs (libibmad prints them `GUID0`…`GUID7`).
    /// AttributeModifier = block number; entry 0 of block 0 is the port
    /// GUID.
    pub struct GuidInfo ("GUIDInfo", 64) {
        /// The 8 GUIDs of the block.
        guids: array [u64; 8] [0, 64] => "GUID",
    }
}

impl GuidInfo {
    /// GUIDs per block.
    pub const ENTRIES: usize = 8;
}

crate::wire_struct! {
    /// One P_KeyTable block: 32 P_Keys. Bit 15 of a P_Key is the
    /// membership bit ([`PKeyTable::FULL_MEMBER`]), the low 15 bits the
    /// key. AttributeModifier: bits 15..0 block; on a switch bits 31..16
    /// the port number.
    pub struct PKeyTable ("P_KeyTable", 64) {
        /// The 32 P_Keys of the block.
        pkeys: array [u16; 32] [0, 16] => "PKeys",
    }
}

impl PKeyTable {
    /// P_Keys per block.
    pub const ENTRIES: usize = 32;
    /// Membership bit: set = full member, clear = limited member.
    pub const FULL_MEMBER: u16 = 0x8000;
    /// The partition key without the membership bit.
    #[must_use]
    pub fn base_key(pkey: u16) -> u16 {
        pkey & 0x7FFF
    }
}

crate::wire_struct! {
    /// SLtoVLMappingTable: 16 four-bit VLs in 8 bytes, `vl[sl]`; byte `i`
    /// holds SL `2i` in its high nibble and SL `2i+1` in its low nibble
    /// (libibmad `ib_slvl_get_i`). AttributeModifier on a switch:
    /// bits 15..8 input port, 7..0 output port.
    pub struct SlToVlTable ("SLtoVLMappingTable", 8) {
        /// VL for each SL 0..15.
        vl: array [u8; 16] [0, 4] => "SLToVLMap",
    }
}

crate::wire_struct! {
    /// One VLArbitrationTable block: 32 two-byte entries. Each `u16` of
    /// `entries` is one entry as on the wire: the high byte holds the VL
    /// in its low nibble (its high nibble is reserved and kept as read),
    /// the low byte is the weight. Use [`VlArbTable::vl`],
    /// [`VlArbTable::weight`] and [`VlArbTable::entry`].
    /// AttributeModifier: bits 31..16 = 1 low 0–31, 2 low 32–63, 3 high
    /// 0–31, 4 high 32–63; bits 15..0 output port.
    pub struct VlArbTable ("VLArbitrationTable", 64) {
        /// The raw entries.
        entries: array [u16; 32] [0, 16] => "VLArbTbl",
    }
}

/// The SLtoVLMappingTable a port holds before an SM programs one, as
/// ibsim and the built-in fabric give it (8 bytes as on the wire: SL `i`
/// to VL `i` for SL 0–14, SL 15 to VL 7).
pub const DEFAULT_SL2VL: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7];

/// The VLArbitration table a port holds before an SM programs one, as
/// ibsim and the built-in fabric give it: 128 entries (low priority
/// 0–63, then high priority 0–63); low priority VL 1–14 weight 4 (VL 0
/// weight 0), high priority VL 0 weight 4.
#[must_use]
pub fn default_vlarb() -> Box<[u16; 128]> {
    let mut t = Box::new([0u16; 128]);
    for vl in 0..15u8 {
        t[usize::from(vl)] = VlArbTable::entry(vl, if vl == 0 { 0 } else { 4 });
        t[64 + usize::from(vl)] = VlArbTable::entry(vl, if vl == 0 { 4 } else { 0 });
    }
    t
}

impl VlArbTable {
    /// Entries per block.
    pub const ENTRIES: usize = 32;

    /// VL of entry `i` (low nibble of its first byte); `None` past 31.
    #[must_use]
    pub fn vl(&self, i: usize) -> Option<u8> {
        self.entries.get(i).map(|e| ((e >> 8) & 0x0F) as u8)
    }

    /// Weight of entry `i` (its second byte); `None` past 31.
    #[must_use]
    pub fn weight(&self, i: usize) -> Option<u8> {
        self.entries.get(i).map(|e| (e & 0xFF) as u8)
    }

    /// The raw entry for `vl` (low 4 bits used) and `weight`, reserved
    /// bits zero.
    #[must_use]
    pub const fn entry(vl: u8, weight: u8) -> u16 {
        (((vl & 0x0F) as u16) << 8) | weight as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(GuidInfo, PKeyTable, SlToVlTable, VlArbTable);

    #[test]
    fn guid_info_reads_eight_big_endian_guids() {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&0x0002_c903_00a1_b2c3u64.to_be_bytes());
        b[56..64].copy_from_slice(&0x8000_0000_0000_0007u64.to_be_bytes());
        let g = GuidInfo::parse(&b).unwrap();
        assert_eq!(g.guids[0], 0x0002_c903_00a1_b2c3);
        assert_eq!(g.guids[1], 0);
        assert_eq!(g.guids[7], 0x8000_0000_0000_0007);
    }

    #[test]
    fn pkey_table_reads_32_big_endian_keys() {
        let mut b = [0u8; 64];
        b[0..2].copy_from_slice(&[0xFF, 0xFF]);
        b[2..4].copy_from_slice(&[0x7F, 0xFF]);
        b[62..64].copy_from_slice(&[0x80, 0x01]);
        let p = PKeyTable::parse(&b).unwrap();
        assert_eq!(p.pkeys[0], 0xFFFF);
        assert_eq!(p.pkeys[0] & PKeyTable::FULL_MEMBER, PKeyTable::FULL_MEMBER);
        assert_eq!(p.pkeys[1] & PKeyTable::FULL_MEMBER, 0);
        assert_eq!(PKeyTable::base_key(p.pkeys[1]), 0x7FFF);
        assert_eq!(p.pkeys[31], 0x8001);
    }

    #[test]
    fn sl_to_vl_even_sls_are_high_nibbles() {
        let b = [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF];
        let t = SlToVlTable::parse(&b).unwrap();
        let want: Vec<u8> = (0..16).collect();
        assert_eq!(t.vl.to_vec(), want);
        let t2 = SlToVlTable::parse(&[0xF0, 0, 0, 0, 0, 0, 0, 0x0E]).unwrap();
        assert_eq!((t2.vl[0], t2.vl[1], t2.vl[14], t2.vl[15]), (15, 0, 0, 14));
    }

    #[test]
    fn vl_arb_entry_is_vl_byte_then_weight_byte() {
        let mut b = [0u8; 64];
        b[0] = 0xF3; // reserved high nibble set, VL 3
        b[1] = 0x40;
        b[62] = 0x0F;
        b[63] = 0xFF;
        let t = VlArbTable::parse(&b).unwrap();
        assert_eq!(t.vl(0), Some(3));
        assert_eq!(t.weight(0), Some(0x40));
        assert_eq!(t.entries[0], 0xF340);
        assert_eq!((t.vl(31), t.weight(31)), (Some(15), Some(255)));
        assert_eq!(t.vl(32), None);
        assert_eq!(t.weight(32), None);
        assert_eq!(VlArbTable::entry(3, 0x40), 0x0340);
        assert_eq!(t.to_vec().unwrap(), b.to_vec());
    }
}
