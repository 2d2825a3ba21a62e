//! SA MADs (class 0x03, MAD.md §7): the 20-byte SA header at bytes 36–55
//! ([`SaHeader`]), a zero-copy view of a whole SA MAD ([`SaMad`]) and the
//! split of SA data into records by AttributeOffset ([`split_records`]).
//!
//! # Records
//! AttributeOffset is the distance between consecutive records in units of
//! 8 bytes. How [`SaMad::records`] reads the data:
//! - **Table responses** (response bit set and method GetTable,
//!   GetTraceTable or GetMulti): the data is split into
//!   `len / (AttributeOffset × 8)` records; a trailing remainder shorter
//!   than one record is padding and is ignored. AttributeOffset 0 means
//!   "no records" (OpenSM sends it with an empty GetTable result).
//! - **Everything else** (Get/Set/Delete requests and their GetResp, a
//!   GetTable request's template, ...): exactly one record. With
//!   AttributeOffset 0 it is the whole data area (the caller parses the
//!   record type's prefix of it); with AttributeOffset > 0 it is the first
//!   `AttributeOffset × 8` bytes.
//! - An offset whose stride is larger than the data while there is data
//!   is [`Error::Invalid`] naming `attr_offset`; nothing panics and every
//!   iteration ends.
//!
//! The data length used is the buffer's length minus 56, except for a
//! 256-byte, single-segment RMPP-active MAD (Active, First and Last all
//! set), where the RMPP PayloadLength says how much of the MAD is used
//! (PayloadLength − 20 bytes of data). A reassembled multi-segment message
//! should be passed with its exact length (the length the kernel's umad
//! reports), or its data split with [`split_records`].

use super::bytes::{self, view_methods};
use super::rmpp::{RmppView, RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST};
use super::{Error, Mad, Method, MAD_LEN, RMPP_HEADER_END, SA_DATA_OFFSET};

/// Offset of the SA header in the MAD.
pub const SA_HEADER_OFFSET: usize = RMPP_HEADER_END;
/// Length of the SA header.
pub const SA_HEADER_LEN: usize = SA_DATA_OFFSET - RMPP_HEADER_END;
/// SA class version.
pub const SA_CLASS_VERSION: u8 = 2;

crate::wire_struct! {
    /// The SA header, MAD bytes 36–55 (bit offsets relative to byte 36).
    /// Labels are libibmad's.
    pub struct SaHeader ("SaHeader", 20) view SaMad at SA_HEADER_OFFSET {
        /// SM_Key (0 for ordinary clients and in every response).
        sm_key: uint u64 [0, 64] => "SaSMkey" view pub sm_key / pub set_sm_key,
        /// AttributeOffset, in units of 8 bytes.
        attr_offset: uint u16 [64, 16] => "SaAttrOffs" view pub attr_offset / pub set_attr_offset,
        /// Reserved.
        reserved: uint u16 [80, 16] => _,
        /// ComponentMask: bit n = component n of the record is significant.
        comp_mask: uint u64 [96, 64] => "SaCompMask" view pub comp_mask / pub set_comp_mask,
    }
}

impl SaHeader {
    /// Record stride in bytes (`attr_offset × 8`).
    #[must_use]
    pub fn record_stride(&self) -> usize {
        usize::from(self.attr_offset) * 8
    }
}

/// The ComponentMask bit of component `n` (`IB_SA_COMP_MASK(n)`); 0 for
/// `n >= 64`.
#[must_use]
pub fn comp_mask_bit(n: u32) -> u64 {
    1u64.checked_shl(n).unwrap_or(0)
}

/// AttributeOffset for a record of `size` bytes: the size rounded up to a
/// multiple of 8, in units of 8 (OpenSM's `ib_get_attr_offset`).
///
/// # Errors
/// [`Error::Invalid`] if the result does not fit in 16 bits.
pub fn attr_offset_for(size: usize) -> Result<u16, Error> {
    let units = size.div_ceil(8);
    u16::try_from(units).map_err(|_| Error::Invalid {
        what: "SaHeader",
        field: "attr_offset",
        value: units as u64,
        reason: "record size too large for AttributeOffset",
    })
}

