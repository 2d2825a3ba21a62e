//! Service ID resolution: SIDR_REQ and SIDR_REP (IBTA tables 119–120).

use super::SidrStatus;

crate::wire_struct! {
    /// ServiceIDResReq (SIDR_REQ, IBTA table 119).
    pub struct CmSidrReq ("ServiceIDResReq", 232) {
        /// Request ID.
        request_id: uint u32 [0, 32] => "RequestID",
        /// Partition key.
        pkey: uint u16 [32, 16] => "PartitionKey",
        /// Reserved (bytes 6–7).
        reserved: uint u16 [48, 16] => _,
        /// Service ID.
        service_id: uint u64 [64, 64] => "ServiceID",
        /// Private data (216 bytes).
        private_data: bytes [u8; 216] [16] => "PrivateData",
    }
}

crate::wire_struct! {
    /// ServiceIDResReqResp (SIDR_REP, IBTA table 120).
    pub struct CmSidrRep ("ServiceIDResReqResp", 232) {
        /// Request ID.
        request_id: uint u32 [0, 32] => "RequestID",
        /// Status.
        status: uint SidrStatus [32, 8] => "Status",
        /// Bytes of additional information that are valid.
        additional_info_length: uint u8 [40, 8] => "AdditionalInfoLength",
        /// Vendor ID, high 16 bits.
        vendor_id_hi: uint u16 [48, 16] => "VendorIDH",
        /// QPN of the service.
        qpn: uint u32 [64, 24] => "QPN",
        /// Vendor ID, low byte.
        vendor_id_lo: uint u8 [88, 8] => "VendorIDL",
        /// Service ID.
        service_id: uint u64 [96, 64] => "ServiceID",
        /// Q_Key of the service.
        qkey: uint u32 [160, 32] => "QKey",
        /// Additional information (72 bytes: a ClassPortInfo on redirect).
        additional_info: bytes [u8; 72] [24] => "ClassPortInfo",
        /// Private data (136 bytes).
        private_data: bytes [u8; 136] [96] => "PrivateData",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(CmSidrReq, CmSidrRep);

    #[test]
    fn sidr_rep_fields_sit_where_the_ibta_puts_them() {
        let mut b = [0u8; 232];
        b[4] = 2;
        b[8..12].copy_from_slice(&[0x00, 0x12, 0x34, 0x56]);
        b[12..20].copy_from_slice(&0x0106_0000_0000_4e20u64.to_be_bytes());
        b[20..24].copy_from_slice(&0x1111_2222u32.to_be_bytes());
        let s = CmSidrRep::parse(&b).unwrap();
        assert_eq!(
            (s.status, s.qpn, s.vendor_id_lo),
            (SidrStatus::REJECTED, 0x1234, 0x56)
        );
        assert_eq!((s.service_id, s.qkey), (0x0106_0000_0000_4e20, 0x1111_2222));
    }
}
