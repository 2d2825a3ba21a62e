//! PortInfo (SMP 0x0015) and its capability-mask bits.

use super::{PhysPortState, PortState};

crate::wire_struct! {
    /// PortInfo, 64 bytes (ATTRIBUTES.md §3; offsets and labels from
    /// libibmad `fields.c`, including the XDR `LinkSpeedExt*2` fields of
    /// byte 56). The AttributeModifier selects the port.
    ///
    /// Field order is wire order. Note for SA PortInfoRecord component
    /// masks: opensm's `IB_PIR_COMPMASK_*` treats byte 56 as one reserved
    /// component, while this struct splits it into four fields.
    pub struct PortInfo ("PortInfo", 64) {
        /// M_Key (bytes 0–7).
        m_key: uint u64 [0, 64] => "Mkey",
        /// GidPrefix / subnet prefix (bytes 8–15).
        gid_prefix: uint u64 [64, 64] => "GidPrefix",
        /// Base LID (bytes 16–17).
        lid: uint u16 [128, 16] => "Lid",
        /// MasterSMLID (bytes 18–19).
        master_sm_lid: uint u16 [144, 16] => "SMLid",
        /// CapabilityMask (bytes 20–23); bits in [`port_cap`].
        capability_mask: uint u32 [160, 32] => "CapMask",
        /// DiagCode (bytes 24–25).
        diag_code: uint u16 [192, 16] => "DiagCode",
        /// M_KeyLeasePeriod (bytes 26–27).
        m_key_lease_period: uint u16 [208, 16] => "MkeyLeasePeriod",
        /// LocalPortNum (byte 28).
        local_port_num: uint u8 [224, 8] => "LocalPort",
        /// LinkWidthEnabled (byte 29).
        link_width_enabled: uint u8 [232, 8] => "LinkWidthEnabled",
        /// LinkWidthSupported (byte 30).
        link_width_supported: uint u8 [240, 8] => "LinkWidthSupported",
        /// LinkWidthActive (byte 31).
        link_width_active: uint u8 [248, 8] => "LinkWidthActive",
        /// LinkSpeedSupported (byte 32, high nibble).
        link_speed_supported: uint u8 [256, 4] => "LinkSpeedSupported",
        /// PortState (byte 32, low nibble); libibmad calls it `LinkState`.
        port_state: uint PortState [260, 4] => "LinkState",
        /// PortPhysicalState (byte 33, high nibble).
        port_phys_state: uint PhysPortState [264, 4] => "PhysLinkState",
        /// LinkDownDefaultState (byte 33, low nibble): 0 NoChange,
        /// 1 Sleep, 2 Polling.
        link_down_default_state: uint u8 [268, 4] => "LinkDownDefState",
        /// M_KeyProtectBits (byte 34, 0xC0).
        m_key_protect_bits: uint u8 [272, 2] => "ProtectBits",
        /// Reserved (byte 34, 0x38).
        reserved: uint u8 [274, 3] => _,
        /// LMC (byte 34, 0x07).
        lmc: uint u8 [277, 3] => "LMC",
        /// LinkSpeedActive (byte 35, high nibble).
        link_speed_active: uint u8 [280, 4] => "LinkSpeedActive",
        /// LinkSpeedEnabled (byte 35, low nibble).
        link_speed_enabled: uint u8 [284, 4] => "LinkSpeedEnabled",
        /// NeighborMTU (byte 36, high nibble): 1 = 256 … 5 = 4096.
        neighbor_mtu: uint u8 [288, 4] => "NeighborMTU",
        /// MasterSMSL (byte 36, low nibble).
        master_sm_sl: uint u8 [292, 4] => "SMSL",
        /// VLCap (byte 37, high nibble).
        vl_cap: uint u8 [296, 4] => "VLCap",
        /// InitType (byte 37, low nibble).
        init_type: uint u8 [300, 4] => "InitType",
        /// VLHighLimit (byte 38).
        vl_high_limit: uint u8 [304, 8] => "VLHighLimit",
        /// VLArbitrationHighCap (byte 39).
        vl_arb_high_cap: uint u8 [312, 8] => "VLArbHighCap",
        /// VLArbitrationLowCap (byte 40).
        vl_arb_low_cap: uint u8 [320, 8] => "VLArbLowCap",
        /// InitTypeReply (byte 41, high nibble).
        init_type_reply: uint u8 [328, 4] => "InitReply",
        /// MTUCap (byte 41, low nibble).
        mtu_cap: uint u8 [332, 4] => "MtuCap",
        /// VLStallCount (byte 42, 0xE0).
        vl_stall_count: uint u8 [336, 3] => "VLStallCount",
        /// HOQLife (byte 42, 0x1F).
        hoq_life: uint u8 [339, 5] => "HoqLife",
        /// OperationalVLs (byte 43, high nibble).
        operational_vls: uint u8 [344, 4] => "OperVLs",
        /// PartitionEnforcementInbound (byte 43, 0x08).
        partition_enforcement_inbound: uint bool [348, 1] => "PartEnforceInb",
        /// PartitionEnforcementOutbound (byte 43, 0x04).
        partition_enforcement_outbound: uint bool [349, 1] => "PartEnforceOutb",
        /// FilterRawInbound (byte 43, 0x02).
        filter_raw_inbound: uint bool [350, 1] => "FilterRawInb",
        /// FilterRawOutbound (byte 43, 0x01).
        filter_raw_outbound: uint bool [351, 1] => "FilterRawOutb",
        /// M_KeyViolations (bytes 44–45).
        m_key_violations: uint u16 [352, 16] => "MkeyViolations",
        /// P_KeyViolations (bytes 46–47).
        p_key_violations: uint u16 [368, 16] => "PkeyViolations",
        /// Q_KeyViolations (bytes 48–49).
        q_key_violations: uint u16 [384, 16] => "QkeyViolations",
        /// GUIDCap: GUID table size (byte 50).
        guid_cap: uint u8 [400, 8] => "GuidCap",
        /// ClientReregister (byte 51, 0x80).
        client_reregister: uint bool [408, 1] => "ClientReregister",
        /// MulticastPKeyTrapSuppressionEnabled (byte 51, 0x60).
        mcast_pkey_trap_suppression_enabled: uint u8 [409, 2] => "McastPkeyTrapSuppressionEnabled",
        /// SubnetTimeOut (byte 51, 0x1F).
        subnet_timeout: uint u8 [411, 5] => "SubnetTimeout",
        /// Reserved (byte 52, 0xE0).
        reserved1: uint u8 [416, 3] => _,
        /// RespTimeValue (byte 52, 0x1F).
        resp_time_value: uint u8 [419, 5] => "RespTimeVal",
        /// LocalPhyErrors threshold (byte 53, high nibble).
        local_phy_errors: uint u8 [424, 4] => "LocalPhysErr",
        /// OverrunErrors threshold (byte 53, low nibble).
        overrun_errors: uint u8 [428, 4] => "OverrunErr",
        /// MaxCreditHint (bytes 54–55).
        max_credit_hint: uint u16 [432, 16] => "MaxCreditHint",
        /// Reserved (byte 56, 0x80).
        reserved2: uint u8 [448, 1] => _,
        /// LinkSpeedExtActive2 (byte 56, 0x60): 1 = 212.5 Gbps (XDR).
        link_speed_ext_active2: uint u8 [449, 2] => "LinkSpeedExtActive2",
        /// LinkSpeedExtSupported2 (byte 56, 0x18).
        link_speed_ext_supported2: uint u8 [451, 2] => "LinkSpeedExtSupported2",
        /// LinkSpeedExtEnabled2 (byte 56, 0x07).
        link_speed_ext_enabled2: uint u8 [453, 3] => "LinkSpeedExtEnabled2",
        /// LinkRoundTripLatency (bytes 57–59).
        link_round_trip_latency: uint u32 [456, 24] => "RoundTrip",
        /// CapabilityMask2 (bytes 60–61); bits in [`port_cap2`].
        capability_mask2: uint u16 [480, 16] => "CapabilityMask2",
        /// LinkSpeedExtActive (byte 62, high nibble).
        link_speed_ext_active: uint u8 [496, 4] => "LinkSpeedExtActive",
        /// LinkSpeedExtSupported (byte 62, low nibble).
        link_speed_ext_supported: uint u8 [500, 4] => "LinkSpeedExtSupported",
        /// Reserved (byte 63, 0xE0).
        reserved3: uint u8 [504, 3] => _,
        /// LinkSpeedExtEnabled (byte 63, 0x1F).
        link_speed_ext_enabled: uint u8 [507, 5] => "LinkSpeedExtEnabled",
    }
}

