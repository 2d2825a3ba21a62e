//! PathRecord (SA attribute 0x0035), 64 bytes.

use super::Selector;
use crate::wire::AttributeId;

crate::wire_struct! {
    /// PathRecord (ATTRIBUTES.md §11.5): the properties of a path between
    /// two ports. Packed fields follow opensm `ib_path_rec_t` and
    /// python-rdma `SAPathRecord`; labels are libibmad's where it has the
    /// field (`PathRecDGid`, `PathRecSL`, ...).
    pub struct PathRecord ("PathRecord", 64) {
        /// ServiceID (reserved in IBA 1.1).
        service_id: uint u64 [0, 64] => "ServiceID",
        /// Destination GID.
        dgid: bytes [u8; 16] [8] => "PathRecDGid",
        /// Source GID.
        sgid: bytes [u8; 16] [24] => "PathRecSGid",
        /// Destination LID.
        dlid: uint u16 [320, 16] => "PathRecDLid",
        /// Source LID.
        slid: uint u16 [336, 16] => "PathRecSLid",
        /// RawTraffic (byte 44, mask 0x80).
        raw_traffic: uint bool [352, 1] => "RawTraffic",
        /// Reserved (byte 44, mask 0x70).
        reserved: uint u8 [353, 3] => _,
        /// FlowLabel, 20 bits (bytes 44–46 after the top nibble).
        flow_label: uint u32 [356, 20] => "FlowLabel",
        /// HopLimit (byte 47).
        hop_limit: uint u8 [376, 8] => "HopLimit",
        /// Traffic class (byte 48).
        tclass: uint u8 [384, 8] => "TClass",
        /// Reversible (byte 49, mask 0x80).
        reversible: uint bool [392, 1] => "Reversible",
        /// NumbPath: in a request, the maximum number of paths to return
        /// (byte 49, mask 0x7F).
        numb_path: uint u8 [393, 7] => "PathRecNumPath",
        /// Partition key.
        pkey: uint u16 [400, 16] => "P_Key",
        /// QoSClass, 12 bits (bytes 52–53, upper 12 bits).
        qos_class: uint u16 [416, 12] => "QoSClass",
        /// Service level (byte 53, mask 0x0F).
        sl: uint u8 [428, 4] => "PathRecSL",
        /// MTU selector (byte 54, mask 0xC0).
        mtu_selector: uint Selector [432, 2] => "MTUSelector",
        /// MTU code, 1 = 256 … 5 = 4096 (byte 54, mask 0x3F).
        mtu: uint u8 [434, 6] => "MTU",
        /// Rate selector (byte 55, mask 0xC0).
        rate_selector: uint Selector [440, 2] => "RateSelector",
        /// Rate code (byte 55, mask 0x3F).
        rate: uint u8 [442, 6] => "Rate",
        /// PacketLifeTime selector (byte 56, mask 0xC0).
        packet_life_time_selector: uint Selector [448, 2] => "PacketLifeTimeSelector",
        /// PacketLifeTime, 4.096 µs × 2^value (byte 56, mask 0x3F).
        packet_life_time: uint u8 [450, 6] => "PacketLifeTime",
        /// Preference (byte 57).
        preference: uint u8 [456, 8] => "Preference",
        /// ReversePathPKeyMemberBit (byte 58, mask 0xC0; newer IBA).
        reverse_path_pkey_member_bit: uint u8 [464, 2] => "ReversePathPKeyMemberBit",
        /// Reserved (byte 58 low 6 bits, byte 59).
        reserved1: uint u16 [466, 14] => _,
        /// Reserved (bytes 60–63).
        reserved2: uint u32 [480, 32] => _,
    }
}

sa_record! {
    PathRecord, AttributeId::SA_PATH_RECORD, padded 64;
    0 COMP_SERVICE_ID_MSB => "ServiceID(MSB)",
    1 COMP_SERVICE_ID_LSB => "ServiceID(LSB)",
    2 COMP_DGID => "DGID",
    3 COMP_SGID => "SGID",
    4 COMP_DLID => "DLID",
    5 COMP_SLID => "SLID",
    6 COMP_RAW_TRAFFIC => "RawTraffic",
    7 COMP_RESERVED => "reserved",
    8 COMP_FLOW_LABEL => "FlowLabel",
    9 COMP_HOP_LIMIT => "HopLimit",
    10 COMP_TCLASS => "TClass",
    11 COMP_REVERSIBLE => "Reversible",
    12 COMP_NUMB_PATH => "NumbPath",
    13 COMP_PKEY => "P_Key",
    14 COMP_QOS_CLASS => "QoSClass",
    15 COMP_SL => "SL",
    16 COMP_MTU_SELECTOR => "MTUSelector",
    17 COMP_MTU => "MTU",
    18 COMP_RATE_SELECTOR => "RateSelector",
    19 COMP_RATE => "Rate",
    20 COMP_PACKET_LIFE_TIME_SELECTOR => "PacketLifeTimeSelector",
    21 COMP_PACKET_LIFE_TIME => "PacketLifeTime",
    22 COMP_PREFERENCE => "Preference",
    23 COMP_REVERSE_PATH_PKEY_MEMBER_BIT => "ReversePathPKeyMemberBit",
    24 COMP_RESERVED1 => "reserved",
    25 COMP_RESERVED2 => "reserved",
}

