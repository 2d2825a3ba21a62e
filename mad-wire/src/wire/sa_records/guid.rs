//! GUIDInfoRecord (SA attribute 0x0030), 72 bytes.

use crate::wire::attr::GuidInfo;
use crate::wire::AttributeId;

crate::wire_struct! {
    /// GUIDInfoRecord (ATTRIBUTES.md §11.10): one 8-GUID block of a port's
    /// GUIDInfo table. Offsets from libibmad `IB_SA_GIR_*` (it prints the
    /// GUIDs as `Guid0`…`Guid7`) and opensm `ib_guidinfo_record_t`.
    pub struct GuidInfoRecord ("GUIDInfoRecord", 72) {
        /// LID of the port.
        lid: uint u16 [0, 16] => "Lid",
        /// Block number.
        block_num: uint u8 [16, 8] => "BlockNum",
        /// Reserved (byte 3).
        reserved: uint u8 [24, 8] => _,
        /// Reserved (bytes 4–7).
        reserved1: uint u32 [32, 32] => _,
        /// The GUID block (bytes 8–71).
        guid_info: nested GuidInfo [8] => "GUIDInfo",
    }
}

sa_record! {
    GuidInfoRecord, AttributeId::SA_GUIDINFO_RECORD, padded 72;
    0 COMP_LID => "LID",
    1 COMP_BLOCK_NUM => "BlockNum",
    2 COMP_RESERVED => "reserved",
    3 COMP_RESERVED1 => "reserved",
    4 COMP_GID0 => "GID0",
    5 COMP_GID1 => "GID1",
    6 COMP_GID2 => "GID2",
    7 COMP_GID3 => "GID3",
    8 COMP_GID4 => "GID4",
    9 COMP_GID5 => "GID5",
    10 COMP_GID6 => "GID6",
    11 COMP_GID7 => "GID7",
}

impl GuidInfoRecord {
    /// ComponentMask bit of GUID entry `i` of the block (`i < 8`).
    #[must_use]
    pub fn comp_gid(i: usize) -> Option<u64> {
        (i < 8).then(|| Self::COMP_GID0 << i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(GuidInfoRecord);

    #[test]
    fn guid_block_sits_at_byte_8() {
        let mut b = [0u8; 72];
        b[0..2].copy_from_slice(&0x0004u16.to_be_bytes());
        b[2] = 1; // BlockNum
        b[8..16].copy_from_slice(&0x0002_c903_00aa_bb01u64.to_be_bytes());
        b[64..72].copy_from_slice(&0x0002_c903_00aa_bb08u64.to_be_bytes());
        let r = GuidInfoRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.block_num), (4, 1));
        assert_eq!(r.guid_info.guids[0], 0x0002_c903_00aa_bb01);
        assert_eq!(r.guid_info.guids[7], 0x0002_c903_00aa_bb08);
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_ib_gir_compmask() {
        // ib_types.h: IB_GIR_COMPMASK_BLOCKNUM <<1, _GID0 <<4, _GID7 <<11.
        assert_eq!(GuidInfoRecord::COMP_BLOCK_NUM, 1 << 1);
        assert_eq!(GuidInfoRecord::comp_gid(0), Some(1 << 4));
        assert_eq!(GuidInfoRecord::comp_gid(7), Some(1 << 11));
        assert_eq!(GuidInfoRecord::comp_gid(8), None);
        assert_eq!(GuidInfoRecord::ATTR_OFFSET, 9);
    }
}
