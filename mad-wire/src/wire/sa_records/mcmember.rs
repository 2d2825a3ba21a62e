//! MCMemberRecord (SA attribute 0x0038), 52 bytes, padded 56.

use super::Selector;
use crate::wire::AttributeId;

crate::wire_struct! {
    /// MCMemberRecord (ATTRIBUTES.md §11.6): join with SubnAdmSet, leave
    /// with SubnAdmDelete, list with SubnAdmGetTable. Layout from opensm
    /// `ib_member_rec_t` and python-rdma `SAMCMemberRecord`; labels are
    /// libibmad's `McastMem*` where it has the field.
    pub struct McMemberRecord ("MCMemberRecord", 52) {
        /// Multicast GID.
        mgid: bytes [u8; 16] [0] => "McastMemMGid",
        /// Member port GID.
        port_gid: bytes [u8; 16] [16] => "McastMemPortGid",
        /// Q_Key.
        qkey: uint u32 [256, 32] => "McastMemQkey",
        /// Multicast LID.
        mlid: uint u16 [288, 16] => "McastMemMLid",
        /// MTU selector (byte 38, mask 0xC0).
        mtu_selector: uint Selector [304, 2] => "MTUSelector",
        /// MTU code (byte 38, mask 0x3F).
        mtu: uint u8 [306, 6] => "McastMemMTU",
        /// Traffic class (byte 39).
        tclass: uint u8 [312, 8] => "McastMemTClass",
        /// Partition key.
        pkey: uint u16 [320, 16] => "McastMemPkey",
        /// Rate selector (byte 42, mask 0xC0).
        rate_selector: uint Selector [336, 2] => "RateSelector",
        /// Rate code (byte 42, mask 0x3F).
        rate: uint u8 [338, 6] => "McastMemRate",
        /// PacketLifeTime selector (byte 43, mask 0xC0).
        packet_life_time_selector: uint Selector [344, 2] => "PacketLifeTimeSelector",
        /// PacketLifeTime (byte 43, mask 0x3F).
        packet_life_time: uint u8 [346, 6] => "PacketLifeTime",
        /// Service level (byte 44, mask 0xF0).
        sl: uint u8 [352, 4] => "McastMemSL",
        /// FlowLabel, 20 bits (bytes 44–46 after the SL nibble).
        flow_label: uint u32 [356, 20] => "McastMemFlowLbl",
        /// HopLimit (byte 47).
        hop_limit: uint u8 [376, 8] => "HopLimit",
        /// Multicast address scope (byte 48, mask 0xF0).
        scope: uint u8 [384, 4] => "Scope",
        /// JoinState bits (byte 48, mask 0x0F); see the `JOIN_*` constants.
        join_state: uint u8 [388, 4] => "McastMemJoinState",
        /// ProxyJoin (byte 49, mask 0x80).
        proxy_join: uint bool [392, 1] => "McastMemProxyJoin",
        /// Reserved (byte 49 low 7 bits, bytes 50–51).
        reserved: uint u32 [393, 23] => _,
    }
}

sa_record! {
    McMemberRecord, AttributeId::SA_MCMEMBER_RECORD, padded 56;
    0 COMP_MGID => "MGID",
    1 COMP_PORT_GID => "PortGID",
    2 COMP_QKEY => "Q_Key",
    3 COMP_MLID => "MLID",
    4 COMP_MTU_SELECTOR => "MTUSelector",
    5 COMP_MTU => "MTU",
    6 COMP_TCLASS => "TClass",
    7 COMP_PKEY => "P_Key",
    8 COMP_RATE_SELECTOR => "RateSelector",
    9 COMP_RATE => "Rate",
    10 COMP_PACKET_LIFE_TIME_SELECTOR => "PacketLifeTimeSelector",
    11 COMP_PACKET_LIFE_TIME => "PacketLifeTime",
    12 COMP_SL => "SL",
    13 COMP_FLOW_LABEL => "FlowLabel",
    14 COMP_HOP_LIMIT => "HopLimit",
    15 COMP_SCOPE => "Scope",
    16 COMP_JOIN_STATE => "JoinState",
    17 COMP_PROXY_JOIN => "ProxyJoin",
    18 COMP_RESERVED => "reserved",
}