impl PortInfo {
    /// True when CapabilityMask has `bit` (a [`port_cap`] constant) set.
    #[must_use]
    pub fn has_cap(&self, bit: u32) -> bool {
        self.capability_mask & bit != 0
    }

    /// True when CapabilityMask2 has `bit` (a [`port_cap2`] constant) set.
    #[must_use]
    pub fn has_cap2(&self, bit: u16) -> bool {
        self.capability_mask2 & bit != 0
    }
}

/// PortInfo.CapabilityMask bits (ATTRIBUTES.md §3.1). Constant names
/// follow opensm's `IB_PORT_CAP_*`; values are host-order masks of the
/// 32-bit field (bit n = `1 << n`).
pub mod port_cap {
    /// Bit 0: reserved.
    pub const RESV0: u32 = 1 << 0;
    /// Bit 1: IsSM.
    pub const IS_SM: u32 = 1 << 1;
    /// Bit 2: IsNoticeSupported.
    pub const HAS_NOTICE: u32 = 1 << 2;
    /// Bit 3: IsTrapSupported.
    pub const HAS_TRAP: u32 = 1 << 3;
    /// Bit 4: IsOptionalIPDSupported.
    pub const HAS_IPD: u32 = 1 << 4;
    /// Bit 5: IsAutomaticMigrationSupported.
    pub const HAS_AUTO_MIG: u32 = 1 << 5;
    /// Bit 6: IsSLMappingSupported.
    pub const HAS_SL_MAP: u32 = 1 << 6;
    /// Bit 7: IsMKeyNVRAM.
    pub const HAS_NV_MKEY: u32 = 1 << 7;
    /// Bit 8: IsPKeyNVRAM.
    pub const HAS_NV_PKEY: u32 = 1 << 8;
    /// Bit 9: IsLedInfoSupported.
    pub const HAS_LED_INFO: u32 = 1 << 9;
    /// Bit 10: IsSMdisabled.
    pub const SM_DISAB: u32 = 1 << 10;
    /// Bit 11: IsSystemImageGUIDsupported.
    pub const HAS_SYS_IMG_GUID: u32 = 1 << 11;
    /// Bit 12: IsPkeySwitchExternalPortTrapSupported.
    pub const HAS_PKEY_SW_EXT_PORT_TRAP: u32 = 1 << 12;
    /// Bit 13: cable info supported (libibmad prints nothing for it).
    pub const HAS_CABLE_INFO: u32 = 1 << 13;
    /// Bit 14: IsExtendedSpeedsSupported.
    pub const HAS_EXT_SPEEDS: u32 = 1 << 14;
    /// Bit 15: IsCapabilityMask2Supported.
    pub const HAS_CAP_MASK2: u32 = 1 << 15;
    /// Bit 16: IsCommunicationManagementSupported.
    pub const HAS_COM_MGT: u32 = 1 << 16;
    /// Bit 17: IsSNMPTunnelingSupported.
    pub const HAS_SNMP: u32 = 1 << 17;
    /// Bit 18: IsReinitSupported.
    pub const REINIT: u32 = 1 << 18;
    /// Bit 19: IsDeviceManagementSupported.
    pub const HAS_DEV_MGT: u32 = 1 << 19;
    /// Bit 20: IsVendorClassSupported.
    pub const HAS_VEND_CLS: u32 = 1 << 20;
    /// Bit 21: IsDRNoticeSupported.
    pub const HAS_DR_NTC: u32 = 1 << 21;
    /// Bit 22: IsCapabilityMaskNoticeSupported.
    pub const HAS_CAP_NTC: u32 = 1 << 22;
    /// Bit 23: IsBootManagementSupported.
    pub const HAS_BM: u32 = 1 << 23;
    /// Bit 24: IsLinkRoundTripLatencySupported.
    pub const HAS_LINK_RT_LATENCY: u32 = 1 << 24;
    /// Bit 25: IsClientRegistrationSupported.
    pub const HAS_CLIENT_REREG: u32 = 1 << 25;
    /// Bit 26: IsOtherLocalChangesNoticeSupported.
    pub const HAS_OTHER_LOCAL_CHANGES_NTC: u32 = 1 << 26;
    /// Bit 27: IsLinkSpeedWidthPairsTableSupported.
    pub const HAS_LINK_SPEED_WIDTH_PAIRS_TBL: u32 = 1 << 27;
    /// Bit 28: IsVendorSpecificMadsTableSupported.
    pub const HAS_VEND_MADS: u32 = 1 << 28;
    /// Bit 29: IsMcastPkeyTrapSuppressionSupported.
    pub const HAS_MCAST_PKEY_TRAP_SUPPRESS: u32 = 1 << 29;
    /// Bit 30: IsMulticastFDBTopSupported.
    pub const HAS_MCAST_FDB_TOP: u32 = 1 << 30;
    /// Bit 31: IsHierarchyInfoSupported.
    pub const HAS_HIER_INFO: u32 = 1 << 31;

