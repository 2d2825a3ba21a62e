//! ClassPortInfo (attribute 0x0001 of every GS class; MAD.md §9).

crate::wire_struct! {
    /// ClassPortInfo, 72 bytes (libibmad labels).
    pub struct ClassPortInfo ("ClassPortInfo", 72) {
        /// BaseVersion (byte 0).
        base_version: uint u8 [0, 8] => "BaseVersion",
        /// ClassVersion (byte 1).
        class_version: uint u8 [8, 8] => "ClassVersion",
        /// CapabilityMask (bytes 2–3): generic bits `CAP_*`, class bits
        /// from bit 8 (PerfMgt: [`pm_cap`](super::pm_cap)).
        capability_mask: uint u16 [16, 16] => "CapabilityMask",
        /// CapabilityMask2: upper 27 bits of bytes 4–7 (PerfMgt:
        /// [`pm_cap2`](super::pm_cap2)).
        capability_mask2: uint u32 [32, 27] => "CapabilityMask2",
        /// RespTimeValue: low 5 bits of byte 7 (4.096 µs × 2^value).
        resp_time_value: uint u8 [59, 5] => "RespTimeVal",
        /// RedirectGID (bytes 8–23).
        redirect_gid: bytes [u8; 16] [8] => "RedirectGID",
        /// RedirectTC (byte 24).
        redirect_tc: uint u8 [192, 8] => "RedirectTC",
        /// RedirectSL (byte 25, high nibble).
        redirect_sl: uint u8 [200, 4] => "RedirectSL",
        /// RedirectFL (low 20 bits of bytes 24–27).
        redirect_fl: uint u32 [204, 20] => "RedirectFL",
        /// RedirectLID (bytes 28–29).
        redirect_lid: uint u16 [224, 16] => "RedirectLID",
        /// RedirectP_Key (bytes 30–31).
        redirect_pkey: uint u16 [240, 16] => "RedirectPKey",
        /// Reserved (byte 32).
        reserved: uint u8 [256, 8] => _,
        /// RedirectQP (bytes 33–35).
        redirect_qp: uint u32 [264, 24] => "RedirectQP",
        /// RedirectQ_Key (bytes 36–39).
        redirect_qkey: uint u32 [288, 32] => "RedirectQKey",
        /// TrapGID (bytes 40–55).
        trap_gid: bytes [u8; 16] [40] => "TrapGID",
        /// TrapTC (byte 56).
        trap_tc: uint u8 [448, 8] => "TrapTC",
        /// TrapSL (byte 57, high nibble).
        trap_sl: uint u8 [456, 4] => "TrapSL",
        /// TrapFL (low 20 bits of bytes 56–59).
        trap_fl: uint u32 [460, 20] => "TrapFL",
        /// TrapLID (bytes 60–61).
        trap_lid: uint u16 [480, 16] => "TrapLID",
        /// TrapP_Key (bytes 62–63).
        trap_pkey: uint u16 [496, 16] => "TrapPKey",
        /// TrapHL (byte 64).
        trap_hl: uint u8 [512, 8] => "TrapHL",
        /// TrapQP (bytes 65–67).
        trap_qp: uint u32 [520, 24] => "TrapQP",
        /// TrapQ_Key (bytes 68–71).
        trap_qkey: uint u32 [544, 32] => "TrapQKey",
    }
}

impl ClassPortInfo {
    /// CapabilityMask: the class can generate traps (`IB_CLASS_CAP_TRAP`).
    pub const CAP_TRAP: u16 = 0x0001;
    /// CapabilityMask: Get/Set of Notice supported (`IB_CLASS_CAP_GETSET`).
    pub const CAP_GETSET: u16 = 0x0002;
    /// CapabilityMask: CapabilityMask2 is valid (`IB_CLASS_CAP_CAPMASK2`).
    pub const CAP_CAPMASK2: u16 = 0x0004;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(ClassPortInfo);

    #[test]
    fn class_port_info_fields_land_at_the_documented_offsets() {
        let mut b = [0u8; 72];
        b[0] = 1;
        b[1] = 2;
        b[2..4].copy_from_slice(&[0x06, 0x00]); // ext width + NoIETF
                                                // CapabilityMask2 = 0x2 (<<5), RespTimeVal 18.
        b[4..8].copy_from_slice(&((0x2u32 << 5) | 18).to_be_bytes());
        b[8] = 0xFE;
        b[23] = 0x01;
        b[24..28].copy_from_slice(&[0x12, 0x3A, 0xBC, 0xDE]);
        b[28..30].copy_from_slice(&[0x00, 0x07]);
        b[30..32].copy_from_slice(&[0xFF, 0xFF]);
        b[32..36].copy_from_slice(&[0x00, 0x00, 0x00, 0x01]);
        b[36..40].copy_from_slice(&0x8001_0000u32.to_be_bytes());
        b[40] = 0xFE;
        b[56..60].copy_from_slice(&[0x34, 0x5F, 0xFF, 0xFF]);
        b[60..62].copy_from_slice(&[0x00, 0x01]);
        b[62..64].copy_from_slice(&[0x7F, 0xFF]);
        b[64..68].copy_from_slice(&[0x40, 0x00, 0x00, 0x01]);
        b[68..72].copy_from_slice(&0x8001_0000u32.to_be_bytes());
        let c = ClassPortInfo::parse(&b).unwrap();
        assert_eq!((c.base_version, c.class_version), (1, 2));
        assert_eq!(c.capability_mask, 0x0600);
        assert_eq!(c.capability_mask2, 0x2);
        assert_eq!(c.resp_time_value, 18);
        assert_eq!((c.redirect_gid[0], c.redirect_gid[15]), (0xFE, 0x01));
        assert_eq!(c.redirect_tc, 0x12);
        assert_eq!(c.redirect_sl, 3);
        assert_eq!(c.redirect_fl, 0xABCDE);
        assert_eq!(c.redirect_lid, 7);
        assert_eq!(c.redirect_pkey, 0xFFFF);
        assert_eq!(c.redirect_qp, 1);
        assert_eq!(c.redirect_qkey, 0x8001_0000);
        assert_eq!(c.trap_gid[0], 0xFE);
        assert_eq!((c.trap_tc, c.trap_sl, c.trap_fl), (0x34, 5, 0xFFFFF));
        assert_eq!((c.trap_lid, c.trap_pkey), (1, 0x7FFF));
        assert_eq!((c.trap_hl, c.trap_qp), (0x40, 1));
        assert_eq!(c.trap_qkey, 0x8001_0000);
        assert_eq!(c.to_vec().unwrap(), b.to_vec());
    }
}
