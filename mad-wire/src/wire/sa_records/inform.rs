//! InformInfo (attribute 0x0003, 36 bytes) and InformInfoRecord (SA
//! attribute 0x00F3, 60 bytes, padded 64).

use crate::wire::AttributeId;

crate::wire_struct! {
    /// InformInfo (ATTRIBUTES.md §11.8): a subscription to traps, sent to
    /// the SA with SubnAdmSet. Bytes 26–27 and 33–35 are a union: TrapNumber
    /// and ProducerType for generic subscriptions (`is_generic == 1`),
    /// DeviceID and VendorID for vendor ones; the labels name both. Layout
    /// from opensm `ib_inform_info_t` and python-rdma `MADInformInfo`.
    pub struct InformInfo ("InformInfo", 36) {
        /// Issuer GID to match; all zero means "use the LID range".
        gid: bytes [u8; 16] [0] => "GID",
        /// First issuer LID ([`InformInfo::LID_RANGE_ALL`] = any issuer).
        lid_range_begin: uint u16 [128, 16] => "LIDRangeBegin",
        /// Last issuer LID.
        lid_range_end: uint u16 [144, 16] => "LIDRangeEnd",
        /// Reserved (bytes 20–21).
        reserved: uint u16 [160, 16] => _,
        /// 1 for generic notices, 0 for vendor ones.
        is_generic: uint u8 [176, 8] => "IsGeneric",
        /// 1 to subscribe, 0 to unsubscribe.
        subscribe: uint u8 [184, 8] => "Subscribe",
        /// Notice type ([`InformInfo::TYPE_ALL`] = all).
        trap_type: uint u16 [192, 16] => "Type",
        /// Generic: TrapNumber; vendor: DeviceID (0xFFFF = all).
        trap_number_or_device_id: uint u16 [208, 16] => "TrapNumber/DeviceID",
        /// QPN reports go to (upper 24 bits of the word at byte 28).
        qpn: uint u32 [224, 24] => "QPN",
        /// Reserved (byte 31, mask 0xE0).
        reserved1: uint u8 [248, 3] => _,
        /// RespTimeValue (byte 31, mask 0x1F).
        resp_time_value: uint u8 [251, 5] => "RespTimeValue",
        /// Reserved (byte 32).
        reserved2: uint u8 [256, 8] => _,
        /// Generic: ProducerType; vendor: VendorID (0xFFFFFF = all).
        producer_type_or_vendor_id: uint u32 [264, 24] => "ProducerType/VendorID",
    }
}

sa_record! {
    InformInfo, AttributeId::INFORM_INFO, padded 40;
    0 COMP_GID => "GID",
    1 COMP_LID_RANGE_BEGIN => "LIDRangeBegin",
    2 COMP_LID_RANGE_END => "LIDRangeEnd",
    3 COMP_RESERVED => "reserved",
    4 COMP_IS_GENERIC => "IsGeneric",
    5 COMP_SUBSCRIBE => "Subscribe",
    6 COMP_TYPE => "Type",
    7 COMP_TRAP_NUMBER_OR_DEVICE_ID => "TrapNumber/DeviceID",
    8 COMP_QPN => "QPN",
    9 COMP_RESERVED1 => "reserved",
    10 COMP_RESP_TIME_VALUE => "RespTimeValue",
    11 COMP_RESERVED2 => "reserved",
    12 COMP_PRODUCER_TYPE_OR_VENDOR_ID => "ProducerType/VendorID",
}

impl InformInfo {
    /// LIDRangeBegin value matching every issuer.
    pub const LID_RANGE_ALL: u16 = 0xFFFF;
    /// Type value matching every notice type.
    pub const TYPE_ALL: u16 = 0xFFFF;
    /// TrapNumber / DeviceID value matching all.
    pub const TRAP_NUMBER_ALL: u16 = 0xFFFF;
    /// ProducerType / VendorID value matching all.
    pub const PRODUCER_TYPE_ALL: u32 = 0x00FF_FFFF;

    /// True for a generic subscription (`is_generic != 0`).
    #[must_use]
    pub fn generic(&self) -> bool {
        self.is_generic != 0
    }

    /// Whether `other` asks for the same traps: GID, LID range, IsGeneric,
    /// Type, TrapNumber/DeviceID and ProducerType/VendorID equal (Subscribe,
    /// QPN, RespTimeValue and the reserved bits aside).
    #[must_use]
    pub fn same_traps(&self, other: &Self) -> bool {
        self.gid == other.gid
            && self.lid_range_begin == other.lid_range_begin
            && self.lid_range_end == other.lid_range_end
            && self.is_generic == other.is_generic
            && self.trap_type == other.trap_type
            && self.trap_number_or_device_id == other.trap_number_or_device_id
            && self.producer_type_or_vendor_id == other.producer_type_or_vendor_id
    }
}

crate::wire_struct! {
    /// InformInfoRecord (ATTRIBUTES.md §11.9): a subscription as listed by
    /// the SA. Offsets from opensm `ib_inform_info_record_t` (inform_info at
    /// 24, struct size 64, so the GetTable stride is 64). The IBA table
    /// (python-rdma `SAInformInfoRecord`) adds 20 reserved bytes after the
    /// InformInfo (80 bytes); opensm does not send them, so they are not
    /// part of this structure.
    pub struct InformInfoRecord ("InformInfoRecord", 60) {
        /// GID of the subscriber.
        subscriber_gid: bytes [u8; 16] [0] => "SubscriberGID",
        /// Enum: distinguishes several subscriptions of one subscriber.
        enumeration: uint u16 [128, 16] => "Enum",
        /// Reserved (bytes 18–23).
        reserved: uint u64 [144, 48] => _,
        /// The subscription.
        inform_info: nested InformInfo [24] => "InformInfo",
    }
}