/// An iterator over the records of SA data (see the module docs).
#[derive(Debug, Clone)]
pub struct SaRecords<'a> {
    inner: core::slice::ChunksExact<'a, u8>,
}

impl<'a> SaRecords<'a> {
    fn new(data: &'a [u8], stride: usize) -> Self {
        // `stride` is never 0 here; 1 over an empty slice yields nothing.
        Self {
            inner: data.chunks_exact(stride.max(1)),
        }
    }
    fn empty() -> Self {
        Self::new(&[], 1)
    }
}

impl<'a> Iterator for SaRecords<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        self.inner.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl ExactSizeIterator for SaRecords<'_> {}

/// Splits table data (for instance the data of a reassembled GetTable
/// response) into records of `attr_offset × 8` bytes. A trailing remainder
/// shorter than one record is ignored (padding). AttributeOffset 0 yields
/// no records.
///
/// # Errors
/// [`Error::Invalid`] naming `attr_offset` when `data` is not empty but
/// shorter than one record.
pub fn split_records(data: &[u8], attr_offset: u16) -> Result<SaRecords<'_>, Error> {
    let stride = usize::from(attr_offset) * 8;
    if stride == 0 {
        return Ok(SaRecords::empty());
    }
    if !data.is_empty() && stride > data.len() {
        return Err(stride_error(attr_offset));
    }
    Ok(SaRecords::new(data, stride))
}

fn stride_error(attr_offset: u16) -> Error {
    Error::Invalid {
        what: "SaHeader",
        field: "attr_offset",
        value: u64::from(attr_offset),
        reason: "record stride is larger than the SA data",
    }
}

/// A zero-copy view of an SA MAD (at least 56 bytes: common header, RMPP
/// header and SA header). The buffer may be longer than 256 bytes (a
/// reassembled RMPP message). After [`SaMad::new_checked`] no accessor can
/// panic.
#[derive(Debug, Clone, Copy)]
pub struct SaMad<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> SaMad<T> {
    view_methods! {
        /// Wraps `buf` without checking its length; missing bytes read as zero.
        /// Prefer [`SaMad::new_checked`].
        new_unchecked;
        /// Wraps `buf`, checking that it holds the SA header.
        ///
        /// # Errors
        /// [`Error::Truncated`] if `buf` is shorter than 56 bytes.
        new_checked(SA_DATA_OFFSET, "SaMad");
        into_inner;
        as_bytes;
        mad;
        rmpp;
    }

    /// The SA header as a `Repr`.
    ///
    /// # Errors
    /// Only if the view was built unchecked over a short buffer.
    pub fn header(&self) -> Result<SaHeader, Error> {
        <SaHeader as super::Repr>::parse(bytes::sub(self.as_bytes(), SA_HEADER_OFFSET..))
    }
    /// The SA data: everything from byte 56.
    pub fn data(&self) -> &[u8] {
        bytes::sub(self.as_bytes(), SA_DATA_OFFSET..)
    }

    /// True for a response whose data is a table of records: response bit
    /// set and method GetTable, GetTraceTable or GetMulti.
    pub fn is_table_response(&self) -> bool {
        let m = self.mad();
        m.response_bit()
            && matches!(
                m.method(),
                Method::GET_TABLE | Method::GET_TRACE_TABLE | Method::GET_MULTI
            )
    }

    /// The part of [`SaMad::data`] that carries records (see the module
    /// docs: trimmed by PayloadLength in a single-segment RMPP MAD).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming `PayloadLength` when a single-segment
    /// RMPP MAD's PayloadLength is not between 20 and 220.
    pub fn used_data(&self) -> Result<&[u8], Error> {
        let data = self.data();
        let r = self.rmpp();
        let single = RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST;
        if self.as_bytes().len() == MAD_LEN && r.flags() == single {
            let pl = r.payload_len();
            let max = (MAD_LEN - RMPP_HEADER_END) as u32;
            if !(SA_HEADER_LEN as u32..=max).contains(&pl) {
                return Err(Error::Invalid {
                    what: "SaMad",
                    field: "PayloadLength",
                    value: u64::from(pl),
                    reason: "single-segment PayloadLength must be 20..=220",
                });
            }
            let used = pl as usize - SA_HEADER_LEN;
            return Ok(data.get(..used).unwrap_or(data));
        }
        Ok(data)
    }

