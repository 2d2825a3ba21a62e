//! ServiceRecord (SA attribute 0x0031), 176 bytes.

use crate::wire::AttributeId;

crate::wire_struct! {
    /// ServiceRecord (ATTRIBUTES.md §11.7). Offsets from opensm
    /// `ib_service_record_t` and python-rdma `SAServiceRecord`; labels are
    /// libibmad's `ServRec*` where it has the field (libibmad prints the 64
    /// data bytes as one `ServRecData`; here they are four arrays).
    pub struct ServiceRecord ("ServiceRecord", 176) {
        /// ServiceID.
        service_id: uint u64 [0, 64] => "ServRecID",
        /// GID of the port providing the service.
        service_gid: bytes [u8; 16] [8] => "ServRecGid",
        /// Service P_Key.
        service_pkey: uint u16 [192, 16] => "ServRecPkey",
        /// Reserved (bytes 26–27).
        reserved: uint u16 [208, 16] => _,
        /// Lease in seconds; [`ServiceRecord::LEASE_INFINITE`] never expires.
        service_lease: uint u32 [224, 32] => "ServRecLease",
        /// ServiceKey.
        service_key: bytes [u8; 16] [32] => "ServRecKey",
        /// ServiceName, NUL-padded UTF-8.
        service_name: bytes [u8; 64] [48] => "ServRecName",
        /// ServiceData8[0..16] (bytes 112–127).
        service_data8: array [u8; 16] [896, 8] => "ServiceData8",
        /// ServiceData16[0..8] (bytes 128–143).
        service_data16: array [u16; 8] [1024, 16] => "ServiceData16",
        /// ServiceData32[0..4] (bytes 144–159).
        service_data32: array [u32; 4] [1152, 32] => "ServiceData32",
        /// ServiceData64[0..2] (bytes 160–175).
        service_data64: array [u64; 2] [1280, 64] => "ServiceData64",
    }
}

sa_record! {
    ServiceRecord, AttributeId::SA_SERVICE_RECORD, padded 176;
    0 COMP_SERVICE_ID => "ServiceID",
    1 COMP_SERVICE_GID => "ServiceGID",
    2 COMP_SERVICE_PKEY => "ServiceP_Key",
    3 COMP_RESERVED => "reserved",
    4 COMP_SERVICE_LEASE => "ServiceLease",
    5 COMP_SERVICE_KEY => "ServiceKey",
    6 COMP_SERVICE_NAME => "ServiceName",
    7 COMP_SERVICE_DATA8_0 => "ServiceData8[0]",
    8 COMP_SERVICE_DATA8_1 => "ServiceData8[1]",
    9 COMP_SERVICE_DATA8_2 => "ServiceData8[2]",
    10 COMP_SERVICE_DATA8_3 => "ServiceData8[3]",
    11 COMP_SERVICE_DATA8_4 => "ServiceData8[4]",
    12 COMP_SERVICE_DATA8_5 => "ServiceData8[5]",
    13 COMP_SERVICE_DATA8_6 => "ServiceData8[6]",
    14 COMP_SERVICE_DATA8_7 => "ServiceData8[7]",
    15 COMP_SERVICE_DATA8_8 => "ServiceData8[8]",
    16 COMP_SERVICE_DATA8_9 => "ServiceData8[9]",
    17 COMP_SERVICE_DATA8_10 => "ServiceData8[10]",
    18 COMP_SERVICE_DATA8_11 => "ServiceData8[11]",
    19 COMP_SERVICE_DATA8_12 => "ServiceData8[12]",
    20 COMP_SERVICE_DATA8_13 => "ServiceData8[13]",
    21 COMP_SERVICE_DATA8_14 => "ServiceData8[14]",
    22 COMP_SERVICE_DATA8_15 => "ServiceData8[15]",
    23 COMP_SERVICE_DATA16_0 => "ServiceData16[0]",
    24 COMP_SERVICE_DATA16_1 => "ServiceData16[1]",
    25 COMP_SERVICE_DATA16_2 => "ServiceData16[2]",
    26 COMP_SERVICE_DATA16_3 => "ServiceData16[3]",
    27 COMP_SERVICE_DATA16_4 => "ServiceData16[4]",
    28 COMP_SERVICE_DATA16_5 => "ServiceData16[5]",
    29 COMP_SERVICE_DATA16_6 => "ServiceData16[6]",
    30 COMP_SERVICE_DATA16_7 => "ServiceData16[7]",
    31 COMP_SERVICE_DATA32_0 => "ServiceData32[0]",
    32 COMP_SERVICE_DATA32_1 => "ServiceData32[1]",
    33 COMP_SERVICE_DATA32_2 => "ServiceData32[2]",
    34 COMP_SERVICE_DATA32_3 => "ServiceData32[3]",
    35 COMP_SERVICE_DATA64_0 => "ServiceData64[0]",
    36 COMP_SERVICE_DATA64_1 => "ServiceData64[1]",
}

impl ServiceRecord {
    /// ServiceLease value meaning "never expires".
    pub const LEASE_INFINITE: u32 = 0xFFFF_FFFF;