    /// `(bit number, text)` for every bit libibmad's
    /// `mad_dump_portcapmask` names, in the order it prints them. Bits 0
    /// and 13 are not printed. The misspelling of bit 16
    /// ("Communicaton") is libibmad's and is kept for output matching.
    pub const PRINT_TEXTS: &[(u32, &str)] = &[
        (1, "IsSM"),
        (2, "IsNoticeSupported"),
        (3, "IsTrapSupported"),
        (4, "IsOptionalIPDSupported"),
        (5, "IsAutomaticMigrationSupported"),
        (6, "IsSLMappingSupported"),
        (7, "IsMKeyNVRAM"),
        (8, "IsPKeyNVRAM"),
        (9, "IsLedInfoSupported"),
        (10, "IsSMdisabled"),
        (11, "IsSystemImageGUIDsupported"),
        (12, "IsPkeySwitchExternalPortTrapSupported"),
        (14, "IsExtendedSpeedsSupported"),
        (15, "IsCapabilityMask2Supported"),
        (16, "IsCommunicatonManagementSupported"),
        (17, "IsSNMPTunnelingSupported"),
        (18, "IsReinitSupported"),
        (19, "IsDeviceManagementSupported"),
        (20, "IsVendorClassSupported"),
        (21, "IsDRNoticeSupported"),
        (22, "IsCapabilityMaskNoticeSupported"),
        (23, "IsBootManagementSupported"),
        (24, "IsLinkRoundTripLatencySupported"),
        (25, "IsClientRegistrationSupported"),
        (26, "IsOtherLocalChangesNoticeSupported"),
        (27, "IsLinkSpeedWidthPairsTableSupported"),
        (28, "IsVendorSpecificMadsTableSupported"),
        (29, "IsMcastPkeyTrapSuppressionSupported"),
        (30, "IsMulticastFDBTopSupported"),
        (31, "IsHierarchyInfoSupported"),
    ];

