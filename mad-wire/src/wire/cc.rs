//! Congestion Control MADs (class 0x21, IBTA vol. 1 annex A10, libibmad
//! `fields.c` labels): the CC_Key at bytes 24–31, CongestionLog's 224
//! bytes from byte 32, every other attribute's 192 bytes from byte 64.
//!
//! The attributes with repeated entries are declared as a header and an
//! entry, as libibmad dumps them: CongestionLog (switch: 40-byte header,
//! 15 events of 12 bytes at 40; CA: 12-byte header, 13 events of 16 bytes
//! at 12), SwitchPortCongestionSetting (48 elements of 4 bytes per block
//! of ports), CACongestionSetting (4-byte header, 16 entries of 8 bytes
//! at 4, one per SL), CongestionControlTable (4-byte header, 64 entries
//! of 2 bytes at 4 per block).

/// The Congestion Control management class.
pub const CC_CLASS: u8 = 0x21;
/// Its class version.
pub const CC_CLASS_VERSION: u8 = 2;
/// Where the CC_Key sits in the MAD (8 bytes).
pub const CC_KEY_OFFSET: usize = 24;
/// Where CongestionLog's data starts.
pub const CC_LOG_DATA_OFFSET: usize = 32;
/// Where every other attribute's data starts.
pub const CC_DATA_OFFSET: usize = 64;
/// Bytes of attribute data from [`CC_DATA_OFFSET`].
pub const CC_DATA_LEN: usize = 192;
/// Bytes of CongestionLog data from [`CC_LOG_DATA_OFFSET`].
pub const CC_LOG_DATA_LEN: usize = 224;

/// Congestion Control attribute IDs.
pub mod cc_attr {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// CongestionInfo.
    pub const CONGESTION_INFO: u16 = 0x0011;
    /// CongestionKeyInfo.
    pub const CONGESTION_KEY_INFO: u16 = 0x0012;
    /// CongestionLog.
    pub const CONGESTION_LOG: u16 = 0x0013;
    /// SwitchCongestionSetting.
    pub const SWITCH_CONGESTION_SETTING: u16 = 0x0014;
    /// SwitchPortCongestionSetting (modifier: block of 48 ports).
    pub const SWITCH_PORT_CONGESTION_SETTING: u16 = 0x0015;
    /// CACongestionSetting.
    pub const CA_CONGESTION_SETTING: u16 = 0x0016;
    /// CongestionControlTable (modifier: block of 64 entries).
    pub const CONGESTION_CONTROL_TABLE: u16 = 0x0017;
    /// Timestamp.
    pub const TIMESTAMP: u16 = 0x0018;
}

/// CongestionLog LogType of a switch.
pub const LOG_TYPE_SWITCH: u8 = 1;
/// CongestionLog LogType of a CA.
pub const LOG_TYPE_CA: u8 = 2;
/// Events in a switch's CongestionLog.
pub const SWITCH_LOG_EVENTS: usize = 15;
/// Events in a CA's CongestionLog (libibmad's reading of the errata).
pub const CA_LOG_EVENTS: usize = 13;
/// SwitchPortCongestionSetting elements per block.
pub const PORTS_PER_BLOCK: usize = 48;
/// CongestionControlTable entries per block.
pub const CCT_ENTRIES_PER_BLOCK: usize = 64;

crate::wire_struct! {
    /// CongestionInfo (0x11).
    pub struct CongestionInfo ("CongestionInfo", 4) {
        /// CongestionInfo flags (bit 0: credit starvation supported).
        congestion_info: uint u16 [0, 16] => "CongestionInfo",
        /// ControlTableCap: 64-entry CCT blocks the CA supports.
        control_table_cap: uint u8 [16, 8] => "ControlTableCap",
        /// Reserved.
        reserved: uint u8 [24, 8] => _,
    }
}

crate::wire_struct! {
    /// CongestionKeyInfo (0x12).
    pub struct CongestionKeyInfo ("CongestionKeyInfo", 16) {
        /// CC_Key.
        cc_key: uint u64 [0, 64] => "CC_Key",
        /// CC_KeyProtectBit.
        cc_key_protect_bit: uint u8 [64, 1] => "CC_KeyProtectBit",
        /// Reserved.
        reserved: uint u16 [65, 15] => _,
        /// CC_KeyLeasePeriod (seconds).
        cc_key_lease_period: uint u16 [80, 16] => "CC_KeyLeasePeriod",
        /// CC_KeyViolations.
        cc_key_violations: uint u16 [96, 16] => "CC_KeyViolations",
        /// Reserved.
        reserved2: uint u16 [112, 16] => _,
    }
}

crate::wire_struct! {
    /// The Congestion Control class header: the CC_Key, bytes 24–31.
    pub struct CcKey ("CC", 8) {
        /// CC_Key.
        cc_key: uint u64 [0, 64] => "CC_Key",
    }
}