impl PathRecord {
    /// Both ServiceID components; the IBA splits the field in two mask
    /// bits and a client sets both (kernel `IB_SA_PATH_REC_SERVICE_ID`,
    /// opensm `IB_PR_COMPMASK_SERVICEID`).
    pub const COMP_SERVICE_ID: u64 = Self::COMP_SERVICE_ID_MSB | Self::COMP_SERVICE_ID_LSB;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(PathRecord);

    #[test]
    fn packed_fields_sit_at_their_documented_offsets() {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
        b[8] = 0xFE; // DGID first byte
        b[39] = 0x01; // SGID last byte
        b[40..42].copy_from_slice(&0x0102u16.to_be_bytes());
        b[42..44].copy_from_slice(&0x0304u16.to_be_bytes());
        // RawTraffic=1, reserved=0, FlowLabel=0xABCDE, HopLimit=0x40
        b[44..48].copy_from_slice(&0x8ABC_DE40u32.to_be_bytes());
        b[48] = 0x12; // TClass
        b[49] = 0x80 | 0x05; // Reversible, NumbPath 5
        b[50..52].copy_from_slice(&0xFFFFu16.to_be_bytes());
        b[52..54].copy_from_slice(&((0x123u16 << 4) | 0x9).to_be_bytes()); // QoSClass, SL
        b[54] = (2 << 6) | 4; // MTU exactly 2048
        b[55] = (3 << 6) | 7; // best rate, 40 Gb/s
        b[56] = (1 << 6) | 0x12;
        b[57] = 0x55;
        b[58] = 0x80; // ReversePathPKeyMemberBit = 2
        let pr = PathRecord::parse(&b).unwrap();
        assert_eq!(pr.service_id, 0x1122_3344_5566_7788);
        assert_eq!((pr.dgid[0], pr.sgid[15]), (0xFE, 0x01));
        assert_eq!((pr.dlid, pr.slid), (0x0102, 0x0304));
        assert!(pr.raw_traffic);
        assert_eq!(
            (pr.flow_label, pr.hop_limit, pr.tclass),
            (0xABCDE, 0x40, 0x12)
        );
        assert!(pr.reversible);
        assert_eq!((pr.numb_path, pr.pkey), (5, 0xFFFF));
        assert_eq!((pr.qos_class, pr.sl), (0x123, 9));
        assert_eq!((pr.mtu_selector, pr.mtu), (Selector::EXACTLY, 4));
        assert_eq!((pr.rate_selector, pr.rate), (Selector::BEST, 7));
        assert_eq!(
            (pr.packet_life_time_selector, pr.packet_life_time),
            (Selector::LESS_THAN, 0x12)
        );
        assert_eq!((pr.preference, pr.reverse_path_pkey_member_bit), (0x55, 2));
        assert_eq!(pr.to_vec().unwrap(), b);
    }

    #[test]
    fn sl_is_the_low_nibble_of_byte_53() {
        let pr = PathRecord {
            sl: 0xF,
            ..PathRecord::default()
        };
        let b = pr.to_vec().unwrap();
        assert_eq!(b[53], 0x0F);
        assert!(b.iter().enumerate().all(|(i, v)| i == 53 || *v == 0));
    }

    #[test]
    fn emitting_a_too_wide_flow_label_fails() {
        let pr = PathRecord {
            flow_label: 1 << 20,
            ..PathRecord::default()
        };
        assert!(pr.to_vec().is_err());
    }

    #[test]
    fn component_bits_match_opensm_ib_pr_compmask() {
        // ib_types.h: IB_PR_COMPMASK_DGID = CL_HTON64(1<<2), _SL = <<15,
        // _PKTLIFETIME = <<21; the SA header stores the mask big-endian.
        assert_eq!(PathRecord::COMP_DGID, 1 << 2);
        assert_eq!(PathRecord::COMP_SL, 1 << 15);
        assert_eq!(PathRecord::COMP_PACKET_LIFE_TIME, 1 << 21);
        assert_eq!(PathRecord::COMP_SERVICE_ID, 0b11);
        assert_eq!(
            PathRecord::COMP_SL.to_be_bytes(),
            [0, 0, 0, 0, 0, 0, 0x80, 0]
        );
        assert_eq!(PathRecord::COMPONENTS.len(), 26);
        assert_eq!(PathRecord::ATTR_OFFSET, 8);
    }
}
