//! The common MAD header (24 bytes) as a zero-copy view ([`Mad`]) and as a
//! `Repr` ([`MadHeader`]).

use super::bytes::{self, view_methods};
use super::{AttributeId, Error, MadStatus, Method, MgmtClass, MAD_HEADER_LEN};

crate::wire_struct! {
    /// Common MAD header (MAD.md §2). Field labels are libibmad's.
    pub struct MadHeader ("MadHeader", 24) view Mad at 0 {
        /// Base version (1 for IB).
        base_version: uint u8 [0, 8] => "BaseVers" view pub base_version / pub set_base_version,
        /// Management class.
        mgmt_class: uint MgmtClass [8, 8] => "MgmtClass" view pub mgmt_class / pub set_mgmt_class,
        /// Class version.
        class_version: uint u8 [16, 8] => "ClassVers"
            view pub class_version / pub set_class_version,
        /// Response bit (0x80 of byte 3).
        response: uint bool [24, 1] => "IsResponse" view pub response_bit / pub set_response_bit,
        /// Method, without the response bit.
        method: uint Method [25, 7] => "Method" view pub method / set_method_bits,
        /// Status. For DR SMPs bit 15 is the D bit.
        status: uint MadStatus [32, 16] => "Status" view pub status / pub set_status,
        /// Class-specific word (DR SMP: hop pointer and hop count).
        class_specific: uint u16 [48, 16] => "ClassSpecific"
            view pub class_specific / pub set_class_specific,
        /// Transaction ID.
        tid: uint u64 [64, 64] => "TID" view pub tid / pub set_tid,
        /// Attribute ID.
        attr_id: uint AttributeId [128, 16] => "AttrId" view pub attr_id / pub set_attr_id,
        /// Reserved.
        reserved: uint u16 [144, 16] => _,
        /// Attribute modifier.
        attr_mod: uint u32 [160, 32] => "AttrMod" view pub attr_mod / pub set_attr_mod,
    }
}

impl MadHeader {
    /// True when the kernel would route this MAD as a response (by TID):
    /// R bit set, TrapRepress, or a BM MAD with attribute-modifier bit 0.
    #[must_use]
    #[inline]
    pub fn is_response(&self) -> bool {
        self.response
            || self.method == Method::TRAP_REPRESS
            || (self.mgmt_class == MgmtClass::BM && self.attr_mod & 1 != 0)
    }
}

/// A zero-copy view of a MAD buffer (at least the 24-byte common header).
///
/// The buffer may be longer than 256 bytes (a reassembled RMPP message).
#[derive(Debug, Clone, Copy)]
pub struct Mad<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> Mad<T> {
    view_methods! {
        /// Wraps `buf` without checking its length. Accessors then read
        /// missing bytes as zero; prefer [`Mad::new_checked`].
        new_unchecked;
        /// Wraps `buf`, checking that it holds the common header.
        ///
        /// # Errors
        /// [`Error::Truncated`] if `buf` is shorter than 24 bytes.
        new_checked(MAD_HEADER_LEN, "MadHeader");
        into_inner;
        as_bytes;
    }

    /// Byte 3 as sent: method with the response bit.
    #[inline]
    pub fn raw_method(&self) -> u8 {
        (u8::from(self.response_bit()) << 7) | self.method().0
    }
    /// Routed as a response (see [`MadHeader::is_response`]).
    #[inline]
    pub fn is_response(&self) -> bool {
        self.response_bit()
            || self.method() == Method::TRAP_REPRESS
            || (self.mgmt_class() == MgmtClass::BM && self.attr_mod() & 1 != 0)
    }
    /// Everything after the common header.
    pub fn payload(&self) -> &[u8] {
        bytes::sub(self.as_bytes(), MAD_HEADER_LEN..)
    }
    /// The header as a `Repr`.
    ///
    /// # Errors
    /// Only if the view was built unchecked over a short buffer.
    pub fn header(&self) -> Result<MadHeader, Error> {
        <MadHeader as super::Repr>::parse(self.as_bytes())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Mad<T> {
    /// Sets method and response bit.
    pub fn set_method(&mut self, m: Method, response: bool) {
        self.set_method_bits(m);
        self.set_response_bit(response);
    }
    /// Writes the header of a request: base version 1, `class` at
    /// `class_version`, `method` without the response bit, `attr` and
    /// `attr_mod` (status, class-specific word and TID are left alone).
    pub fn set_request(
        &mut self,
        class: MgmtClass,
        class_version: u8,
        method: Method,
        attr: AttributeId,
        attr_mod: u32,
    ) {
        self.set_base_version(1);
        self.set_mgmt_class(class);
        self.set_class_version(class_version);
        self.set_method(method, false);
        self.set_attr_id(attr);
        self.set_attr_mod(attr_mod);
    }
    /// Everything after the common header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        bytes::sub_mut(self.buf.as_mut(), MAD_HEADER_LEN..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(MadHeader);

    #[test]
    fn view_and_repr_agree() {
        let mut buf = [0u8; 256];
        for (i, b) in buf.iter_mut().enumerate().take(24) {
            *b = (i as u8).wrapping_mul(37).wrapping_add(5);
        }
        let m = Mad::new_checked(&buf[..]).unwrap();
        let h = MadHeader::parse(&buf).unwrap();
        assert_eq!(m.mgmt_class(), h.mgmt_class);
        assert_eq!(m.method(), h.method);
        assert_eq!(m.response_bit(), h.response);
        assert_eq!(m.status(), h.status);
        assert_eq!(m.tid(), h.tid);
        assert_eq!(m.attr_id(), h.attr_id);
        assert_eq!(m.attr_mod(), h.attr_mod);
        assert_eq!(m.class_specific(), h.class_specific);
        let mut out = [0u8; 24];
        h.emit(&mut out).unwrap();
        assert_eq!(&out[..], &buf[..24]);
    }

    #[test]
    fn setters_write_what_getters_read() {
        let mut m = Mad::new_checked([0u8; 256]).unwrap();
        m.set_mgmt_class(MgmtClass::SUBN_ADM);
        m.set_method(Method::GET_TABLE, true);
        m.set_tid(0xdead_beef_0000_0001);
        m.set_attr_id(AttributeId::SA_PATH_RECORD);
        m.set_attr_mod(7);
        m.set_status(MadStatus::SA_NO_RECORDS);
        assert_eq!(m.raw_method(), 0x92);
        assert!(m.is_response());
        assert_eq!(m.tid(), 0xdead_beef_0000_0001);
        assert_eq!(m.attr_mod(), 7);
        assert_eq!(m.status(), MadStatus::SA_NO_RECORDS);
    }

    #[test]
    fn short_buffers_are_errors() {
        assert!(matches!(
            Mad::new_checked(&[0u8; 23][..]),
            Err(Error::Truncated {
                need: 24,
                got: 23,
                ..
            })
        ));
        assert!(MadHeader::parse(&[0u8; 10]).is_err());
    }

    #[test]
    fn trap_repress_and_bm_odd_modifier_are_responses() {
        let h = MadHeader {
            method: Method::TRAP_REPRESS,
            ..Default::default()
        };
        assert!(h.is_response());
        let h = MadHeader {
            mgmt_class: MgmtClass::BM,
            attr_mod: 1,
            ..Default::default()
        };
        assert!(h.is_response());
    }
}
