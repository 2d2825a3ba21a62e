//! PerfMgt MADs (class 0x04, MAD.md §8): the common header, 40 reserved
//! bytes (24–63) and 192 bytes of attribute data at 64. Attribute layouts
//! (PortCounters, ...) live in [`crate::wire::attr`].

use super::bytes::{self, view_methods};
use super::{Error, Mad, MAD_HEADER_LEN, MAD_LEN, SMP_DATA_OFFSET};

/// PerfMgt class version.
pub const PERF_CLASS_VERSION: u8 = 1;
/// Where PerfMgt attribute data starts (`IB_PC_DATA_OFFS`).
pub const PERF_DATA_OFFSET: usize = SMP_DATA_OFFSET;
/// Bytes of PerfMgt attribute data (`IB_PM_DATA_SIZE`).
pub const PERF_DATA_LEN: usize = MAD_LEN - PERF_DATA_OFFSET;
/// PortSelect value meaning "all ports" in PortCounters.
pub const PERF_PORT_SELECT_ALL: u8 = 0xFF;

/// A zero-copy view of a PerfMgt MAD. [`PerfMad::new_checked`] requires
/// the full 256 bytes; no accessor can panic.
#[derive(Debug, Clone, Copy)]
pub struct PerfMad<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> PerfMad<T> {
    view_methods! {
        /// Wraps `buf` without checking its length. Prefer
        /// [`PerfMad::new_checked`].
        new_unchecked;
        /// Wraps `buf`, checking that it is a whole MAD.
        ///
        /// # Errors
        /// [`Error::Truncated`] if `buf` is shorter than 256 bytes.
        new_checked(MAD_LEN, "PerfMad");
        into_inner;
        mad;
    }

    /// The 40 reserved bytes after the common header.
    pub fn reserved(&self) -> &[u8] {
        bytes::sub(self.buf.as_ref(), MAD_HEADER_LEN..PERF_DATA_OFFSET)
    }

    /// The 192 bytes of attribute data (empty only for an unchecked short
    /// view).
    pub fn data(&self) -> &[u8] {
        bytes::sub(self.buf.as_ref(), PERF_DATA_OFFSET..MAD_LEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PerfMad<T> {
    view_methods! {
        mad_mut;
    }

    /// The attribute data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        bytes::sub_mut(self.buf.as_mut(), PERF_DATA_OFFSET..MAD_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{AttributeId, MadHeader, Method, MgmtClass, Repr};

    #[test]
    fn view_agrees_with_mad_header_and_data_is_at_64() {
        let mut buf = [0u8; 256];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(17).wrapping_add(3);
        }
        let v = PerfMad::new_checked(&buf[..]).unwrap();
        let h = MadHeader::parse(&buf).unwrap();
        assert_eq!(v.mad().header().unwrap(), h);
        assert_eq!(v.reserved(), &buf[24..64]);
        assert_eq!(v.data(), &buf[64..]);
        assert_eq!(v.data().len(), PERF_DATA_LEN);
        assert_eq!(PERF_DATA_LEN, 192);
    }

    #[test]
    fn setters_write_header_and_data_in_place() {
        let mut v = PerfMad::new_checked([0u8; 256]).unwrap();
        v.mad_mut().set_mgmt_class(MgmtClass::PERF_MGT);
        v.mad_mut().set_method(Method::GET, false);
        v.mad_mut().set_attr_id(AttributeId::PM_PORT_COUNTERS);
        v.data_mut()[1] = PERF_PORT_SELECT_ALL;
        let b = v.into_inner();
        assert_eq!((b[1], b[3], b[16], b[17]), (0x04, 0x01, 0x00, 0x12));
        assert_eq!(b[65], 0xFF);
        assert!(b[24..64].iter().all(|x| *x == 0));
    }

    #[test]
    fn short_buffers_are_refused() {
        assert!(matches!(
            PerfMad::new_checked(&[0u8; 255][..]),
            Err(Error::Truncated {
                need: 256,
                got: 255,
                ..
            })
        ));
        let v = PerfMad::new_unchecked(&[0u8; 100][..]);
        assert!(v.data().is_empty());
    }
}
