//! Vendor range-2 MADs (classes 0x30–0x4F, MAD.md §4): RMPP header at 24,
//! one reserved byte at 36, a 24-bit IEEE OUI at 37–39, data from 40.

use super::bytes::{self, view_methods};
use super::rmpp::{RmppHeader, RmppView};
use super::{Error, Mad, MgmtClass, MAD_HEADER_LEN, VENDOR_DATA_OFFSET};

/// The OpenIB OUI (`IB_OPENIB_OUI`), used by ibping (class 0x32) and
/// ibsysstat (class 0x33).
pub const IB_OPENIB_OUI: u32 = 0x00_1405;
/// ibping's vendor class (`IB_VENDOR_OPENIB_PING_CLASS`).
pub const IB_VENDOR_OPENIB_PING_CLASS: MgmtClass = MgmtClass(0x32);
/// ibsysstat's vendor class (`IB_VENDOR_OPENIB_SYSSTAT_CLASS`).
pub const IB_VENDOR_OPENIB_SYSSTAT_CLASS: MgmtClass = MgmtClass(0x33);
/// Where the OUI starts.
pub const VENDOR_OUI_OFFSET: usize = 37;
/// Largest OUI (24 bits).
pub const OUI_MAX: u32 = 0xFF_FFFF;

crate::wire_struct! {
    /// The vendor range-2 class header, MAD bytes 24–39 (byte offsets
    /// relative to byte 24).
    pub struct VendorHeader ("VendorHeader", 16) view VendorMad at MAD_HEADER_LEN {
        /// The RMPP header (bytes 24–35).
        rmpp: nested RmppHeader [0] => "RmppHeader",
        /// Reserved (byte 36).
        reserved: uint u8 [96, 8] => _ view pub reserved / set_reserved,
        /// The 24-bit IEEE OUI (bytes 37–39).
        oui: uint u32 [(VENDOR_OUI_OFFSET - MAD_HEADER_LEN) * 8, 24] => "OUI"
            view pub oui / set_oui_bits,
    }
}

/// A zero-copy view of a vendor range-2 MAD (at least 40 bytes; it may be
/// a reassembled RMPP message longer than 256). The class is not checked:
/// see [`VendorMad::is_vendor_range2`]. No accessor can panic.
#[derive(Debug, Clone, Copy)]
pub struct VendorMad<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> VendorMad<T> {
    view_methods! {
        /// Wraps `buf` without checking its length. Prefer
        /// [`VendorMad::new_checked`].
        new_unchecked;
        /// Wraps `buf`, checking that it holds the 40-byte vendor header.
        ///
        /// # Errors
        /// [`Error::Truncated`] if `buf` is shorter than 40 bytes.
        new_checked(VENDOR_DATA_OFFSET, "VendorMad");
        into_inner;
        mad;
        rmpp;
    }

    /// True when the class byte is in 0x30–0x4F.
    pub fn is_vendor_range2(&self) -> bool {
        self.mad().mgmt_class().is_vendor_range2()
    }

    /// The vendor header as a `Repr`.
    ///
    /// # Errors
    /// Only if the view was built unchecked over a short buffer.
    pub fn header(&self) -> Result<VendorHeader, Error> {
        <VendorHeader as super::Repr>::parse(bytes::sub(self.buf.as_ref(), MAD_HEADER_LEN..))
    }

    /// The class data: everything from byte 40.
    pub fn data(&self) -> &[u8] {
        bytes::sub(self.buf.as_ref(), VENDOR_DATA_OFFSET..)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VendorMad<T> {
    view_methods! {
        mad_mut;
        rmpp_mut;
    }

    /// Sets the OUI.
    ///
    /// # Errors
    /// [`Error::FieldOverflow`] if `oui` is wider than 24 bits.
    pub fn set_oui(&mut self, oui: u32) -> Result<(), Error> {
        super::field::check_fits("VendorHeader", "oui", u64::from(oui), 24)?;
        self.set_oui_bits(oui);
        Ok(())
    }

    /// Clears the reserved byte 36 ([`VendorMad::set_oui`] leaves it
    /// alone).
    pub fn clear_reserved(&mut self) {
        self.set_reserved(0);
    }

    /// The class data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        bytes::sub_mut(self.buf.as_mut(), VENDOR_DATA_OFFSET..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rmpp::{RmppType, RMPP_FLAG_ACTIVE};
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(VendorHeader);

    #[test]
    fn view_agrees_with_vendor_header() {
        let mut buf = [0u8; 256];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(23).wrapping_add(11);
        }
        let v = VendorMad::new_checked(&buf[..]).unwrap();
        let h = VendorHeader::parse(&buf[24..]).unwrap();
        assert_eq!(v.header().unwrap(), h);
        assert_eq!(v.oui(), h.oui);
        assert_eq!(v.oui(), u32::from_be_bytes([0, buf[37], buf[38], buf[39]]));
        assert_eq!(v.rmpp().header().unwrap(), h.rmpp);
        assert_eq!(h.reserved, buf[36]);
        assert_eq!(v.data(), &buf[40..]);
    }

    #[test]
    fn set_oui_writes_bytes_37_to_39_only() {
        let mut v = VendorMad::new_checked([0xAAu8; 256]).unwrap();
        v.set_oui(IB_OPENIB_OUI).unwrap();
        assert_eq!(v.oui(), 0x001405);
        assert_eq!(v.reserved(), 0xAA, "set_oui leaves byte 36 alone");
        v.clear_reserved();
        assert_eq!(v.reserved(), 0);
        v.mad_mut().set_mgmt_class(IB_VENDOR_OPENIB_PING_CLASS);
        assert!(v.is_vendor_range2());
        v.rmpp_mut().set_rmpp_type(RmppType::DATA);
        v.rmpp_mut().set_flags(RMPP_FLAG_ACTIVE);
        v.data_mut()[0] = 0x01;
        assert!(matches!(
            v.set_oui(0x0100_0000),
            Err(Error::FieldOverflow { bits: 24, .. })
        ));
        let b = v.into_inner();
        assert_eq!(&b[36..41], &[0x00, 0x00, 0x14, 0x05, 0x01]);
        assert_eq!(b[35], 0xAA);
        assert_eq!(b[41], 0xAA);
        let h = VendorHeader::parse(&b[24..]).unwrap();
        assert_eq!(h.oui, IB_OPENIB_OUI);
        assert_eq!(h.rmpp.rmpp_type, RmppType::DATA);
    }

    #[test]
    fn class_range_and_short_buffers() {
        let mut buf = [0u8; 40];
        buf[1] = 0x2F;
        assert!(!VendorMad::new_checked(&buf[..]).unwrap().is_vendor_range2());
        buf[1] = 0x4F;
        assert!(VendorMad::new_checked(&buf[..]).unwrap().is_vendor_range2());
        assert!(matches!(
            VendorMad::new_checked(&buf[..39]),
            Err(Error::Truncated {
                need: 40,
                got: 39,
                ..
            })
        ));
        let v = VendorMad::new_unchecked(&buf[..30]);
        assert_eq!(v.oui(), 0);
        assert!(v.data().is_empty());
        assert!(v.header().is_err());
    }
}
