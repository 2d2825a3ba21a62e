//! SMInfoRecord (SA attribute 0x0018), 25 bytes, padded 32.

use crate::wire::attr::SmInfo;
use crate::wire::AttributeId;

crate::wire_struct! {
    /// SMInfoRecord (ATTRIBUTES.md §11.13): an SM's SMInfo with the LID of
    /// its port. Offsets from opensm `ib_sminfo_record_t` (sm_info at 4,
    /// struct size 32: the GetTable stride).
    pub struct SmInfoRecord ("SMInfoRecord", 25) {
        /// LID of the SM's port.
        lid: uint u16 [0, 16] => "LID",
        /// Reserved (bytes 2–3).
        reserved: uint u16 [16, 16] => _,
        /// The SM's SMInfo (bytes 4–24).
        sm_info: nested SmInfo [4] => "SMInfo",
    }
}

sa_record! {
    SmInfoRecord, AttributeId::SA_SMINFO_RECORD, padded 32;
    0 COMP_LID => "LID",
    1 COMP_RESERVED => "reserved",
    2 COMP_GUID => "GUID",
    3 COMP_SM_KEY => "SM_Key",
    4 COMP_ACT_COUNT => "ActCount",
    5 COMP_PRIORITY => "Priority",
    6 COMP_SM_STATE => "SMState",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::attr::SmState;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(SmInfoRecord);

    #[test]
    fn sm_info_sits_at_byte_4() {
        let mut b = [0u8; 25];
        b[0..2].copy_from_slice(&0x0001u16.to_be_bytes());
        b[4..12].copy_from_slice(&0x0008_f104_0399_d3f0u64.to_be_bytes());
        b[20..24].copy_from_slice(&1000u32.to_be_bytes()); // ActCount
        b[24] = 0xF3; // Priority 15, SMState 3 (master)
        let r = SmInfoRecord::parse(&b).unwrap();
        assert_eq!(r.lid, 1);
        assert_eq!(r.sm_info.guid, 0x0008_f104_0399_d3f0);
        assert_eq!(r.sm_info.act_count, 1000);
        assert_eq!((r.sm_info.priority, r.sm_info.sm_state), (15, SmState(3)));
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_ib_smir_compmask() {
        // ib_types.h: IB_SMIR_COMPMASK_GUID <<2, _PRIORITY <<5, _SMSTATE <<6.
        assert_eq!(SmInfoRecord::COMP_GUID, 1 << 2);
        assert_eq!(SmInfoRecord::COMP_PRIORITY, 1 << 5);
        assert_eq!(SmInfoRecord::COMP_SM_STATE, 1 << 6);
        assert_eq!(
            (SmInfoRecord::PADDED_LEN, SmInfoRecord::ATTR_OFFSET),
            (32, 4)
        );
    }
}
