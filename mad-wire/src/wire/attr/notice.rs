//! Notice (attribute 0x0002): the payload of SMP Trap / TrapRepress and of
//! SA Report (ATTRIBUTES.md §7).

crate::wire_struct! {
    /// Notice, 80 bytes.
    ///
    /// Bytes 1–3 and 4–5 mean different things for generic and vendor
    /// notices; each range is one field whose label names both meanings
    /// (libibmad prints them as `NoticeProducerType` / `NoticeTrapNumber`).
    /// Use [`Notice::producer_type`], [`Notice::trap_number`],
    /// [`Notice::vendor_id`] and [`Notice::device_id`] for the meaning
    /// selected by `is_generic`.
    pub struct Notice ("Notice", 80) {
        /// IsGeneric (byte 0, 0x80).
        is_generic: uint bool [0, 1] => "NoticeIsGeneric",
        /// Type (byte 0, 0x7F): see the `TYPE_*` constants.
        notice_type: uint u8 [1, 7] => "NoticeType",
        /// Bytes 1–3: generic ProducerType (`PRODUCER_*`) or vendor
        /// VendorID (IEEE OUI).
        producer_type_or_vendor_id: uint u32 [8, 24] => "NoticeProducerType/VendorID",
        /// Bytes 4–5: generic TrapNumber (see [`trap`](super::trap)) or
        /// vendor DeviceID.
        trap_number_or_device_id: uint u16 [32, 16] => "NoticeTrapNumber/DeviceID",
        /// IssuerLID (bytes 6–7).
        issuer_lid: uint u16 [48, 16] => "NoticeIssuerLID",
        /// NoticeToggle (byte 8, 0x80).
        toggle: uint bool [64, 1] => "NoticeToggle",
        /// NoticeCount (low 15 bits of bytes 8–9).
        count: uint u16 [65, 15] => "NoticeCount",
        /// DataDetails (bytes 10–63); layout depends on the trap number.
        data_details: bytes [u8; 54] [10] => "NoticeDataDetails",
        /// IssuerGID (bytes 64–79).
        issuer_gid: bytes [u8; 16] [64] => "IssuerGID",
    }
}

impl Notice {
    /// Type: fatal.
    pub const TYPE_FATAL: u8 = 0;
    /// Type: urgent.
    pub const TYPE_URGENT: u8 = 1;
    /// Type: security.
    pub const TYPE_SECURITY: u8 = 2;
    /// Type: subnet management.
    pub const TYPE_SUBNET_MGMT: u8 = 3;
    /// Type: informational.
    pub const TYPE_INFO: u8 = 4;

    /// ProducerType: channel adapter.
    pub const PRODUCER_CA: u32 = 1;
    /// ProducerType: switch.
    pub const PRODUCER_SWITCH: u32 = 2;
    /// ProducerType: router.
    pub const PRODUCER_ROUTER: u32 = 3;
    /// ProducerType: class manager (e.g. the SM/SA).
    pub const PRODUCER_CLASS_MANAGER: u32 = 4;

    /// ProducerType of a generic notice; `None` for a vendor notice.
    #[must_use]
    pub fn producer_type(&self) -> Option<u32> {
        self.is_generic.then_some(self.producer_type_or_vendor_id)
    }

    /// TrapNumber of a generic notice; `None` for a vendor notice.
    #[must_use]
    pub fn trap_number(&self) -> Option<u16> {
        self.is_generic.then_some(self.trap_number_or_device_id)
    }

    /// VendorID of a vendor notice; `None` for a generic notice.
    #[must_use]
    pub fn vendor_id(&self) -> Option<u32> {
        (!self.is_generic).then_some(self.producer_type_or_vendor_id)
    }

    /// DeviceID of a vendor notice; `None` for a generic notice.
    #[must_use]
    pub fn device_id(&self) -> Option<u16> {
        (!self.is_generic).then_some(self.trap_number_or_device_id)
    }

    /// A generic notice with the given type, producer and trap number,
    /// everything else zero.
    #[must_use]
    pub fn generic(notice_type: u8, producer_type: u32, trap_number: u16) -> Self {
        Self {
            is_generic: true,
            notice_type,
            producer_type_or_vendor_id: producer_type,
            trap_number_or_device_id: trap_number,
            ..Self::default()
        }
    }
}

