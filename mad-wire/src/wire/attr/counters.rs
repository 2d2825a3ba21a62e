//! PerfMgt PortCounters (0x0012) and PortCountersExtended (0x001D)
//! (ATTRIBUTES.md §9–§10), plus the PerfMgt ClassPortInfo capability bits.

perf_attr! {
    /// PortCounters: the 44 used bytes of the 192-byte PerfMgt data area
    /// (the rest is reserved; emit into a zeroed 192-byte area).
    ///
    /// **libibmad quirk:** libibmad declares its `QP1Dropped` field
    /// (`IB_PC_QP1_DROP_F`, `{160, 16}` in `fields.c`) without the
    /// `BITSOFFS` conversion, so its decoder reads bytes 22–23 and
    /// perfquery prints the VL15Dropped value as `QP1Dropped`. This struct
    /// uses the real bytes 20–21 (opensm `ib_port_counters_t` has
    /// `qp1_dropped` at 20). A tool that wants byte-identical perfquery
    /// output must print `vl15_dropped` on the `QP1Dropped` line.
    pub struct PortCounters ("PortCounters", 44) {
        /// SymbolErrorCounter (bytes 4–5).
        symbol_error_counter: uint u16 [32, 16] => "SymbolErrorCounter",
        /// LinkErrorRecoveryCounter (byte 6).
        link_error_recovery_counter: uint u8 [48, 8] => "LinkErrorRecoveryCounter",
        /// LinkDownedCounter (byte 7).
        link_downed_counter: uint u8 [56, 8] => "LinkDownedCounter",
        /// PortRcvErrors (bytes 8–9).
        port_rcv_errors: uint u16 [64, 16] => "PortRcvErrors",
        /// PortRcvRemotePhysicalErrors (bytes 10–11).
        port_rcv_remote_physical_errors: uint u16 [80, 16] => "PortRcvRemotePhysicalErrors",
        /// PortRcvSwitchRelayErrors (bytes 12–13).
        port_rcv_switch_relay_errors: uint u16 [96, 16] => "PortRcvSwitchRelayErrors",
        /// PortXmitDiscards (bytes 14–15).
        port_xmit_discards: uint u16 [112, 16] => "PortXmitDiscards",
        /// PortXmitConstraintErrors (byte 16).
        port_xmit_constraint_errors: uint u8 [128, 8] => "PortXmitConstraintErrors",
        /// PortRcvConstraintErrors (byte 17).
        port_rcv_constraint_errors: uint u8 [136, 8] => "PortRcvConstraintErrors",
        /// CounterSelect2 (byte 18).
        counter_select2: uint u8 [144, 8] => "CounterSelect2",
        /// LocalLinkIntegrityErrors (byte 19, high nibble).
        local_link_integrity_errors: uint u8 [152, 4] => "LocalLinkIntegrityErrors",
        /// ExcessiveBufferOverrunErrors (byte 19, low nibble).
        excessive_buffer_overrun_errors: uint u8 [156, 4] => "ExcessiveBufferOverrunErrors",
        /// QP1Dropped (bytes 20–21; see the libibmad quirk above).
        qp1_dropped: uint u16 [160, 16] => "QP1Dropped",
        /// VL15Dropped (bytes 22–23).
        vl15_dropped: uint u16 [176, 16] => "VL15Dropped",
        /// PortXmitData in units of 4 octets (bytes 24–27).
        port_xmit_data: uint u32 [192, 32] => "PortXmitData",
        /// PortRcvData in units of 4 octets (bytes 28–31).
        port_rcv_data: uint u32 [224, 32] => "PortRcvData",
        /// PortXmitPkts (bytes 32–35).
        port_xmit_pkts: uint u32 [256, 32] => "PortXmitPkts",
        /// PortRcvPkts (bytes 36–39).
        port_rcv_pkts: uint u32 [288, 32] => "PortRcvPkts",
        /// PortXmitWait (bytes 40–43).
        port_xmit_wait: uint u32 [320, 32] => "PortXmitWait",
    }
}

