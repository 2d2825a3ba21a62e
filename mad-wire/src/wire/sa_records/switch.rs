//! SwitchInfoRecord (SA attribute 0x0014), 24 bytes.

use crate::wire::attr::SwitchInfo;
use crate::wire::AttributeId;

crate::wire_struct! {
    /// SwitchInfoRecord (ATTRIBUTES.md §11.3): a switch's SwitchInfo with
    /// the LID of its port 0. Offsets from opensm `ib_switch_info_record_t`.
    pub struct SwitchInfoRecord ("SwitchInfoRecord", 24) {
        /// LID of the switch (port 0).
        lid: uint u16 [0, 16] => "LID",
        /// Reserved (bytes 2–3).
        reserved: uint u16 [16, 16] => _,
        /// The switch's SwitchInfo (bytes 4–23).
        switch_info: nested SwitchInfo [4] => "SwitchInfo",
    }
}

sa_record! {
    // opensm defines only bits 0 and 1 (IB_SWIR_COMPMASK_*); the rest
    // follow the IBA table as python-rdma `SASwitchInfoRecord` numbers it,
    // where the 11 reserved bits after EnhancedPort0 are two components
    // (3 + 8 bits).
    SwitchInfoRecord, AttributeId::SA_SWITCHINFO_RECORD, padded 24;
    0 COMP_LID => "LID",
    1 COMP_RESERVED => "reserved",
    2 COMP_LINEAR_FDB_CAP => "LinearFDBCap",
    3 COMP_RANDOM_FDB_CAP => "RandomFDBCap",
    4 COMP_MULTICAST_FDB_CAP => "MulticastFDBCap",
    5 COMP_LINEAR_FDB_TOP => "LinearFDBTop",
    6 COMP_DEFAULT_PORT => "DefaultPort",
    7 COMP_DEFAULT_MCAST_PRIMARY_PORT => "DefaultMulticastPrimaryPort",
    8 COMP_DEFAULT_MCAST_NOT_PRIMARY_PORT => "DefaultMulticastNotPrimaryPort",
    9 COMP_LIFE_TIME_VALUE => "LifeTimeValue",
    10 COMP_PORT_STATE_CHANGE => "PortStateChange",
    11 COMP_OPT_SL_TO_VL_MAPPING => "OptimizedSLtoVLMappingProgramming",
    12 COMP_LIDS_PER_PORT => "LIDsPerPort",
    13 COMP_PARTITION_ENFORCEMENT_CAP => "PartitionEnforcementCap",
    14 COMP_INBOUND_ENFORCEMENT_CAP => "InboundEnforcementCap",
    15 COMP_OUTBOUND_ENFORCEMENT_CAP => "OutboundEnforcementCap",
    16 COMP_FILTER_RAW_INBOUND_CAP => "FilterRawInboundCap",
    17 COMP_FILTER_RAW_OUTBOUND_CAP => "FilterRawOutboundCap",
    18 COMP_ENHANCED_PORT0 => "EnhancedPort0",
    19 COMP_RESERVED1 => "reserved",
    20 COMP_RESERVED2 => "reserved",
    21 COMP_MULTICAST_FDB_TOP => "MulticastFDBTop",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(SwitchInfoRecord);

    #[test]
    fn switch_info_sits_at_byte_4() {
        let mut b = [0u8; 24];
        b[0..2].copy_from_slice(&0x0002u16.to_be_bytes());
        b[4..6].copy_from_slice(&0xC000u16.to_be_bytes()); // LinearFdbCap
        b[10..12].copy_from_slice(&0x0040u16.to_be_bytes()); // LinearFdbTop
        b[20] = 0x08; // EnhancedPort0 (byte 16 of SwitchInfo, mask 0x08)
        b[22..24].copy_from_slice(&0xC010u16.to_be_bytes()); // MulticastFDBTop
        let r = SwitchInfoRecord::parse(&b).unwrap();
        assert_eq!(r.lid, 2);
        assert_eq!(r.switch_info.linear_fdb_cap, 0xC000);
        assert_eq!(r.switch_info.linear_fdb_top, 0x40);
        assert!(r.switch_info.enhanced_port0);
        assert_eq!(r.switch_info.multicast_fdb_top, 0xC010);
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_ib_swir_compmask() {
        // ib_types.h: IB_SWIR_COMPMASK_LID <<0, _RESERVED1 <<1.
        assert_eq!(SwitchInfoRecord::COMP_LID, 1);
        assert_eq!(SwitchInfoRecord::COMP_RESERVED, 2);
        assert_eq!(SwitchInfoRecord::COMP_MULTICAST_FDB_TOP, 1 << 21);
        assert_eq!(SwitchInfoRecord::ATTR_OFFSET, 3);
    }
}
