//! P_KeyTableRecord (SA attribute 0x0033), 72 bytes.

use crate::wire::attr::PKeyTable;
use crate::wire::AttributeId;

crate::wire_struct! {
    /// P_KeyTableRecord (ATTRIBUTES.md §11.11): one 32-entry block of a
    /// port's P_Key table. Offsets from opensm `ib_pkey_table_record_t`.
    pub struct PKeyTableRecord ("P_KeyTableRecord", 72) {
        /// LID of the port (CA), or of port 0 (switch).
        lid: uint u16 [0, 16] => "LID",
        /// Block number.
        block_num: uint u16 [16, 16] => "BlockNum",
        /// Port number (switches; reserved for CAs).
        port_num: uint u8 [32, 8] => "PortNum",
        /// Reserved (bytes 5–7).
        reserved: uint u32 [40, 24] => _,
        /// The P_Key block (bytes 8–71).
        pkey_table: nested PKeyTable [8] => "P_KeyTable",
    }
}

sa_record! {
    // opensm defines bits 0–2 (IB_PKEY_COMPMASK_*); 3 and 4 from the IBA
    // table as python-rdma `SAPKeyTableRecord` numbers it.
    PKeyTableRecord, AttributeId::SA_PKEY_TABLE_RECORD, padded 72;
    0 COMP_LID => "LID",
    1 COMP_BLOCK_NUM => "BlockNum",
    2 COMP_PORT_NUM => "PortNum",
    3 COMP_RESERVED => "reserved",
    4 COMP_PKEY_TABLE => "P_KeyTable",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(PKeyTableRecord);

    #[test]
    fn pkey_block_sits_at_byte_8() {
        let mut b = [0u8; 72];
        b[0..2].copy_from_slice(&0x0009u16.to_be_bytes());
        b[2..4].copy_from_slice(&0x0002u16.to_be_bytes());
        b[4] = 5; // PortNum
        b[8..10].copy_from_slice(&0xFFFFu16.to_be_bytes());
        b[70..72].copy_from_slice(&0x8001u16.to_be_bytes());
        let r = PKeyTableRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.block_num, r.port_num), (9, 2, 5));
        assert_eq!(r.pkey_table.pkeys[0], 0xFFFF);
        assert_eq!(r.pkey_table.pkeys[31], 0x8001);
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_ib_pkey_compmask() {
        // ib_types.h: IB_PKEY_COMPMASK_LID <<0, _BLOCK <<1, _PORT <<2.
        assert_eq!(PKeyTableRecord::COMP_LID, 1);
        assert_eq!(PKeyTableRecord::COMP_BLOCK_NUM, 2);
        assert_eq!(PKeyTableRecord::COMP_PORT_NUM, 4);
        assert_eq!(PKeyTableRecord::ATTR_OFFSET, 9);
    }
}
