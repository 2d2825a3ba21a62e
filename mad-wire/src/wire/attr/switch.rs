//! SwitchInfo (SMP 0x0012) and the forwarding-table blocks
//! LinearForwardingTable (0x0019) and MulticastForwardingTable (0x001B).

crate::wire_struct! {
    /// SwitchInfo, 20 bytes (ATTRIBUTES.md §4; libibmad labels).
    pub struct SwitchInfo ("SwitchInfo", 20) {
        /// LinearFDBCap (bytes 0–1).
        linear_fdb_cap: uint u16 [0, 16] => "LinearFdbCap",
        /// RandomFDBCap (bytes 2–3).
        random_fdb_cap: uint u16 [16, 16] => "RandomFdbCap",
        /// MulticastFDBCap (bytes 4–5).
        multicast_fdb_cap: uint u16 [32, 16] => "McastFdbCap",
        /// LinearFDBTop (bytes 6–7).
        linear_fdb_top: uint u16 [48, 16] => "LinearFdbTop",
        /// DefaultPort (byte 8).
        default_port: uint u8 [64, 8] => "DefPort",
        /// DefaultMulticastPrimaryPort (byte 9).
        default_mcast_primary_port: uint u8 [72, 8] => "DefMcastPrimPort",
        /// DefaultMulticastNotPrimaryPort (byte 10).
        default_mcast_not_primary_port: uint u8 [80, 8] => "DefMcastNotPrimPort",
        /// LifeTimeValue (byte 11, 0xF8).
        life_time_value: uint u8 [88, 5] => "LifeTime",
        /// PortStateChange (byte 11, 0x04).
        port_state_change: uint bool [93, 1] => "StateChange",
        /// OptimizedSLtoVLMappingProgramming (byte 11, 0x03).
        opt_sl_to_vl_mapping: uint u8 [94, 2] => "OptSLtoVLMapping",
        /// LIDsPerPort (bytes 12–13).
        lids_per_port: uint u16 [96, 16] => "LidsPerPort",
        /// PartitionEnforcementCap (bytes 14–15).
        partition_enforcement_cap: uint u16 [112, 16] => "PartEnforceCap",
        /// InboundEnforcementCap (byte 16, 0x80).
        inbound_enforcement_cap: uint bool [128, 1] => "InboundPartEnf",
        /// OutboundEnforcementCap (byte 16, 0x40).
        outbound_enforcement_cap: uint bool [129, 1] => "OutboundPartEnf",
        /// FilterRawInboundCap (byte 16, 0x20).
        filter_raw_inbound_cap: uint bool [130, 1] => "FilterRawInbound",
        /// FilterRawOutboundCap (byte 16, 0x10).
        filter_raw_outbound_cap: uint bool [131, 1] => "FilterRawOutbound",
        /// EnhancedPort0 (byte 16, 0x08).
        enhanced_port0: uint bool [132, 1] => "EnhancedPort0",
        /// Reserved (byte 16, 0x07, and byte 17).
        reserved: uint u16 [133, 11] => _,
        /// MulticastFDBTop (bytes 18–19).
        multicast_fdb_top: uint u16 [144, 16] => "MulticastFDBTop",
    }
}

crate::wire_struct! {
    /// One LinearForwardingTable block: 64 egress ports, entry `i` for
    /// LID `block * 64 + i`; the AttributeModifier is the block number
    /// (ATTRIBUTES.md §5). Port 255 (0xFF) means "no route".
    pub struct LinearFwdTable ("LinearForwardingTable", 64) {
        /// Egress port per LID.
        ports: array [u8; 64] [0, 8] => "LinearForwTbl",
    }
}

impl LinearFwdTable {
    /// LIDs per block.
    pub const ENTRIES: usize = 64;
}

crate::wire_struct! {
    /// One MulticastForwardingTable block: 32 port masks, entry `i` for
    /// MLID `0xC000 + block * 32 + i`; bit `p` of a mask is port
    /// `position * 16 + p`. AttributeModifier: bits 31..28 position, bits
    /// 8..0 block (ATTRIBUTES.md §5).
    pub struct MulticastFwdTable ("MulticastForwardingTable", 64) {
        /// Port mask per MLID.
        masks: array [u16; 32] [0, 16] => "MulticastForwTbl",
    }
}

impl MulticastFwdTable {
    /// MLIDs per block.
    pub const ENTRIES: usize = 32;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(SwitchInfo, LinearFwdTable, MulticastFwdTable);

    #[test]
    fn switch_info_fields_land_at_the_documented_offsets() {
        let mut b = [0u8; 20];
        b[0..2].copy_from_slice(&[0xC0, 0x00]);
        b[2..4].copy_from_slice(&[0x00, 0x00]);
        b[4..6].copy_from_slice(&[0x10, 0x00]);
        b[6..8].copy_from_slice(&[0x00, 0x2A]);
        b[8] = 0xFF;
        b[9] = 1;
        b[10] = 2;
        b[11] = 0x9D; // LifeTime 19, StateChange, OptSL2VL 1
        b[12..14].copy_from_slice(&[0, 1]);
        b[14..16].copy_from_slice(&[0, 8]);
        b[16] = 0xA8; // inbound, filter raw inbound, enhanced port 0
        b[17] = 0;
        b[18..20].copy_from_slice(&[0xC0, 0x1F]);
        let s = SwitchInfo::parse(&b).unwrap();
        assert_eq!(s.linear_fdb_cap, 0xC000);
        assert_eq!(s.multicast_fdb_cap, 0x1000);
        assert_eq!(s.linear_fdb_top, 42);
        assert_eq!(s.default_port, 0xFF);
        assert_eq!(s.default_mcast_primary_port, 1);
        assert_eq!(s.default_mcast_not_primary_port, 2);
        assert_eq!(s.life_time_value, 19);
        assert!(s.port_state_change);
        assert_eq!(s.opt_sl_to_vl_mapping, 1);
        assert_eq!(s.lids_per_port, 1);
        assert_eq!(s.partition_enforcement_cap, 8);
        assert!(s.inbound_enforcement_cap && !s.outbound_enforcement_cap);
        assert!(s.filter_raw_inbound_cap && !s.filter_raw_outbound_cap);
        assert!(s.enhanced_port0);
        assert_eq!(s.reserved, 0);
        assert_eq!(s.multicast_fdb_top, 0xC01F);
        assert_eq!(s.to_vec().unwrap(), b.to_vec());
    }

    #[test]
    fn forwarding_table_entries_are_in_wire_order() {
        let b: Vec<u8> = (0..64).collect();
        let l = LinearFwdTable::parse(&b).unwrap();
        assert_eq!(l.ports[0], 0);
        assert_eq!(l.ports[63], 63);
        let m = MulticastFwdTable::parse(&b).unwrap();
        assert_eq!(m.masks[0], 0x0001);
        assert_eq!(m.masks[31], 0x3E3F);
    }
}