crate::wire_struct! {
    /// CongestionLog's first two bytes (both kinds).
    pub struct CongestionLogCommon ("CongestionLog", 2) {
        /// LogType: [`LOG_TYPE_SWITCH`] or [`LOG_TYPE_CA`].
        log_type: uint u8 [0, 8] => "LogType",
        /// CongestionFlags.
        congestion_flags: uint u8 [8, 8] => "CongestionFlags",
    }
}

crate::wire_struct! {
    /// A switch's CongestionLog header (its events follow at byte 40).
    pub struct CongestionLogSwitch ("CongestionLogSwitch", 40) {
        /// LogType and CongestionFlags.
        common: uint u16 [0, 16] => _,
        /// LogEventsCounter.
        log_events_counter: uint u16 [16, 16] => "LogEventsCounter",
        /// CurrentTimeStamp (1.024 µs units).
        current_time_stamp: uint u32 [32, 32] => "CurrentTimeStamp",
        /// PortMap: ports that marked a packet, one bit each.
        port_map: bytes [u8; 32] [8] => "PortMap",
    }
}

crate::wire_struct! {
    /// One event of a switch's CongestionLog.
    pub struct CongestionLogEventSwitch ("CongestionLogEventSwitch", 12) {
        /// SLID.
        slid: uint u16 [0, 16] => "SLID",
        /// DLID.
        dlid: uint u16 [16, 16] => "DLID",
        /// SL.
        sl: uint u8 [32, 4] => "SL",
        /// Reserved.
        reserved: uint u32 [36, 28] => _,
        /// Timestamp.
        timestamp: uint u32 [64, 32] => "Timestamp",
    }
}

crate::wire_struct! {
    /// A CA's CongestionLog header (its events follow at byte 12).
    pub struct CongestionLogCa ("CongestionLogCA", 12) {
        /// LogType and CongestionFlags.
        common: uint u16 [0, 16] => _,
        /// ThresholdEventCounter.
        threshold_event_counter: uint u16 [16, 16] => "ThresholdEventCounter",
        /// ThresholdCongestionEventMap.
        threshold_congestion_event_map: uint u16 [32, 16] => "ThresholdCongestionEventMap",
        /// Reserved.
        reserved: uint u16 [48, 16] => _,
        /// CurrentTimeStamp.
        current_time_stamp: uint u32 [64, 32] => "CurrentTimeStamp",
    }
}

crate::wire_struct! {
    /// One event of a CA's CongestionLog.
    pub struct CongestionLogEventCa ("CongestionLogEventCA", 16) {
        /// Local_QP_CN_Entry.
        local_qp: uint u32 [0, 24] => "Local_QP_CN_Entry",
        /// SL_CN_Entry.
        sl: uint u8 [24, 4] => "SL_CN_Entry",
        /// Service_Type_CN_Entry.
        service_type: uint u8 [28, 4] => "Service_Type_CN_Entry",
        /// Remote_QP_Number_CN_Entry.
        remote_qp: uint u32 [32, 24] => "Remote_QP_Number_CN_Entry",
        /// Reserved.
        reserved: uint u8 [56, 8] => _,
        /// Local_LID_CN.
        local_lid: uint u16 [64, 16] => "Local_LID_CN",
        /// Remote_LID_CN_Entry.
        remote_lid: uint u16 [80, 16] => "Remote_LID_CN_Entry",
        /// Timestamp_CN_Entry.
        timestamp: uint u32 [96, 32] => "Timestamp_CN_Entry",
    }
}

crate::wire_struct! {
    /// SwitchCongestionSetting (0x14).
    pub struct SwitchCongestionSetting ("SwitchCongestionSetting", 76) {
        /// Control_Map: which of the settings below a Set applies.
        control_map: uint u32 [0, 32] => "Control_Map",
        /// Victim_Mask: one bit per port.
        victim_mask: bytes [u8; 32] [4] => "Victim_Mask",
        /// Credit_Mask: one bit per port.
        credit_mask: bytes [u8; 32] [36] => "Credit_Mask",
        /// Threshold.
        threshold: uint u8 [544, 4] => "Threshold",
        /// Reserved.
        reserved: uint u8 [548, 4] => _,
        /// Packet_Size.
        packet_size: uint u8 [552, 8] => "Packet_Size",
        /// CS_Threshold.
        cs_threshold: uint u8 [560, 4] => "CS_Threshold",
        /// Reserved.
        reserved2: uint u16 [564, 12] => _,
        /// CS_ReturnDelay.
        cs_return_delay: uint u16 [576, 16] => "CS_ReturnDelay",
        /// Marking_Rate.
        marking_rate: uint u16 [592, 16] => "Marking_Rate",
    }
}