    /// The print texts of the bits set in `mask`, in libibmad's order.
    pub fn texts(mask: u32) -> impl Iterator<Item = &'static str> {
        PRINT_TEXTS
            .iter()
            .filter(move |(bit, _)| mask & (1u32 << bit) != 0)
            .map(|(_, t)| *t)
    }
}

/// PortInfo.CapabilityMask2 bits (ATTRIBUTES.md §3.2), host-order masks of
/// the 16-bit field. Names follow opensm's `IB_PORT_CAP2_*` where it has
/// one.
pub mod port_cap2 {
    /// Bit 0: IsSetNodeDescriptionSupported.
    pub const IS_SET_NODE_DESC_SUPPORTED: u16 = 1 << 0;
    /// Bit 1: IsPortInfoExtendedSupported.
    pub const IS_PORT_INFO_EXT_SUPPORTED: u16 = 1 << 1;
    /// Bit 2: IsVirtualizationSupported.
    pub const IS_VIRT_SUPPORTED: u16 = 1 << 2;
    /// Bit 3: IsSwitchPortStateTableSupported.
    pub const IS_SWITCH_PORT_STATE_TBL_SUPP: u16 = 1 << 3;
    /// Bit 4: IsLinkWidth2xSupported.
    pub const IS_LINK_WIDTH_2X_SUPPORTED: u16 = 1 << 4;
    /// Bit 5: IsLinkSpeedHDRSupported.
    pub const IS_LINK_SPEED_HDR_SUPPORTED: u16 = 1 << 5;
    /// Bit 6: IsMKeyProtectBitsExtSupported.
    pub const IS_MKEY_PROTECT_BITS_EXT_SUPPORTED: u16 = 1 << 6;
    /// Bit 7: IsEnhancedTrap128Supported.
    pub const IS_ENHANCED_TRAP128_SUPPORTED: u16 = 1 << 7;
    /// Bit 8: IsPartitionTopSupported.
    pub const IS_PARTITION_TOP_SUPPORTED: u16 = 1 << 8;
    /// Bit 9: IsEnhancedQoSArbiterSupported.
    pub const IS_ENHANCED_QOS_ARBITER_SUPPORTED: u16 = 1 << 9;
    /// Bit 10: IsLinkSpeedNDRSupported.
    pub const IS_LINK_SPEED_NDR_SUPPORTED: u16 = 1 << 10;