impl McMemberRecord {
    /// JoinState bit: full member (opensm `IB_MC_REC_STATE_FULL_MEMBER`).
    pub const JOIN_FULL_MEMBER: u8 = 0x1;
    /// JoinState bit: non-member.
    pub const JOIN_NON_MEMBER: u8 = 0x2;
    /// JoinState bit: send-only non-member.
    pub const JOIN_SEND_ONLY_NON_MEMBER: u8 = 0x4;
    /// JoinState bit: send-only full member.
    pub const JOIN_SEND_ONLY_FULL_MEMBER: u8 = 0x8;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(McMemberRecord);

    #[test]
    fn packed_fields_sit_at_their_documented_offsets() {
        let mut b = [0u8; 52];
        b[0] = 0xFF; // MGID starts with ff
        b[31] = 0x42; // PortGID last byte
        b[32..36].copy_from_slice(&0x8001_0203u32.to_be_bytes());
        b[36..38].copy_from_slice(&0xC001u16.to_be_bytes());
        b[38] = (2 << 6) | 4;
        b[39] = 0x33;
        b[40..42].copy_from_slice(&0xFFFFu16.to_be_bytes());
        b[42] = (1 << 6) | 3;
        b[43] = (3 << 6) | 0x11;
        // SL 0xA, FlowLabel 0x12345, HopLimit 0x7F
        b[44..48].copy_from_slice(&0xA123_457Fu32.to_be_bytes());
        b[48] = 0x2 << 4 | McMemberRecord::JOIN_SEND_ONLY_FULL_MEMBER; // scope 2
        b[49] = 0x80; // ProxyJoin
        let r = McMemberRecord::parse(&b).unwrap();
        assert_eq!((r.mgid[0], r.port_gid[15]), (0xFF, 0x42));
        assert_eq!((r.qkey, r.mlid), (0x8001_0203, 0xC001));
        assert_eq!(
            (r.mtu_selector, r.mtu, r.tclass),
            (Selector::EXACTLY, 4, 0x33)
        );
        assert_eq!(
            (r.pkey, r.rate_selector, r.rate),
            (0xFFFF, Selector::LESS_THAN, 3)
        );
        assert_eq!(
            (r.packet_life_time_selector, r.packet_life_time),
            (Selector::BEST, 0x11)
        );
        assert_eq!((r.sl, r.flow_label, r.hop_limit), (0xA, 0x12345, 0x7F));
        assert_eq!((r.scope, r.join_state), (2, 8));
        assert!(r.proxy_join);
        assert_eq!(r.reserved, 0);
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn join_state_is_the_low_nibble_of_byte_48_and_proxy_join_the_msb_of_49() {
        let r = McMemberRecord {
            join_state: McMemberRecord::JOIN_FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let b = r.to_vec().unwrap();
        assert_eq!((b[48], b[49]), (0x01, 0x00));
        let r = McMemberRecord {
            proxy_join: true,
            ..McMemberRecord::default()
        };
        let b = r.to_vec().unwrap();
        assert_eq!((b[48], b[49]), (0x00, 0x80));
        assert!(b.iter().enumerate().all(|(i, v)| i == 49 || *v == 0));
    }

    #[test]
    fn component_bits_match_opensm_ib_mcr_compmask() {
        // ib_types.h: IB_MCR_COMPMASK_MGID <<0, _MLID <<3, _JOIN_STATE <<16,
        // _PROXY <<17.
        assert_eq!(McMemberRecord::COMP_MGID, 1);
        assert_eq!(McMemberRecord::COMP_MLID, 1 << 3);
        assert_eq!(McMemberRecord::COMP_JOIN_STATE, 1 << 16);
        assert_eq!(McMemberRecord::COMP_PROXY_JOIN, 1 << 17);
        assert_eq!(McMemberRecord::ATTR_OFFSET, 7);
    }
}
