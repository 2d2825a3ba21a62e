//! SMInfo (SMP 0x0020).

use super::SmState;

crate::wire_struct! {
    /// SMInfo, 21 bytes (ATTRIBUTES.md §6; libibmad labels). The IBA
    /// attribute is 21 bytes; opensm's packed `ib_sm_info_t` is 21 bytes
    /// too, while SMInfoRecord pads the record (not this attribute) to 32.
    pub struct SmInfo ("SMInfo", 21) {
        /// GUID of the SM's port (bytes 0–7).
        guid: uint u64 [0, 64] => "SmInfoGuid",
        /// SM_Key (bytes 8–15).
        sm_key: uint u64 [64, 64] => "SmInfoKey",
        /// ActCount (bytes 16–19).
        act_count: uint u32 [128, 32] => "SmActivity",
        /// Priority (byte 20, high nibble).
        priority: uint u8 [160, 4] => "SmPriority",
        /// SMState (byte 20, low nibble).
        sm_state: uint SmState [164, 4] => "SmState",
    }
}

impl SmInfo {
    /// Set AttributeModifier: handover.
    pub const ATTR_MOD_HANDOVER: u32 = 1;
    /// Set AttributeModifier: acknowledge.
    pub const ATTR_MOD_ACKNOWLEDGE: u32 = 2;
    /// Set AttributeModifier: disable.
    pub const ATTR_MOD_DISABLE: u32 = 3;
    /// Set AttributeModifier: standby.
    pub const ATTR_MOD_STANDBY: u32 = 4;
    /// Set AttributeModifier: discover.
    pub const ATTR_MOD_DISCOVER: u32 = 5;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(SmInfo);

    #[test]
    fn sm_info_fields_land_at_the_documented_offsets() {
        let mut b = [0u8; 21];
        b[0..8].copy_from_slice(&0x0002_c903_0000_0001u64.to_be_bytes());
        b[8..16].copy_from_slice(&0x1111_2222_3333_4444u64.to_be_bytes());
        b[16..20].copy_from_slice(&[0, 0, 1, 0]);
        b[20] = 0xE3;
        let s = SmInfo::parse(&b).unwrap();
        assert_eq!(s.guid, 0x0002_c903_0000_0001);
        assert_eq!(s.sm_key, 0x1111_2222_3333_4444);
        assert_eq!(s.act_count, 256);
        assert_eq!(s.priority, 14);
        assert_eq!(s.sm_state, SmState::MASTER);
        assert_eq!(s.to_vec().unwrap(), b.to_vec());
    }
}