    /// The records of this MAD (see the module docs for the rules).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming `attr_offset` when the record stride is
    /// larger than the data, or naming `PayloadLength` as
    /// [`SaMad::used_data`] does.
    pub fn records(&self) -> Result<SaRecords<'_>, Error> {
        let data = self.used_data()?;
        let off = self.attr_offset();
        if self.is_table_response() {
            return split_records(data, off);
        }
        if data.is_empty() {
            return Ok(SaRecords::empty());
        }
        if off == 0 {
            return Ok(SaRecords::new(data, data.len()));
        }
        let stride = usize::from(off) * 8;
        match data.get(..stride) {
            Some(one) => Ok(SaRecords::new(one, stride)),
            None => Err(stride_error(off)),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SaMad<T> {
    view_methods! {
        mad_mut;
        rmpp_mut;
    }
    /// Writes a whole SA header.
    ///
    /// # Errors
    /// [`Error::Truncated`] only for an unchecked short view.
    pub fn set_header(&mut self, h: &SaHeader) -> Result<(), Error> {
        <SaHeader as super::Repr>::emit(h, bytes::sub_mut(self.buf.as_mut(), SA_HEADER_OFFSET..))
    }
    /// The SA data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        bytes::sub_mut(self.buf.as_mut(), SA_DATA_OFFSET..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(SaHeader);

    fn table_response(attr_offset: u16) -> SaMad<[u8; 256]> {
        let mut m = SaMad::new_checked([0u8; 256]).unwrap();
        m.mad_mut().set_method(Method::GET_TABLE, true);
        m.set_attr_offset(attr_offset);
        m
    }

    #[test]
    fn view_and_repr_agree_on_every_field() {
        let mut buf = [0u8; 256];
        for (i, b) in buf.iter_mut().enumerate().skip(36).take(20) {
            *b = (i as u8).wrapping_mul(41).wrapping_add(7);
        }
        let v = SaMad::new_checked(&buf[..]).unwrap();
        let h = SaHeader::parse(&buf[36..]).unwrap();
        assert_eq!(v.sm_key(), h.sm_key);
        assert_eq!(v.attr_offset(), h.attr_offset);
        assert_eq!(v.comp_mask(), h.comp_mask);
        assert_eq!(v.header().unwrap(), h);
        assert_eq!(v.data().len(), 200);
    }

    #[test]
    fn setters_write_big_endian_at_libibmad_offsets() {
        let mut v = SaMad::new_checked([0u8; 256]).unwrap();
        v.set_sm_key(0x0102_0304_0506_0708);
        v.set_attr_offset(0x0A0B);
        v.set_comp_mask(comp_mask_bit(0) | comp_mask_bit(63));
        v.data_mut()[0] = 0xEE;
        let b = v.into_inner();
        assert_eq!(&b[36..44], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[44..46], &[0x0A, 0x0B]);
        assert_eq!(&b[46..48], &[0, 0]);
        assert_eq!(&b[48..56], &[0x80, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(b[56], 0xEE);
        let mut v = SaMad::new_checked(b).unwrap();
        let h = SaHeader {
            attr_offset: 3,
            ..Default::default()
        };
        v.set_header(&h).unwrap();
        assert_eq!(v.header().unwrap(), h);
    }

    #[test]
    fn short_buffers_are_refused() {
        assert!(matches!(
            SaMad::new_checked(&[0u8; 55][..]),
            Err(Error::Truncated {
                need: 56,
                got: 55,
                ..
            })
        ));
        let v = SaMad::new_unchecked(&[0xFFu8; 40][..]);
        assert_eq!(v.comp_mask(), 0);
        assert!(v.data().is_empty());
        assert_eq!(v.records().unwrap().count(), 0);
    }

    #[test]
    fn attr_offset_rounds_record_size_up_to_8_bytes() {
        assert_eq!(attr_offset_for(64).unwrap(), 8);
        assert_eq!(attr_offset_for(108).unwrap(), 14); // NodeRecord
        assert_eq!(attr_offset_for(0).unwrap(), 0);
        assert!(attr_offset_for(8 * 70_000).is_err());
        assert_eq!(
            SaHeader {
                attr_offset: 14,
                ..Default::default()
            }
            .record_stride(),
            112
        );
    }

    #[test]
    fn table_response_splits_by_stride_and_ignores_padding() {
        let mut m = table_response(8); // 64-byte records
        for (i, b) in m.data_mut().iter_mut().enumerate() {
            *b = (i / 64) as u8 + 1;
        }
        let recs: Vec<&[u8]> = m.records().unwrap().collect();
        assert_eq!(
            recs.len(),
            3,
            "200 bytes hold three 64-byte records + 8 padding"
        );
        assert!(recs
            .iter()
            .enumerate()
            .all(|(i, r)| r.len() == 64 && r.iter().all(|b| *b == i as u8 + 1)));
    }

    #[test]
    fn table_response_with_offset_zero_has_no_records() {
        let m = table_response(0);
        assert_eq!(m.records().unwrap().len(), 0);
    }

    #[test]
    fn single_segment_rmpp_response_is_trimmed_by_payload_length() {
        let mut m = table_response(8);
        {
            let mut r = m.rmpp_mut();
            r.set_flags(RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST);
            r.set_payload_len(20 + 128); // SA header + two records
        }
        assert_eq!(m.used_data().unwrap().len(), 128);
        assert_eq!(m.records().unwrap().len(), 2);
        m.rmpp_mut().set_payload_len(20); // empty table
        assert_eq!(m.records().unwrap().len(), 0);
        m.rmpp_mut().set_payload_len(221);
        assert!(matches!(
            m.records(),
            Err(Error::Invalid {
                field: "PayloadLength",
                value: 221,
                ..
            })
        ));
        m.rmpp_mut().set_payload_len(19);
        assert!(matches!(
            m.records(),
            Err(Error::Invalid {
                field: "PayloadLength",
                ..
            })
        ));
    }

    #[test]
    fn reassembled_table_uses_the_whole_buffer() {
        // 56-byte header + 5 records of 112 bytes, as a reassembled message.
        let mut buf = vec![0u8; 56 + 5 * 112];
        buf[3] = 0x92; // GetTableResp
        buf[44..46].copy_from_slice(&14u16.to_be_bytes());
        let m = SaMad::new_checked(&buf[..]).unwrap();
        assert_eq!(m.records().unwrap().len(), 5);
        assert_eq!(split_records(m.data(), 14).unwrap().len(), 5);
    }

    #[test]
    fn non_table_method_is_one_record() {
        let mut m = SaMad::new_checked([0u8; 256]).unwrap();
        m.mad_mut().set_method(Method::GET, true);
        // Offset 0: the whole data area is the record.
        let recs: Vec<&[u8]> = m.records().unwrap().collect();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].len(), 200);
        // Offset 8 (64 bytes): still one record, of the stride's size.
        m.set_attr_offset(8);
        let recs: Vec<&[u8]> = m.records().unwrap().collect();
        assert_eq!((recs.len(), recs[0].len()), (1, 64));
        // A GetTable *request* carries one template record too.
        m.mad_mut().set_method(Method::GET_TABLE, false);
        assert_eq!(m.records().unwrap().len(), 1);
    }

    #[test]
    fn stride_larger_than_data_is_invalid_not_a_panic() {
        let m = table_response(26); // 208 > 200
        assert!(matches!(
            m.records(),
            Err(Error::Invalid {
                what: "SaHeader",
                field: "attr_offset",
                value: 26,
                ..
            })
        ));
        let mut m = SaMad::new_checked([0u8; 256]).unwrap();
        m.set_attr_offset(0xFFFF);
        assert!(matches!(
            m.records(),
            Err(Error::Invalid {
                field: "attr_offset",
                ..
            })
        ));
        assert!(split_records(&[0u8; 8], 2).is_err());
        assert_eq!(split_records(&[], 2).unwrap().len(), 0);
    }

    #[test]
    fn every_offset_over_every_length_terminates() {
        for len in [0usize, 1, 7, 8, 63, 64, 200, 1000] {
            let data = vec![0u8; len];
            for off in [0u16, 1, 2, 7, 8, 25, 26, 125, 0xFFFF] {
                if let Ok(r) = split_records(&data, off) {
                    let n = r.count();
                    assert!(n * usize::from(off) * 8 <= len);
                }
            }
        }
    }
}
