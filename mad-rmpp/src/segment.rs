//! Segmentation arithmetic and the RMPP header fields this crate touches.
//!
//! A message is `hdr_len` bytes of class header (common MAD header, RMPP
//! header and the class's own header: 56 for SA, 40 for vendor range 2, 64
//! for DevMgt) followed by the class data. Each segment repeats the header
//! and carries `seg_size = 256 - hdr_len` data bytes (RMPP.md §1).

use crate::Error;

pub(crate) use mad_wire::wire::{MAD_LEN, RMPP_HEADER_END};

/// Bytes after the RMPP header in one segment (`IB_MGMT_RMPP_DATA`).
pub const RMPP_DATA: u32 = (MAD_LEN - RMPP_HEADER_END) as u32;

pub use mad_wire::wire::rmpp::{
    RmppHeader as Header, RmppStatus, RmppType, RMPP_FLAG_ACTIVE as FLAG_ACTIVE,
    RMPP_FLAG_FIRST as FLAG_FIRST, RMPP_FLAG_LAST as FLAG_LAST,
};
use mad_wire::wire::{Mad, Repr};

/// Reads the RMPP header (bytes 24..36) of `mad`.
///
/// # Errors
/// The MAD is shorter than 36 bytes.
pub fn read_header(mad: &[u8]) -> Result<Header, Error> {
    Header::parse(mad.get(24..).unwrap_or(&[])).map_err(|_| Error::Malformed {
        reason: "MAD too short for an RMPP header",
        value: mad.len() as u64,
    })
}

/// Writes `h` into bytes 24..36 of `mad` (nothing if `mad` is shorter).
pub fn write_header(h: &Header, mad: &mut [u8]) {
    if let Some(b) = mad.get_mut(24..) {
        // Every field of a header built here fits its bit range.
        let _ = h.emit(b);
    }
}

/// A header with Active set and the given fields.
#[must_use]
pub fn header(
    rtype: RmppType,
    resp_time: u8,
    flags: u8,
    status: RmppStatus,
    d1: u32,
    d2: u32,
) -> Header {
    Header {
        version: crate::RMPP_VERSION,
        rmpp_type: rtype,
        resp_time: resp_time & 0x1F,
        flags: flags & 7,
        status,
        data1: d1,
        data2: d2,
    }
}

/// Flips the response bit of the method byte (ACK / ABORT replies do so).
pub(crate) fn flip_response_bit(mad: &mut [u8]) {
    // A buffer shorter than the method byte is left alone (the view
    // drops the write).
    let mut m = Mad::new_unchecked(mad);
    let r = m.response_bit();
    m.set_response_bit(!r);
}

/// Segment geometry of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Class header length (bytes repeated in every segment).
    pub hdr_len: usize,
    /// Data bytes per segment.
    pub seg_size: usize,
    /// Number of segments (at least 1).
    pub count: u32,
    /// Unused bytes at the end of the last segment.
    pub pad: usize,
}

impl Geometry {
    /// Geometry for `data_len` data bytes behind a `hdr_len`-byte header.
    ///
    /// # Errors
    /// A header that leaves no room for data, or more than `u32::MAX`
    /// segments.
    pub fn new(hdr_len: usize, data_len: usize) -> Result<Self, Error> {
        if !(RMPP_HEADER_END..MAD_LEN).contains(&hdr_len) {
            return Err(Error::Malformed {
                reason: "class header length must be 36..255",
                value: hdr_len as u64,
            });
        }
        let seg_size = MAD_LEN - hdr_len;
        let count = data_len.div_ceil(seg_size).max(1);
        let count32 = u32::try_from(count).map_err(|_| Error::Malformed {
            reason: "message needs more than 2^32 segments",
            value: data_len as u64,
        })?;
        let pad = count * seg_size - data_len;
        Ok(Self {
            hdr_len,
            seg_size,
            count: count32,
            pad,
        })
    }

    /// PayloadLength of segment `n` (1-based) as the kernel sends it:
    /// first = `count*220 - pad`, last = `220 - pad`, others 0; a single
    /// segment uses the "last" value.
    #[must_use]
    pub fn payload_length(&self, n: u32) -> u32 {
        let pad = self.pad as u64;
        if n == self.count {
            (u64::from(RMPP_DATA) - pad) as u32
        } else if n == 1 {
            (u64::from(self.count) * u64::from(RMPP_DATA) - pad).min(u64::from(u32::MAX)) as u32
        } else {
            0
        }
    }
}

/// Length of a reassembled message (header once) from the number of
/// segments and the last segment's PayloadLength, or `None` when that
/// length is inconsistent with the header (BAD_LEN).
#[must_use]
pub fn message_len(hdr_len: usize, count: u32, last_payload_len: u32) -> Option<usize> {
    let seg_size = MAD_LEN.checked_sub(hdr_len)?;
    // Bytes after the RMPP header that belong to the class header.
    let class_hdr = hdr_len.checked_sub(RMPP_HEADER_END)?;
    let last = last_payload_len as usize;
    if last > RMPP_DATA as usize || last < class_hdr {
        return None;
    }
    let pad = RMPP_DATA as usize - last;
    (count as usize)
        .checked_mul(seg_size)?
        .checked_sub(pad)
        .and_then(|d| d.checked_add(hdr_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sa_geometry_matches_the_kernel_formula() {
        // 1 MiB of SA data: 200 data bytes per segment.
        let g = Geometry::new(56, 1 << 20).unwrap();
        assert_eq!(g.seg_size, 200);
        assert_eq!(g.count, 5243);
        assert_eq!(g.pad, 5243 * 200 - (1 << 20));
        assert_eq!(g.payload_length(1), 5243 * 220 - g.pad as u32);
        assert_eq!(g.payload_length(5243), 220 - g.pad as u32);
        assert_eq!(g.payload_length(2), 0);
        let len = message_len(56, g.count, g.payload_length(g.count)).unwrap();
        assert_eq!(len, 56 + (1 << 20));
    }

    #[test]
    fn empty_and_exact_messages_use_one_segment_or_exact_multiples() {
        let g = Geometry::new(56, 0).unwrap();
        assert_eq!((g.count, g.pad), (1, 200));
        assert_eq!(g.payload_length(1), 20);
        assert_eq!(message_len(56, 1, 20), Some(56));
        let g = Geometry::new(56, 400).unwrap();
        assert_eq!((g.count, g.pad), (2, 0));
        assert_eq!(g.payload_length(2), 220);
    }

    #[test]
    fn inconsistent_last_length_is_detected() {
        assert_eq!(message_len(56, 3, 221), None);
        assert_eq!(message_len(56, 3, 19), None, "shorter than the SA header");
        assert_eq!(message_len(40, 3, 4), Some(40 + 3 * 216 - 216));
    }

    #[test]
    fn header_read_write_round_trip() {
        let mut m = [0u8; 256];
        let h = header(
            RmppType::ACK,
            0x1F,
            FLAG_ACTIVE | FLAG_LAST,
            RmppStatus::SUCCESS,
            7,
            70,
        );
        write_header(&h, &mut m);
        assert_eq!(read_header(&m).unwrap(), h);
        assert!(read_header(&m[..30]).is_err());
    }
}