sa_record! {
    InformInfoRecord, AttributeId::SA_INFORMINFO_RECORD, padded 64;
    0 COMP_SUBSCRIBER_GID => "SubscriberGID",
    1 COMP_ENUM => "Enum",
    2 COMP_RESERVED => "reserved",
    3 COMP_GID => "GID",
    4 COMP_LID_RANGE_BEGIN => "LIDRangeBegin",
    5 COMP_LID_RANGE_END => "LIDRangeEnd",
    6 COMP_RESERVED1 => "reserved",
    7 COMP_IS_GENERIC => "IsGeneric",
    8 COMP_SUBSCRIBE => "Subscribe",
    9 COMP_TYPE => "Type",
    10 COMP_TRAP_NUMBER_OR_DEVICE_ID => "TrapNumber/DeviceID",
    11 COMP_QPN => "QPN",
    12 COMP_RESERVED2 => "reserved",
    13 COMP_RESP_TIME_VALUE => "RespTimeValue",
    14 COMP_RESERVED3 => "reserved",
    15 COMP_PRODUCER_TYPE_OR_VENDOR_ID => "ProducerType/VendorID",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(InformInfo, InformInfoRecord);

    #[test]
    fn same_traps_ignores_subscribe_qpn_and_response_time_only() {
        let a = InformInfo {
            lid_range_begin: InformInfo::LID_RANGE_ALL,
            is_generic: 1,
            subscribe: 1,
            trap_type: InformInfo::TYPE_ALL,
            trap_number_or_device_id: 64,
            qpn: 0x31,
            resp_time_value: 18,
            producer_type_or_vendor_id: InformInfo::PRODUCER_TYPE_ALL,
            ..InformInfo::default()
        };
        let unsubscribe = InformInfo {
            subscribe: 0,
            qpn: 1,
            resp_time_value: 0,
            ..a.clone()
        };
        assert!(a.same_traps(&unsubscribe));
        let other = InformInfo {
            trap_number_or_device_id: 65,
            ..a.clone()
        };
        assert!(!a.same_traps(&other));
    }

    fn sample_bytes() -> [u8; 36] {
        let mut b = [0u8; 36];
        b[15] = 0x01; // GID last byte
        b[16..18].copy_from_slice(&0xFFFFu16.to_be_bytes());
        b[18..20].copy_from_slice(&0x0010u16.to_be_bytes());
        b[22] = 1; // generic
        b[23] = 1; // subscribe
        b[24..26].copy_from_slice(&0x0004u16.to_be_bytes());
        b[26..28].copy_from_slice(&64u16.to_be_bytes()); // trap 64
                                                         // QPN 0x123456, reserved 0, RespTimeValue 0x13
        b[28..32].copy_from_slice(&0x1234_5613u32.to_be_bytes());
        b[33..36].copy_from_slice(&[0x00, 0x00, 0x04]); // producer: subnet management
        b
    }

    #[test]
    fn qpn_and_resp_time_value_split_the_word_at_byte_28() {
        let b = sample_bytes();
        let ii = InformInfo::parse(&b).unwrap();
        assert_eq!(ii.gid[15], 1);
        assert_eq!(
            (ii.lid_range_begin, ii.lid_range_end),
            (InformInfo::LID_RANGE_ALL, 0x10)
        );
        assert!(ii.generic());
        assert_eq!(
            (ii.subscribe, ii.trap_type, ii.trap_number_or_device_id),
            (1, 4, 64)
        );
        assert_eq!(
            (ii.qpn, ii.reserved1, ii.resp_time_value),
            (0x12_3456, 0, 0x13)
        );
        assert_eq!(ii.producer_type_or_vendor_id, 4);
        assert_eq!(ii.to_vec().unwrap(), b);

        let only_rtv = InformInfo {
            resp_time_value: 0x1F,
            ..InformInfo::default()
        };
        assert_eq!(only_rtv.to_vec().unwrap()[28..32], [0, 0, 0, 0x1F]);
        let too_big = InformInfo {
            qpn: 1 << 24,
            ..InformInfo::default()
        };
        assert!(too_big.to_vec().is_err());
    }

    #[test]
    fn inform_info_record_embeds_inform_info_at_byte_24() {
        let mut b = [0u8; 60];
        b[0] = 0xFE;
        b[16..18].copy_from_slice(&3u16.to_be_bytes());
        b[24..60].copy_from_slice(&sample_bytes());
        let r = InformInfoRecord::parse(&b).unwrap();
        assert_eq!((r.subscriber_gid[0], r.enumeration), (0xFE, 3));
        assert_eq!(r.inform_info, InformInfo::parse(&sample_bytes()).unwrap());
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_ib_iir_compmask() {
        // ib_types.h: IB_IIR_COMPMASK_ENUM <<1, _GID <<3, _TRAPNUMB <<10,
        // _QPN <<11, _RESPTIME <<13, _PRODTYPE <<15.
        assert_eq!(InformInfoRecord::COMP_ENUM, 1 << 1);
        assert_eq!(InformInfoRecord::COMP_GID, 1 << 3);
        assert_eq!(InformInfoRecord::COMP_TRAP_NUMBER_OR_DEVICE_ID, 1 << 10);
        assert_eq!(InformInfoRecord::COMP_QPN, 1 << 11);
        assert_eq!(InformInfoRecord::COMP_RESP_TIME_VALUE, 1 << 13);
        assert_eq!(InformInfoRecord::COMP_PRODUCER_TYPE_OR_VENDOR_ID, 1 << 15);
        assert_eq!(InformInfoRecord::ATTR_OFFSET, 8);
        assert_eq!(InformInfo::PADDED_LEN, 40);
    }
}