perf_attr! {
    /// PortCountersExtended, 184 bytes (of the 192-byte PerfMgt data area).
    /// Which counters are valid depends on the PerfMgt ClassPortInfo
    /// capability bits ([`pm_cap::EXT_WIDTH_SUPPORTED`],
    /// [`pm_cap2::ADDL_PORT_CTRS_EXT_SUP`]).
    pub struct PortCountersExt ("PortCountersExtended", 184) {
        /// CounterSelect2 (bytes 4–7).
        counter_select2: uint u32 [32, 32] => "CounterSelect2",
        /// PortXmitData (bytes 8–15).
        port_xmit_data: uint u64 [64, 64] => "PortXmitData",
        /// PortRcvData (bytes 16–23).
        port_rcv_data: uint u64 [128, 64] => "PortRcvData",
        /// PortXmitPkts (bytes 24–31).
        port_xmit_pkts: uint u64 [192, 64] => "PortXmitPkts",
        /// PortRcvPkts (bytes 32–39).
        port_rcv_pkts: uint u64 [256, 64] => "PortRcvPkts",
        /// PortUnicastXmitPkts (bytes 40–47).
        port_unicast_xmit_pkts: uint u64 [320, 64] => "PortUnicastXmitPkts",
        /// PortUnicastRcvPkts (bytes 48–55).
        port_unicast_rcv_pkts: uint u64 [384, 64] => "PortUnicastRcvPkts",
        /// PortMulticastXmitPkts (bytes 56–63).
        port_multicast_xmit_pkts: uint u64 [448, 64] => "PortMulticastXmitPkts",
        /// PortMulticastRcvPkts (bytes 64–71).
        port_multicast_rcv_pkts: uint u64 [512, 64] => "PortMulticastRcvPkts",
        /// SymbolErrorCounter (bytes 72–79).
        symbol_error_counter: uint u64 [576, 64] => "SymbolErrorCounter",
        /// LinkErrorRecoveryCounter (bytes 80–87).
        link_error_recovery_counter: uint u64 [640, 64] => "LinkErrorRecoveryCounter",
        /// LinkDownedCounter (bytes 88–95).
        link_downed_counter: uint u64 [704, 64] => "LinkDownedCounter",
        /// PortRcvErrors (bytes 96–103).
        port_rcv_errors: uint u64 [768, 64] => "PortRcvErrors",
        /// PortRcvRemotePhysicalErrors (bytes 104–111).
        port_rcv_remote_physical_errors: uint u64 [832, 64] => "PortRcvRemotePhysicalErrors",
        /// PortRcvSwitchRelayErrors (bytes 112–119).
        port_rcv_switch_relay_errors: uint u64 [896, 64] => "PortRcvSwitchRelayErrors",
        /// PortXmitDiscards (bytes 120–127).
        port_xmit_discards: uint u64 [960, 64] => "PortXmitDiscards",
        /// PortXmitConstraintErrors (bytes 128–135).
        port_xmit_constraint_errors: uint u64 [1024, 64] => "PortXmitConstraintErrors",
        /// PortRcvConstraintErrors (bytes 136–143).
        port_rcv_constraint_errors: uint u64 [1088, 64] => "PortRcvConstraintErrors",
        /// LocalLinkIntegrityErrors (bytes 144–151).
        local_link_integrity_errors: uint u64 [1152, 64] => "LocalLinkIntegrityErrors",
        /// ExcessiveBufferOverrunErrors (bytes 152–159).
        excessive_buffer_overrun_errors: uint u64 [1216, 64] => "ExcessiveBufferOverrunErrors",
        /// VL15Dropped (bytes 160–167).
        vl15_dropped: uint u64 [1280, 64] => "VL15Dropped",
        /// PortXmitWait (bytes 168–175).
        port_xmit_wait: uint u64 [1344, 64] => "PortXmitWait",
        /// QP1Dropped (bytes 176–183).
        qp1_dropped: uint u64 [1408, 64] => "QP1Dropped",
    }
}

/// PerfMgt ClassPortInfo CapabilityMask bits (libibmad `iba_types.h`
/// `IB_PM_*`, host order).
pub mod pm_cap {
    /// Bit 8: PortSelect 0xFF (all ports) supported.
    pub const ALL_PORT_SELECT: u16 = 1 << 8;
    /// Bit 9: full PortCountersExtended supported.
    pub const EXT_WIDTH_SUPPORTED: u16 = 1 << 9;
    /// Bit 10: only the 64-bit data/packet counters of
    /// PortCountersExtended supported.
    pub const EXT_WIDTH_NOIETF_SUP: u16 = 1 << 10;
    /// Bit 11: samples only.
    pub const SAMPLES_ONLY_SUP: u16 = 1 << 11;
    /// Bit 12: PortCounters.PortXmitWait supported.
    pub const PC_XMIT_WAIT_SUP: u16 = 1 << 12;
    /// Bit 13: inhibit limited-P_Key multicast constraint errors.
    pub const INH_LMTD_PKEY_MC_CONSTR_ERR: u16 = 1 << 13;
    /// Bit 14: RS-FEC counters supported.
    pub const RSFEC_COUNTERS_SUP: u16 = 1 << 14;
    /// Bit 15: QP1Dropped supported.
    pub const IS_QP1_DROP_SUP: u16 = 1 << 15;
}