/// Generic trap numbers (ATTRIBUTES.md §7; kernel `ib_smi.h`,
/// `umad_sm.h`).
pub mod trap {
    /// GID in service (SA).
    pub const GID_IN_SERVICE: u16 = 64;
    /// GID out of service (SA).
    pub const GID_OUT_OF_SERVICE: u16 = 65;
    /// Multicast group created (SA).
    pub const MCAST_GROUP_CREATED: u16 = 66;
    /// Multicast group deleted (SA).
    pub const MCAST_GROUP_DELETED: u16 = 67;
    /// Path unavailable.
    pub const UNPATH: u16 = 68;
    /// Path available again.
    pub const REPATH: u16 = 69;
    /// Link state changed (switch).
    pub const LINK_STATE_CHANGE: u16 = 128;
    /// Local link integrity threshold reached.
    pub const LINK_INTEGRITY_THRESHOLD: u16 = 129;
    /// Excessive buffer overrun threshold reached.
    pub const BUFFER_OVERRUN_THRESHOLD: u16 = 130;
    /// Flow-control update watchdog timer expired.
    pub const WATCHDOG_TIMER_EXPIRED: u16 = 131;
    /// CapabilityMask / other local changes.
    pub const LOCAL_CHANGES: u16 = 144;
    /// SystemImageGUID changed.
    pub const SYS_IMAGE_GUID_CHANGE: u16 = 145;
    /// Bad M_Key.
    pub const BAD_MKEY: u16 = 256;
    /// Bad P_Key.
    pub const BAD_PKEY: u16 = 257;
    /// Bad Q_Key.
    pub const BAD_QKEY: u16 = 258;
    /// Bad P_Key at a switch external port.
    pub const BAD_PKEY_SWITCH_EXT_PORT: u16 = 259;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(Notice);

    #[test]
    fn generic_notice_fields_land_at_the_documented_offsets() {
        let mut b = [0u8; 80];
        b[0] = 0x84; // generic, informational
        b[1..4].copy_from_slice(&[0, 0, 2]); // switch
        b[4..6].copy_from_slice(&128u16.to_be_bytes());
        b[6..8].copy_from_slice(&[0x00, 0x11]);
        b[8..10].copy_from_slice(&[0x80, 0x05]); // toggle, count 5
        b[10..12].copy_from_slice(&[0x00, 0x11]); // NoticeDataLID
        b[63] = 0xAA;
        b[64] = 0xFE;
        b[79] = 0x01;
        let n = Notice::parse(&b).unwrap();
        assert!(n.is_generic);
        assert_eq!(n.notice_type, Notice::TYPE_INFO);
        assert_eq!(n.producer_type(), Some(Notice::PRODUCER_SWITCH));
        assert_eq!(n.trap_number(), Some(trap::LINK_STATE_CHANGE));
        assert_eq!((n.vendor_id(), n.device_id()), (None, None));
        assert_eq!(n.issuer_lid, 0x11);
        assert!(n.toggle);
        assert_eq!(n.count, 5);
        assert_eq!(&n.data_details[..2], &[0x00, 0x11]);
        assert_eq!(n.data_details[53], 0xAA);
        assert_eq!((n.issuer_gid[0], n.issuer_gid[15]), (0xFE, 0x01));
        assert_eq!(n.to_vec().unwrap(), b.to_vec());
        let g = Notice::generic(Notice::TYPE_INFO, Notice::PRODUCER_SWITCH, 128);
        assert_eq!(&g.to_vec().unwrap()[..6], &b[..6]);
    }

    #[test]
    fn vendor_notice_reads_vendor_id_and_device_id_from_the_same_bytes() {
        let mut b = [0u8; 80];
        b[0] = 0x01; // vendor, urgent
        b[1..4].copy_from_slice(&[0x00, 0x02, 0xC9]);
        b[4..6].copy_from_slice(&[0x10, 0x17]);
        b[8..10].copy_from_slice(&[0x7F, 0xFF]);
        let n = Notice::parse(&b).unwrap();
        assert!(!n.is_generic);
        assert_eq!(n.notice_type, Notice::TYPE_URGENT);
        assert_eq!(n.vendor_id(), Some(0x0002C9));
        assert_eq!(n.device_id(), Some(0x1017));
        assert_eq!((n.producer_type(), n.trap_number()), (None, None));
        assert!(!n.toggle);
        assert_eq!(n.count, 0x7FFF);
    }
}
