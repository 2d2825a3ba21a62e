//! PortInfoRecord (SA attribute 0x0012), 68 bytes, padded 72.

use crate::wire::attr::PortInfo;
use crate::wire::AttributeId;

crate::wire_struct! {
    /// PortInfoRecord (ATTRIBUTES.md §11.2): a port's PortInfo with the
    /// LID and number that name it. Offsets from opensm
    /// `ib_portinfo_record_t` (port_info at 4, struct size 72).
    pub struct PortInfoRecord ("PortInfoRecord", 68) {
        /// LID of the end port (for a switch, of port 0).
        lid: uint u16 [0, 16] => "EndportLID",
        /// Port number.
        port_num: uint u8 [16, 8] => "PortNum",
        /// Options (reserved before IBA 1.3).
        options: uint u8 [24, 8] => "Options",
        /// The port's PortInfo (bytes 4–67).
        port_info: nested PortInfo [4] => "PortInfo",
    }
}

sa_record! {
    PortInfoRecord, AttributeId::SA_PORTINFO_RECORD, padded 72;
    0 COMP_LID => "EndportLID",
    1 COMP_PORT_NUM => "PortNum",
    2 COMP_OPTIONS => "Options",
    3 COMP_MKEY => "M_Key",
    4 COMP_GID_PREFIX => "GidPrefix",
    5 COMP_BASE_LID => "LID",
    6 COMP_MASTER_SM_LID => "MasterSMLID",
    7 COMP_CAPABILITY_MASK => "CapabilityMask",
    8 COMP_DIAG_CODE => "DiagCode",
    9 COMP_MKEY_LEASE_PERIOD => "M_KeyLeasePeriod",
    10 COMP_LOCAL_PORT_NUM => "LocalPortNum",
    11 COMP_LINK_WIDTH_ENABLED => "LinkWidthEnabled",
    12 COMP_LINK_WIDTH_SUPPORTED => "LinkWidthSupported",
    13 COMP_LINK_WIDTH_ACTIVE => "LinkWidthActive",
    14 COMP_LINK_SPEED_SUPPORTED => "LinkSpeedSupported",
    15 COMP_PORT_STATE => "PortState",
    16 COMP_PORT_PHYS_STATE => "PortPhysicalState",
    17 COMP_LINK_DOWN_DEFAULT_STATE => "LinkDownDefaultState",
    18 COMP_MKEY_PROTECT_BITS => "M_KeyProtectBits",
    19 COMP_RESERVED => "reserved",
    20 COMP_LMC => "LMC",
    21 COMP_LINK_SPEED_ACTIVE => "LinkSpeedActive",
    22 COMP_LINK_SPEED_ENABLED => "LinkSpeedEnabled",
    23 COMP_NEIGHBOR_MTU => "NeighborMTU",
    24 COMP_MASTER_SM_SL => "MasterSMSL",
    25 COMP_VL_CAP => "VLCap",
    26 COMP_INIT_TYPE => "InitType",
    27 COMP_VL_HIGH_LIMIT => "VLHighLimit",
    28 COMP_VL_ARB_HIGH_CAP => "VLArbitrationHighCap",
    29 COMP_VL_ARB_LOW_CAP => "VLArbitrationLowCap",
    30 COMP_INIT_TYPE_REPLY => "InitTypeReply",
    31 COMP_MTU_CAP => "MTUCap",
    32 COMP_VL_STALL_COUNT => "VLStallCount",
    33 COMP_HOQ_LIFE => "HOQLife",
    34 COMP_OPERATIONAL_VLS => "OperationalVLs",
    35 COMP_PARTITION_ENFORCEMENT_INBOUND => "PartitionEnforcementInbound",
    36 COMP_PARTITION_ENFORCEMENT_OUTBOUND => "PartitionEnforcementOutbound",
    37 COMP_FILTER_RAW_INBOUND => "FilterRawInbound",
    38 COMP_FILTER_RAW_OUTBOUND => "FilterRawOutbound",
    39 COMP_MKEY_VIOLATIONS => "M_KeyViolations",
    40 COMP_PKEY_VIOLATIONS => "P_KeyViolations",
    41 COMP_QKEY_VIOLATIONS => "Q_KeyViolations",
    42 COMP_GUID_CAP => "GUIDCap",
    43 COMP_CLIENT_REREGISTER => "ClientReregister",
    44 COMP_MCAST_PKEY_TRAP_SUPPRESSION => "MulticastPKeyTrapSuppressionEnabled",
    45 COMP_SUBNET_TIMEOUT => "SubnetTimeOut",
    46 COMP_RESERVED1 => "reserved",
    47 COMP_RESP_TIME_VALUE => "RespTimeValue",
    48 COMP_LOCAL_PHY_ERRORS => "LocalPhyErrors",
    49 COMP_OVERRUN_ERRORS => "OverrunErrors",
    50 COMP_MAX_CREDIT_HINT => "MaxCreditHint",
    51 COMP_RESERVED2 => "reserved",
    52 COMP_LINK_ROUND_TRIP_LATENCY => "LinkRoundTripLatency",
    53 COMP_CAPABILITY_MASK2 => "CapabilityMask2",
    54 COMP_LINK_SPEED_EXT_ACTIVE => "LinkSpeedExtActive",
    55 COMP_LINK_SPEED_EXT_SUPPORTED => "LinkSpeedExtSupported",
    56 COMP_RESERVED3 => "reserved",
    57 COMP_LINK_SPEED_EXT_ENABLED => "LinkSpeedExtEnabled",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::attr::PortState;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(PortInfoRecord);

    #[test]
    fn port_info_sits_at_byte_4() {
        let mut b = [0u8; 68];
        b[0..2].copy_from_slice(&0x0007u16.to_be_bytes());
        b[2] = 3; // PortNum
        b[3] = 0x01; // Options
        b[4 + 16..4 + 18].copy_from_slice(&0x0042u16.to_be_bytes()); // PortInfo.LID
        b[4 + 32] = 0x44; // LinkSpeedSupported 4, PortState Active (4)
        b[4 + 62] = 0x21; // LinkSpeedExtActive 2, LinkSpeedExtSupported 1
        b[4 + 63] = 0x1F; // LinkSpeedExtEnabled (low 5 bits of the last byte)
        let r = PortInfoRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.port_num, r.options), (7, 3, 1));
        assert_eq!(r.port_info.lid, 0x42);
        assert_eq!(r.port_info.port_state, PortState(4));
        assert_eq!(r.port_info.link_speed_supported, 4);
        assert_eq!(r.port_info.link_speed_ext_active, 2);
        assert_eq!(r.port_info.link_speed_ext_supported, 1);
        assert_eq!(r.port_info.link_speed_ext_enabled, 0x1F);
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_ib_pir_compmask() {
        // ib_types.h: IB_PIR_COMPMASK_BASELID <<5, _CAPMASK <<7,
        // _PORTSTATE <<15, _CLIENTREREG <<43, _LINKSPDEXTENAB <<57.
        assert_eq!(PortInfoRecord::COMP_BASE_LID, 1 << 5);
        assert_eq!(PortInfoRecord::COMP_CAPABILITY_MASK, 1 << 7);
        assert_eq!(PortInfoRecord::COMP_PORT_STATE, 1 << 15);
        assert_eq!(PortInfoRecord::COMP_CLIENT_REREGISTER, 1 << 43);
        assert_eq!(PortInfoRecord::COMP_LINK_SPEED_EXT_ENABLED, 1 << 57);
        assert_eq!(PortInfoRecord::ATTR_OFFSET, 9);
    }
}