    /// `(bit number, text)` for every bit libibmad's
    /// `mad_dump_portcapmask2` names, in print order.
    pub const PRINT_TEXTS: &[(u32, &str)] = &[
        (0, "IsSetNodeDescriptionSupported"),
        (1, "IsPortInfoExtendedSupported"),
        (2, "IsVirtualizationSupported"),
        (3, "IsSwitchPortStateTableSupported"),
        (4, "IsLinkWidth2xSupported"),
        (5, "IsLinkSpeedHDRSupported"),
        (6, "IsMKeyProtectBitsExtSupported"),
        (7, "IsEnhancedTrap128Supported"),
        (8, "IsPartitionTopSupported"),
        (9, "IsEnhancedQoSArbiterSupported"),
        (10, "IsLinkSpeedNDRSupported"),
    ];

    /// The print texts of the bits set in `mask`, in libibmad's order.
    pub fn texts(mask: u16) -> impl Iterator<Item = &'static str> {
        PRINT_TEXTS
            .iter()
            .filter(move |(bit, _)| u32::from(mask) & (1u32 << bit) != 0)
            .map(|(_, t)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(PortInfo);

    #[test]
    fn byte_32_splits_into_link_speed_supported_and_port_state() {
        let mut b = [0u8; 64];
        b[32] = 0x24;
        let p = PortInfo::parse(&b).unwrap();
        assert_eq!(p.link_speed_supported, 2);
        assert_eq!(p.port_state, PortState::ACTIVE);
        assert_eq!(p.port_state.to_string(), "Active");
    }

    #[test]
    fn port_info_fields_land_at_the_documented_offsets() {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        b[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        b[16..18].copy_from_slice(&[0x00, 0x05]);
        b[18..20].copy_from_slice(&[0x00, 0x01]);
        b[20..24].copy_from_slice(&(port_cap::IS_SM | port_cap::HAS_CAP_MASK2).to_be_bytes());
        b[28] = 3;
        b[31] = 2; // 4X
        b[33] = 0x52; // LinkUp, Polling
        b[34] = 0x83; // ProtectBits 2, LMC 3
        b[35] = 0x4F; // active 10 Gbps, enabled 15
        b[36] = 0x5A; // NeighborMTU 4096, SMSL 10
        b[42] = 0x7F; // VLStallCount 3, HOQLife 31
        b[43] = 0x4A; // OperVLs 4, inbound enforcement, filter raw inbound
        b[51] = 0xB2; // ClientReregister, trap suppression 1, SubnetTimeout 18
        b[52] = 0xF1; // reserved bits set, RespTimeVal 17
        b[56] = 0x2D; // ExtActive2 1, ExtSupported2 1, ExtEnabled2 5
        b[57..60].copy_from_slice(&[0x01, 0x02, 0x03]);
        b[60..62].copy_from_slice(&[0x04, 0x01]);
        b[62] = 0x13;
        b[63] = 0xFE; // reserved 0b111, enabled 30
        let p = PortInfo::parse(&b).unwrap();
        assert_eq!(p.m_key, 0x0102_0304_0506_0708);
        assert_eq!(p.gid_prefix, 0xfe80_0000_0000_0000);
        assert_eq!(p.lid, 5);
        assert_eq!(p.master_sm_lid, 1);
        assert!(p.has_cap(port_cap::IS_SM) && p.has_cap(port_cap::HAS_CAP_MASK2));
        assert!(!p.has_cap(port_cap::HAS_TRAP));
        assert_eq!(p.local_port_num, 3);
        assert_eq!(p.link_width_active, 2);
        assert_eq!(p.port_phys_state, PhysPortState::LINK_UP);
        assert_eq!(p.link_down_default_state, 2);
        assert_eq!((p.m_key_protect_bits, p.reserved, p.lmc), (2, 0, 3));
        assert_eq!((p.link_speed_active, p.link_speed_enabled), (4, 15));
        assert_eq!((p.neighbor_mtu, p.master_sm_sl), (5, 10));
        assert_eq!((p.vl_stall_count, p.hoq_life), (3, 31));
        assert_eq!(p.operational_vls, 4);
        assert!(p.partition_enforcement_inbound && !p.partition_enforcement_outbound);
        assert!(p.filter_raw_inbound && !p.filter_raw_outbound);
        assert!(p.client_reregister);
        assert_eq!(p.mcast_pkey_trap_suppression_enabled, 1);
        assert_eq!(p.subnet_timeout, 18);
        assert_eq!((p.reserved1, p.resp_time_value), (7, 17));
        assert_eq!(p.reserved2, 0);
        assert_eq!(p.link_speed_ext_active2, 1);
        assert_eq!(p.link_speed_ext_supported2, 1);
        assert_eq!(p.link_speed_ext_enabled2, 5);
        assert_eq!(p.link_round_trip_latency, 0x010203);
        assert_eq!(p.capability_mask2, 0x0401);
        assert!(p.has_cap2(port_cap2::IS_LINK_SPEED_NDR_SUPPORTED));
        assert_eq!(
            (p.link_speed_ext_active, p.link_speed_ext_supported),
            (1, 3)
        );
        assert_eq!((p.reserved3, p.link_speed_ext_enabled), (7, 30));
        assert_eq!(p.to_vec().unwrap(), b.to_vec());
    }

    #[test]
    fn port_info_labels_are_libibmads() {
        let label = |name: &str| {
            PortInfo::FIELDS
                .iter()
                .find(|d| d.name == name)
                .and_then(|d| d.label)
        };
        assert_eq!(label("port_state"), Some("LinkState"));
        assert_eq!(label("port_phys_state"), Some("PhysLinkState"));
        assert_eq!(label("capability_mask"), Some("CapMask"));
        assert_eq!(label("link_round_trip_latency"), Some("RoundTrip"));
        assert_eq!(label("reserved2"), None);
    }

    #[test]
    fn port_state_wider_than_four_bits_is_refused_on_emit() {
        let p = PortInfo {
            port_state: PortState(0x10),
            ..PortInfo::default()
        };
        assert!(p.to_vec().is_err());
    }

    #[test]
    fn cap_mask_texts_follow_libibmad_order_and_skip_unprinted_bits() {
        let m = port_cap::RESV0
            | port_cap::IS_SM
            | port_cap::HAS_CABLE_INFO
            | port_cap::HAS_COM_MGT
            | port_cap::HAS_HIER_INFO;
        let t: Vec<_> = port_cap::texts(m).collect();
        assert_eq!(
            t,
            [
                "IsSM",
                "IsCommunicatonManagementSupported",
                "IsHierarchyInfoSupported"
            ]
        );
        let t2: Vec<_> = port_cap2::texts(0x0021).collect();
        assert_eq!(
            t2,
            ["IsSetNodeDescriptionSupported", "IsLinkSpeedHDRSupported"]
        );
    }

    #[test]
    fn cap_print_table_bits_match_the_constants() {
        let consts = [
            (1, port_cap::IS_SM),
            (12, port_cap::HAS_PKEY_SW_EXT_PORT_TRAP),
            (15, port_cap::HAS_CAP_MASK2),
            (25, port_cap::HAS_CLIENT_REREG),
            (31, port_cap::HAS_HIER_INFO),
        ];
        for (bit, c) in consts {
            assert_eq!(1u32 << bit, c);
            assert!(port_cap::PRINT_TEXTS.iter().any(|(b, _)| *b == bit));
        }
        assert_eq!(port_cap::PRINT_TEXTS.len(), 30);
        assert_eq!(port_cap2::PRINT_TEXTS.len(), 11);
        assert_eq!(1u16 << 10, port_cap2::IS_LINK_SPEED_NDR_SUPPORTED);
    }
}