crate::wire_struct! {
    /// One port's element of SwitchPortCongestionSetting (0x15).
    pub struct SwitchPortCongestionElement ("SwitchPortCongestionSettingElement", 4) {
        /// Valid.
        valid: uint u8 [0, 1] => "Valid",
        /// Control_Type (0: congestion, 1: credit starvation).
        control_type: uint u8 [1, 1] => "Control_Type",
        /// Reserved.
        reserved: uint u8 [2, 2] => _,
        /// Threshold.
        threshold: uint u8 [4, 4] => "Threshold",
        /// Packet_Size.
        packet_size: uint u8 [8, 8] => "Packet_Size",
        /// Cong_Parm_Marking_Rate.
        marking_rate: uint u16 [16, 16] => "Cong_Parm_Marking_Rate",
    }
}

crate::wire_struct! {
    /// CACongestionSetting's header (0x16); its 16 per-SL entries follow
    /// at byte 4.
    pub struct CaCongestionSetting ("CACongestionSetting", 4) {
        /// Port_Control.
        port_control: uint u16 [0, 16] => "Port_Control",
        /// Control_Map: which SLs' entries a Set applies.
        control_map: uint u16 [16, 16] => "Control_Map",
    }
}

crate::wire_struct! {
    /// One SL's entry of CACongestionSetting.
    pub struct CaCongestionEntry ("CACongestionEntry", 8) {
        /// CCTI_Timer.
        ccti_timer: uint u16 [0, 16] => "CCTI_Timer",
        /// CCTI_Increase.
        ccti_increase: uint u8 [16, 8] => "CCTI_Increase",
        /// Trigger_Threshold.
        trigger_threshold: uint u8 [24, 8] => "Trigger_Threshold",
        /// CCTI_Min.
        ccti_min: uint u8 [32, 8] => "CCTI_Min",
        /// Reserved.
        reserved: uint u32 [40, 24] => _,
    }
}

crate::wire_struct! {
    /// CongestionControlTable's header (0x17); its 64 entries follow at
    /// byte 4.
    pub struct CongestionControlTable ("CongestionControlTable", 4) {
        /// CCTI_Limit: the highest valid index of the whole table.
        ccti_limit: uint u16 [0, 16] => "CCTI_Limit",
        /// Reserved.
        reserved: uint u16 [16, 16] => _,
    }
}

crate::wire_struct! {
    /// One entry of CongestionControlTable.
    pub struct CctEntry ("CongestionControlTableEntry", 2) {
        /// CCT_Shift.
        shift: uint u8 [0, 2] => "CCT_Shift",
        /// CCT_Multiplier.
        multiplier: uint u16 [2, 14] => "CCT_Multiplier",
    }
}

crate::wire_struct! {
    /// Timestamp (0x18).
    pub struct CcTimestamp ("Timestamp", 4) {
        /// Timestamp (1.024 µs units, free running).
        timestamp: uint u32 [0, 32] => "Timestamp",
    }
}

// The entries fit the data areas as libibmad walks them.
const _: () = {
    use crate::wire::Repr;
    assert!(
        CongestionLogSwitch::LEN + SWITCH_LOG_EVENTS * CongestionLogEventSwitch::LEN
            <= CC_LOG_DATA_LEN
    );
    assert!(CongestionLogCa::LEN + CA_LOG_EVENTS * CongestionLogEventCa::LEN <= CC_LOG_DATA_LEN);
    assert!(PORTS_PER_BLOCK * SwitchPortCongestionElement::LEN <= CC_DATA_LEN);
    assert!(CaCongestionSetting::LEN + 16 * CaCongestionEntry::LEN <= CC_DATA_LEN);
    assert!(CongestionControlTable::LEN + CCT_ENTRIES_PER_BLOCK * CctEntry::LEN <= CC_DATA_LEN);
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(
        CcKey,
        CongestionInfo,
        CongestionKeyInfo,
        CongestionLogCommon,
        CongestionLogSwitch,
        CongestionLogEventSwitch,
        CongestionLogCa,
        CongestionLogEventCa,
        SwitchCongestionSetting,
        SwitchPortCongestionElement,
        CaCongestionSetting,
        CaCongestionEntry,
        CongestionControlTable,
        CctEntry,
        CcTimestamp,
    );

    #[test]
    fn cct_entry_packs_shift_over_multiplier() {
        let e = CctEntry::parse(&[0b1100_0000 | 0x01, 0x02]).unwrap();
        assert_eq!((e.shift, e.multiplier), (3, 0x0102));
        let k =
            CongestionKeyInfo::parse(&[0, 0, 0, 0, 0, 0, 0, 7, 0x80, 0, 0, 9, 0, 2, 0, 0]).unwrap();
        assert_eq!(
            (
                k.cc_key,
                k.cc_key_protect_bit,
                k.cc_key_lease_period,
                k.cc_key_violations
            ),
            (7, 1, 9, 2)
        );
    }
}