    /// ComponentMask bit of `ServiceData8[i]` (`i < 16`), `None` otherwise.
    #[must_use]
    pub fn comp_data8(i: usize) -> Option<u64> {
        (i < 16).then(|| Self::COMP_SERVICE_DATA8_0 << i)
    }
    /// ComponentMask bit of `ServiceData16[i]` (`i < 8`).
    #[must_use]
    pub fn comp_data16(i: usize) -> Option<u64> {
        (i < 8).then(|| Self::COMP_SERVICE_DATA16_0 << i)
    }
    /// ComponentMask bit of `ServiceData32[i]` (`i < 4`).
    #[must_use]
    pub fn comp_data32(i: usize) -> Option<u64> {
        (i < 4).then(|| Self::COMP_SERVICE_DATA32_0 << i)
    }
    /// ComponentMask bit of `ServiceData64[i]` (`i < 2`).
    #[must_use]
    pub fn comp_data64(i: usize) -> Option<u64> {
        (i < 2).then(|| Self::COMP_SERVICE_DATA64_0 << i)
    }

    /// The ServiceName up to its first NUL, decoded lossily as UTF-8.
    #[must_use]
    pub fn name(&self) -> String {
        let end = self.service_name.iter().position(|b| *b == 0).unwrap_or(64);
        String::from_utf8_lossy(&self.service_name[..end]).into_owned()
    }

    /// Sets the ServiceName, NUL-padded.
    ///
    /// # Errors
    /// [`crate::wire::Error::Invalid`] when `name` is longer than 64 bytes.
    pub fn set_name(&mut self, name: &str) -> Result<(), crate::wire::Error> {
        let b = name.as_bytes();
        if b.len() > 64 {
            return Err(crate::wire::Error::Invalid {
                what: "ServiceRecord",
                field: "service_name",
                value: b.len() as u64,
                reason: "name longer than 64 bytes",
            });
        }
        self.service_name = [0; 64];
        self.service_name[..b.len()].copy_from_slice(b);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(ServiceRecord);

    #[test]
    fn fields_sit_at_their_documented_offsets() {
        let mut b = [0u8; 176];
        b[0..8].copy_from_slice(&0x1000_0000_0000_0001u64.to_be_bytes());
        b[8] = 0xFE;
        b[24..26].copy_from_slice(&0x8001u16.to_be_bytes());
        b[28..32].copy_from_slice(&[0xFF; 4]);
        b[32] = 0xAA;
        b[48..51].copy_from_slice(b"svc");
        b[112] = 1;
        b[127] = 16;
        b[128..130].copy_from_slice(&0x0102u16.to_be_bytes());
        b[142..144].copy_from_slice(&0x0F10u16.to_be_bytes());
        b[144..148].copy_from_slice(&0xDEAD_BEEFu32.to_be_bytes());
        b[168..176].copy_from_slice(&0x0123_4567_89AB_CDEFu64.to_be_bytes());
        let r = ServiceRecord::parse(&b).unwrap();
        assert_eq!(r.service_id, 0x1000_0000_0000_0001);
        assert_eq!((r.service_gid[0], r.service_pkey), (0xFE, 0x8001));
        assert_eq!(r.service_lease, ServiceRecord::LEASE_INFINITE);
        assert_eq!(r.service_key[0], 0xAA);
        assert_eq!(r.name(), "svc");
        assert_eq!((r.service_data8[0], r.service_data8[15]), (1, 16));
        assert_eq!((r.service_data16[0], r.service_data16[7]), (0x0102, 0x0F10));
        assert_eq!(r.service_data32, [0xDEAD_BEEF, 0, 0, 0]);
        assert_eq!(r.service_data64, [0, 0x0123_4567_89AB_CDEF]);
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn set_name_pads_with_nul_and_refuses_long_names() {
        let mut r = ServiceRecord::default();
        r.set_name("a-much-longer-name").unwrap();
        r.set_name("short").unwrap();
        assert_eq!(r.name(), "short");
        assert_eq!(r.service_name[5..], [0u8; 59]);
        assert!(r.set_name(&"x".repeat(65)).is_err());
        r.set_name(&"y".repeat(64)).unwrap();
        assert_eq!(r.name().len(), 64);
    }

    #[test]
    fn component_bits_match_opensm_ib_sr_compmask() {
        // ib_types.h: IB_SR_COMPMASK_SNAME <<6, _SDATA8_0 <<7,
        // _SDATA16_0 <<23, _SDATA32_0 <<31, _SDATA64_1 <<36.
        assert_eq!(ServiceRecord::COMP_SERVICE_NAME, 1 << 6);
        assert_eq!(ServiceRecord::comp_data8(0), Some(1 << 7));
        assert_eq!(ServiceRecord::comp_data8(15), Some(1 << 22));
        assert_eq!(ServiceRecord::comp_data16(0), Some(1 << 23));
        assert_eq!(ServiceRecord::comp_data32(0), Some(1 << 31));
        assert_eq!(ServiceRecord::comp_data64(1), Some(1 << 36));
        assert_eq!(ServiceRecord::comp_data64(2), None);
        assert_eq!(ServiceRecord::COMPONENTS.len(), 37);
    }
}
