//! SLtoVLMappingTableRecord (SA attribute 0x0013, 16 bytes) and
//! VLArbitrationTableRecord (0x0036, 72 bytes).

use crate::wire::attr::{SlToVlTable, VlArbTable};
use crate::wire::AttributeId;

crate::wire_struct! {
    /// SLtoVLMappingTableRecord: a port's SL-to-VL table. Offsets from
    /// opensm `ib_slvl_table_record_t` (table at 8, size 16) and
    /// python-rdma `SASLToVLMappingTableRecord`.
    pub struct Sl2VlRecord ("SLtoVLMappingTableRecord", 16) {
        /// LID of the port (CA), or of port 0 (switch).
        lid: uint u16 [0, 16] => "LID",
        /// Input port (switches; reserved for CAs).
        input_port: uint u8 [16, 8] => "InputPort",
        /// Output port (switches; reserved for CAs).
        output_port: uint u8 [24, 8] => "OutputPort",
        /// Reserved (bytes 4–7).
        reserved: uint u32 [32, 32] => _,
        /// The SL-to-VL table (bytes 8–15).
        sl2vl: nested SlToVlTable [8] => "SLtoVLMappingTable",
    }
}

sa_record! {
    // opensm IB_SLVL_COMPMASK_* defines bits 0–2; 3 and 4 from the IBA
    // table as python-rdma numbers it.
    Sl2VlRecord, AttributeId::SA_SL2VL_RECORD, padded 16;
    0 COMP_LID => "LID",
    1 COMP_INPUT_PORT => "InputPort",
    2 COMP_OUTPUT_PORT => "OutputPort",
    3 COMP_RESERVED => "reserved",
    4 COMP_SL_TO_VL_TABLE => "SLtoVLMappingTable",
}

crate::wire_struct! {
    /// VLArbitrationTableRecord: one 32-entry block of a port's VL
    /// arbitration table. Offsets from opensm `ib_vl_arb_table_record_t`
    /// (table at 8, size 72) and python-rdma `SAVLArbitrationTableRecord`.
    pub struct VlArbRecord ("VLArbitrationTableRecord", 72) {
        /// LID of the port (CA), or of port 0 (switch).
        lid: uint u16 [0, 16] => "LID",
        /// Output port.
        output_port: uint u8 [16, 8] => "OutputPort",
        /// Block: 1 low 0–31, 2 low 32–63, 3 high 0–31, 4 high 32–63.
        block_num: uint u8 [24, 8] => "BlockNum",
        /// Reserved (bytes 4–7).
        reserved: uint u32 [32, 32] => _,
        /// The arbitration block (bytes 8–71).
        vl_arb: nested VlArbTable [8] => "VLArbitrationTable",
    }
}

sa_record! {
    // opensm IB_VLA_COMPMASK_* defines bits 0–2; 3 and 4 from the IBA
    // table as python-rdma numbers it.
    VlArbRecord, AttributeId::SA_VLARB_RECORD, padded 72;
    0 COMP_LID => "LID",
    1 COMP_OUTPUT_PORT => "OutputPort",
    2 COMP_BLOCK_NUM => "BlockNum",
    3 COMP_RESERVED => "reserved",
    4 COMP_VL_ARB_TABLE => "VLArbitrationTable",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(Sl2VlRecord, VlArbRecord);

    #[test]
    fn sl2vl_table_sits_at_byte_8_two_sls_per_byte() {
        let mut b = [0u8; 16];
        b[0..2].copy_from_slice(&0x0003u16.to_be_bytes());
        b[2] = 1;
        b[3] = 2;
        b[8] = 0x01; // SL0 -> VL0, SL1 -> VL1
        b[15] = 0xE7; // SL14 -> VL14, SL15 -> VL7
        let r = Sl2VlRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.input_port, r.output_port), (3, 1, 2));
        assert_eq!((r.sl2vl.vl[0], r.sl2vl.vl[1]), (0, 1));
        assert_eq!((r.sl2vl.vl[14], r.sl2vl.vl[15]), (14, 7));
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn vl_arb_block_sits_at_byte_8() {
        let mut b = [0u8; 72];
        b[0..2].copy_from_slice(&0x0003u16.to_be_bytes());
        b[2] = 4; // OutputPort
        b[3] = 1; // block: low 0-31
        b[8] = 0x01; // entry 0: VL 1
        b[9] = 0x40; // weight 64
        let r = VlArbRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.output_port, r.block_num), (3, 4, 1));
        assert_eq!(r.vl_arb.entries[0], 0x0140);
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_compmasks() {
        // ib_types.h: IB_SLVL_COMPMASK_IN_PORT <<1, _OUT_PORT <<2;
        // IB_VLA_COMPMASK_OUT_PORT <<1, _BLOCK <<2.
        assert_eq!(Sl2VlRecord::COMP_INPUT_PORT, 1 << 1);
        assert_eq!(Sl2VlRecord::COMP_OUTPUT_PORT, 1 << 2);
        assert_eq!(VlArbRecord::COMP_OUTPUT_PORT, 1 << 1);
        assert_eq!(VlArbRecord::COMP_BLOCK_NUM, 1 << 2);
        assert_eq!((Sl2VlRecord::ATTR_OFFSET, VlArbRecord::ATTR_OFFSET), (2, 9));
    }
}
