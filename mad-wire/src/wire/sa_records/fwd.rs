//! LinearForwardingTableRecord (SA attribute 0x0015) and
//! MulticastForwardingTableRecord (0x0017), 72 bytes each.

use crate::wire::attr::{LinearFwdTable, MulticastFwdTable};
use crate::wire::AttributeId;

crate::wire_struct! {
    /// LinearForwardingTableRecord (ATTRIBUTES.md §11.12): one 64-LID block
    /// of a switch's LFT. Offsets from opensm `ib_lft_record_t`.
    pub struct LftRecord ("LinearForwardingTableRecord", 72) {
        /// LID of the switch.
        lid: uint u16 [0, 16] => "LID",
        /// Block number (LIDs `64 * block_num ..`).
        block_num: uint u16 [16, 16] => "BlockNum",
        /// Reserved (bytes 4–7).
        reserved: uint u32 [32, 32] => _,
        /// The LFT block (bytes 8–71).
        lft: nested LinearFwdTable [8] => "LinearForwardingTable",
    }
}

sa_record! {
    // opensm defines bits 0–1 (IB_LFTR_COMPMASK_*); 2 and 3 from the IBA
    // table as python-rdma `SALinearForwardingTableRecord` numbers it.
    LftRecord, AttributeId::SA_LFT_RECORD, padded 72;
    0 COMP_LID => "LID",
    1 COMP_BLOCK_NUM => "BlockNum",
    2 COMP_RESERVED => "reserved",
    3 COMP_LINEAR_FORWARDING_TABLE => "LinearForwardingTable",
}

crate::wire_struct! {
    /// MulticastForwardingTableRecord (ATTRIBUTES.md §11.12): one block of
    /// 32 port masks (16 ports each, at `position`) of a switch's MFT.
    ///
    /// Bytes 2–3 are laid out as opensm builds and reads them
    /// (`osm_sa_mft_record.c`: `position << 12 | block & 0x1FF`) and as
    /// saquery decodes them: Position in the top 4 bits, 3 reserved bits,
    /// BlockNum in the low 9 bits. (The IBA table, as python-rdma
    /// `SAMulticastForwardingTableRecord` transcribes it, has 2 reserved
    /// bits, a 4-bit Position and a 10-bit BlockNum instead.)
    pub struct MftRecord ("MulticastForwardingTableRecord", 72) {
        /// LID of the switch.
        lid: uint u16 [0, 16] => "LID",
        /// Position: which 16-port slice the masks cover (byte 2, mask 0xF0).
        position: uint u8 [16, 4] => "Position",
        /// Reserved (byte 2, mask 0x0E).
        reserved: uint u8 [20, 3] => _,
        /// Block number: MLIDs `0xC000 + 32 * block_num ..` (9 bits).
        block_num: uint u16 [23, 9] => "BlockNum",
        /// Reserved (bytes 4–7).
        reserved1: uint u32 [32, 32] => _,
        /// The MFT block (bytes 8–71).
        mft: nested MulticastFwdTable [8] => "MulticastForwardingTable",
    }
}

sa_record! {
    // IB_MFTR_COMPMASK_*: LID, POSITION, RESERVED1, BLOCK, RESERVED2;
    // bit 5 (the table) from the IBA table's component count.
    MftRecord, AttributeId::SA_MFT_RECORD, padded 72;
    0 COMP_LID => "LID",
    1 COMP_POSITION => "Position",
    2 COMP_RESERVED => "reserved",
    3 COMP_BLOCK_NUM => "BlockNum",
    4 COMP_RESERVED1 => "reserved",
    5 COMP_MULTICAST_FORWARDING_TABLE => "MulticastForwardingTable",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(LftRecord, MftRecord);

    #[test]
    fn lft_block_sits_at_byte_8() {
        let mut b = [0u8; 72];
        b[0..2].copy_from_slice(&0x0002u16.to_be_bytes());
        b[2..4].copy_from_slice(&0x0003u16.to_be_bytes());
        b[8] = 1;
        b[71] = 36;
        let r = LftRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.block_num), (2, 3));
        assert_eq!((r.lft.ports[0], r.lft.ports[63]), (1, 36));
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn mft_position_and_block_share_bytes_2_and_3_as_opensm_packs_them() {
        // opensm: position_block_num = position << 12 | (block & 0x1FF)
        let mut b = [0u8; 72];
        b[0..2].copy_from_slice(&0x0002u16.to_be_bytes());
        b[2..4].copy_from_slice(&((2u16 << 12) | 0x1FF).to_be_bytes());
        b[8..10].copy_from_slice(&0x8001u16.to_be_bytes());
        let r = MftRecord::parse(&b).unwrap();
        assert_eq!(
            (r.lid, r.position, r.reserved, r.block_num),
            (2, 2, 0, 0x1FF)
        );
        assert_eq!(r.mft.masks[0], 0x8001);
        assert_eq!(r.to_vec().unwrap(), b);

        let only_pos = MftRecord {
            position: 0xF,
            ..MftRecord::default()
        };
        assert_eq!(only_pos.to_vec().unwrap()[2..4], [0xF0, 0x00]);
        let too_big = MftRecord {
            block_num: 0x200,
            ..MftRecord::default()
        };
        assert!(too_big.to_vec().is_err());
    }

    #[test]
    fn component_bits_match_opensm_compmasks() {
        // ib_types.h: IB_LFTR_COMPMASK_BLOCK <<1; IB_MFTR_COMPMASK_POSITION
        // <<1, _BLOCK <<3.
        assert_eq!(LftRecord::COMP_BLOCK_NUM, 1 << 1);
        assert_eq!(MftRecord::COMP_POSITION, 1 << 1);
        assert_eq!(MftRecord::COMP_BLOCK_NUM, 1 << 3);
        assert_eq!((LftRecord::ATTR_OFFSET, MftRecord::ATTR_OFFSET), (9, 9));
    }
}