/// PerfMgt ClassPortInfo CapabilityMask2 bits (the 27-bit field, host
/// order; libibmad `IB_PM_IS_*`).
pub mod pm_cap2 {
    /// Bit 0: PM_Key supported.
    pub const IS_PM_KEY_SUPPORTED: u32 = 1 << 0;
    /// Bit 1: the error counters of PortCountersExtended (bytes 72–183)
    /// are supported.
    pub const ADDL_PORT_CTRS_EXT_SUP: u32 = 1 << 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(PortCounters, PortCountersExt);

    #[test]
    fn port_counters_fields_land_at_the_documented_offsets() {
        let b: Vec<u8> = (0..44).collect();
        let c = PortCounters::parse(&b).unwrap();
        assert_eq!(c.reserved, 0);
        assert_eq!(c.port_select, 1);
        assert_eq!(c.counter_select, 0x0203);
        assert_eq!(c.symbol_error_counter, 0x0405);
        assert_eq!(c.link_error_recovery_counter, 6);
        assert_eq!(c.link_downed_counter, 7);
        assert_eq!(c.port_rcv_errors, 0x0809);
        assert_eq!(c.port_rcv_remote_physical_errors, 0x0A0B);
        assert_eq!(c.port_rcv_switch_relay_errors, 0x0C0D);
        assert_eq!(c.port_xmit_discards, 0x0E0F);
        assert_eq!(c.port_xmit_constraint_errors, 0x10);
        assert_eq!(c.port_rcv_constraint_errors, 0x11);
        assert_eq!(c.counter_select2, 0x12);
        assert_eq!(c.local_link_integrity_errors, 1); // byte 19 = 0x13
        assert_eq!(c.excessive_buffer_overrun_errors, 3);
        assert_eq!(c.port_xmit_data, 0x1819_1A1B);
        assert_eq!(c.port_rcv_data, 0x1C1D_1E1F);
        assert_eq!(c.port_xmit_pkts, 0x2021_2223);
        assert_eq!(c.port_rcv_pkts, 0x2425_2627);
        assert_eq!(c.port_xmit_wait, 0x2829_2A2B);
        assert_eq!(c.to_vec().unwrap(), b);
    }

    #[test]
    fn qp1_dropped_is_bytes_20_21_not_libibmads_22_23() {
        let mut b = [0u8; 44];
        b[20..22].copy_from_slice(&[0x00, 0x05]);
        b[22..24].copy_from_slice(&[0x00, 0x09]);
        let c = PortCounters::parse(&b).unwrap();
        assert_eq!(c.qp1_dropped, 5);
        assert_eq!(c.vl15_dropped, 9);
    }

    #[test]
    fn port_counters_ext_fields_land_at_the_documented_offsets() {
        let mut b = [0u8; 184];
        b[1] = 3;
        b[2..4].copy_from_slice(&[0xFF, 0x00]);
        b[4..8].copy_from_slice(&[0, 0, 0x10, 0]);
        for i in 0..22u64 {
            let off = 8 + 8 * i as usize;
            b[off..off + 8].copy_from_slice(&(0x0100_0000_0000_0000 | i).to_be_bytes());
        }
        let c = PortCountersExt::parse(&b).unwrap();
        assert_eq!(c.port_select, 3);
        assert_eq!(c.counter_select, 0xFF00);
        assert_eq!(c.counter_select2, 0x1000);
        let tag = |v: u64| v & 0xFF;
        assert_eq!(tag(c.port_xmit_data), 0);
        assert_eq!(tag(c.port_multicast_rcv_pkts), 7);
        assert_eq!(tag(c.symbol_error_counter), 8); // byte 72
        assert_eq!(tag(c.excessive_buffer_overrun_errors), 18); // byte 152
        assert_eq!(tag(c.vl15_dropped), 19); // byte 160
        assert_eq!(tag(c.port_xmit_wait), 20); // byte 168
        assert_eq!(tag(c.qp1_dropped), 21); // byte 176
        assert_eq!(c.qp1_dropped >> 56, 1);
        assert_eq!(c.to_vec().unwrap(), b.to_vec());
    }
}
