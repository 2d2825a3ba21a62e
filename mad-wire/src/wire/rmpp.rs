//! The RMPP header (RMPP.md §1–§2): 12 bytes at MAD offset 24 in every MAD
//! of an RMPP-capable class (SA, DevMgt, DevAdm, BIS, vendor range 2).
//!
//! - [`RmppHeader`] is the lossless `Repr` of those 12 bytes (offsets in it
//!   are relative to MAD byte 24).
//! - [`RmppView`] is a zero-copy view over a whole MAD buffer that reads and
//!   writes the header in place.
//! - [`RmppType`] and [`RmppStatus`] are wire enums; the `RMPP_FLAG_*`
//!   constants are the bits of the 3-bit flags field.
//!
//! Data1 and Data2 mean different things per type: DATA carries
//! SegmentNumber / PayloadLength, ACK carries SegmentNumber / NewWindowLast,
//! STOP and ABORT carry nothing (the kernel writes 0). The `Repr` keeps them
//! as `data1` / `data2`; the view has named aliases.

use core::time::Duration;

use super::bytes::{self, view_methods};
use super::{Error, Mad, MAD_HEADER_LEN, RMPP_HEADER_END};

/// RMPPVersion used by every implementation (`IB_MGMT_RMPP_VERSION`).
pub const RMPP_VERSION: u8 = 1;

/// Flags bit: the MAD is part of an RMPP transfer. With this bit clear the
/// MAD is an ordinary single MAD and the rest of the header is ignored.
pub const RMPP_FLAG_ACTIVE: u8 = 0x01;
/// Flags bit: first segment (DATA only).
pub const RMPP_FLAG_FIRST: u8 = 0x02;
/// Flags bit: last segment (DATA only).
pub const RMPP_FLAG_LAST: u8 = 0x04;

/// RRespTime value meaning "no response time given"
/// (`IB_MGMT_RMPP_NO_RESPTIME`).
pub const RMPP_NO_RESP_TIME: u8 = 0x1F;

/// Lowest status of the ABORT range (`IB_MGMT_RMPP_STATUS_ABORT_MIN`).
pub const RMPP_STATUS_ABORT_MIN: u8 = 118;
/// Highest status of the ABORT range (`IB_MGMT_RMPP_STATUS_ABORT_MAX`).
pub const RMPP_STATUS_ABORT_MAX: u8 = 127;

/// Bytes of the RMPP header.
pub const RMPP_HEADER_LEN: usize = RMPP_HEADER_END - MAD_HEADER_LEN;

crate::wire_enum! {
    /// RMPPType (MAD byte 25).
    pub struct RmppType(u8) {
        /// A data segment.
        DATA = 1 => "DATA",
        /// An acknowledgement (SegmentNumber, NewWindowLast).
        ACK = 2 => "ACK",
        /// Receiver cannot take more (status RESX).
        STOP = 3 => "STOP",
        /// Either side kills the transfer (status 118–127).
        ABORT = 4 => "ABORT",
    }
}

crate::wire_enum! {
    /// RMPPStatus (MAD byte 27), RMPP.md §2.
    pub struct RmppStatus(u8) {
        /// Normal (DATA, ACK).
        SUCCESS = 0 => "SUCCESS",
        /// Resources exhausted; the only valid status of STOP.
        RESX = 1 => "RESX",
        /// Total transfer time too long.
        T2L = 118 => "T2L",
        /// Inconsistent Last flag and PayloadLength.
        BAD_LEN = 119 => "BAD_LEN",
        /// Inconsistent First flag and SegmentNumber.
        BAD_SEG = 120 => "BAD_SEG",
        /// Illegal RMPPType.
        BADT = 121 => "BADT",
        /// NewWindowLast too small.
        W2S = 122 => "W2S",
        /// SegmentNumber too big.
        S2B = 123 => "S2B",
        /// Illegal status value.
        BAD_STATUS = 124 => "BAD_STATUS",
        /// Unsupported RMPP version.
        UNV = 125 => "UNV",
        /// Too many retries.
        TMR = 126 => "TMR",
        /// Unspecified.
        UNSPEC = 127 => "UNSPEC",
    }
}

impl RmppStatus {
    /// True for 118..=127, the statuses an ABORT may carry. An ABORT with
    /// any other status is itself answered with ABORT(BAD_STATUS).
    #[must_use]
    pub fn is_abort(self) -> bool {
        (RMPP_STATUS_ABORT_MIN..=RMPP_STATUS_ABORT_MAX).contains(&self.0)
    }

    /// Whether this status is legal in a header of type `t`: ACK needs
    /// SUCCESS, STOP needs RESX, ABORT needs the ABORT range (the three
    /// checks the kernel makes in `mad_rmpp.c`); DATA needs SUCCESS (IBA;
    /// the kernel does not check it). Unknown types accept nothing.
    #[must_use]
    pub fn is_valid_for(self, t: RmppType) -> bool {
        match t {
            RmppType::DATA | RmppType::ACK => self == Self::SUCCESS,
            RmppType::STOP => self == Self::RESX,
            RmppType::ABORT => self.is_abort(),
            _ => false,
        }
    }
}

/// Converts an RRespTime (or any IBA 5-bit time exponent) to a duration:
/// 4.096 µs × 2^value. Returns `None` for [`RMPP_NO_RESP_TIME`] (0x1F) and
/// for values wider than 5 bits.
#[must_use]
pub fn resp_time_to_duration(value: u8) -> Option<Duration> {
    if value >= RMPP_NO_RESP_TIME {
        return None;
    }
    Some(Duration::from_nanos(4096u64 << value))
}

/// The smallest RRespTime value whose duration is at least `d`, or `None`
/// if `d` exceeds the largest encodable time (value 30, about 73 minutes).
#[must_use]
pub fn resp_time_from_duration(d: Duration) -> Option<u8> {
    (0..RMPP_NO_RESP_TIME).find(|v| resp_time_to_duration(*v).is_some_and(|t| t >= d))
}

crate::wire_struct! {
    /// The RMPP header, MAD bytes 24–35 (bit offsets here are relative to
    /// byte 24). Labels are libibmad's.
    pub struct RmppHeader ("RmppHeader", 12) view RmppView at MAD_HEADER_LEN {
        /// RMPPVersion (1).
        version: uint u8 [0, 8] => "RmppVers" view pub version / pub set_version,
        /// RMPPType.
        rmpp_type: uint RmppType [8, 8] => "RmppType" view pub rmpp_type / pub set_rmpp_type,
        /// RRespTime: 5-bit time exponent, 0x1F = none given.
        resp_time: uint u8 [16, 5] => "RmppResp" view pub resp_time / pub set_resp_time,
        /// RMPPFlags: `RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST`.
        flags: uint u8 [21, 3] => "RmppFlags" view pub flags / pub set_flags,
        /// RMPPStatus.
        status: uint RmppStatus [24, 8] => "RmppStatus" view pub status / pub set_status,
        /// Data1: SegmentNumber for DATA and ACK, 0 otherwise.
        data1: uint u32 [32, 32] => "RmppSegNum" view pub data1 / pub set_data1,
        /// Data2: PayloadLength for DATA, NewWindowLast for ACK, 0 otherwise.
        data2: uint u32 [64, 32] => "RmppPayload" view pub data2 / pub set_data2,
    }
}

impl RmppHeader {
    /// Active flag set.
    #[must_use]
    #[inline]
    pub fn is_active(&self) -> bool {
        self.flags & RMPP_FLAG_ACTIVE != 0
    }
    /// First flag set.
    #[must_use]
    #[inline]
    pub fn is_first(&self) -> bool {
        self.flags & RMPP_FLAG_FIRST != 0
    }
    /// Last flag set.
    #[must_use]
    #[inline]
    pub fn is_last(&self) -> bool {
        self.flags & RMPP_FLAG_LAST != 0
    }
    /// RRespTime as a duration; `None` for 0x1F ("none given").
    #[must_use]
    pub fn resp_time_duration(&self) -> Option<Duration> {
        resp_time_to_duration(self.resp_time)
    }
    /// The libibmad label for Data1 under this type: `RmppSegNum` for DATA
    /// and ACK, `RmppData1` otherwise.
    #[must_use]
    pub fn data1_label(&self) -> &'static str {
        match self.rmpp_type {
            RmppType::DATA | RmppType::ACK => "RmppSegNum",
            _ => "RmppData1",
        }
    }
    /// The libibmad label for Data2 under this type: `RmppPayload` for
    /// DATA, `RmppNewWin` for ACK, `RmppData2` otherwise.
    #[must_use]
    pub fn data2_label(&self) -> &'static str {
        match self.rmpp_type {
            RmppType::DATA => "RmppPayload",
            RmppType::ACK => "RmppNewWin",
            _ => "RmppData2",
        }
    }
    /// Whether `status` is legal for `rmpp_type` (see
    /// [`RmppStatus::is_valid_for`]).
    #[must_use]
    pub fn status_is_valid(&self) -> bool {
        self.status.is_valid_for(self.rmpp_type)
    }
}

/// A zero-copy view of the RMPP header of a MAD buffer (at least 36 bytes).
///
/// The buffer is the whole MAD (or a reassembled RMPP message); offsets are
/// MAD offsets. After [`RmppView::new_checked`] no accessor can panic.
#[derive(Debug, Clone, Copy)]
pub struct RmppView<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> RmppView<T> {
    view_methods! {
        /// Wraps `buf` without checking its length; missing bytes read as zero
        /// and writes to them are dropped. Prefer [`RmppView::new_checked`].
        new_unchecked;
        /// Wraps `buf`, checking that it reaches the end of the RMPP header.
        ///
        /// # Errors
        /// [`Error::Truncated`] if `buf` is shorter than 36 bytes.
        new_checked(RMPP_HEADER_END, "RmppHeader");
        into_inner;
        as_bytes;
        mad;
    }

    /// Active flag.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.flags() & RMPP_FLAG_ACTIVE != 0
    }
    /// First flag.
    #[inline]
    pub fn is_first(&self) -> bool {
        self.flags() & RMPP_FLAG_FIRST != 0
    }
    /// Last flag.
    #[inline]
    pub fn is_last(&self) -> bool {
        self.flags() & RMPP_FLAG_LAST != 0
    }
    /// SegmentNumber (Data1 of DATA and ACK).
    #[inline]
    pub fn seg_num(&self) -> u32 {
        self.data1()
    }
    /// PayloadLength (Data2 of DATA).
    #[inline]
    pub fn payload_len(&self) -> u32 {
        self.data2()
    }
    /// NewWindowLast (Data2 of ACK).
    #[inline]
    pub fn new_window_last(&self) -> u32 {
        self.data2()
    }
    /// The bytes of a MAD of `len` bytes this segment uses: for an
    /// active Last DATA segment its RMPP header and PayloadLength (in a
    /// Last segment, the bytes after the RMPP header that carry data), at
    /// most `len`; else `len`. What a kernel hands a receiver as the
    /// segment's length, and what a transport without a kernel (ibsim,
    /// where libumad2sim's clients read the datagram's length) must send.
    #[must_use]
    pub fn used_len(&self, len: usize) -> usize {
        if self.is_active() && self.rmpp_type() == RmppType::DATA && self.is_last() {
            RMPP_HEADER_END
                .saturating_add(self.payload_len() as usize)
                .clamp(RMPP_HEADER_END, len.max(RMPP_HEADER_END))
                .min(len)
        } else {
            len
        }
    }
    /// Everything after the RMPP header (class header included).
    pub fn payload(&self) -> &[u8] {
        bytes::sub(self.as_bytes(), RMPP_HEADER_END..)
    }
    /// The header as a `Repr`.
    ///
    /// # Errors
    /// Only if the view was built unchecked over a short buffer.
    pub fn header(&self) -> Result<RmppHeader, Error> {
        <RmppHeader as super::Repr>::parse(bytes::sub(self.as_bytes(), MAD_HEADER_LEN..))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RmppView<T> {
    /// Sets or clears the Active flag.
    pub fn set_active(&mut self, on: bool) {
        self.set_flag(RMPP_FLAG_ACTIVE, on);
    }
    /// Sets or clears the First flag.
    pub fn set_first(&mut self, on: bool) {
        self.set_flag(RMPP_FLAG_FIRST, on);
    }
    /// Sets or clears the Last flag.
    pub fn set_last(&mut self, on: bool) {
        self.set_flag(RMPP_FLAG_LAST, on);
    }
    fn set_flag(&mut self, bit: u8, on: bool) {
        let f = if on {
            self.flags() | bit
        } else {
            self.flags() & !bit
        };
        self.set_flags(f);
    }
    /// Sets SegmentNumber (Data1).
    pub fn set_seg_num(&mut self, v: u32) {
        self.set_data1(v);
    }
    /// Sets PayloadLength (Data2).
    pub fn set_payload_len(&mut self, v: u32) {
        self.set_data2(v);
    }
    /// Sets NewWindowLast (Data2).
    pub fn set_new_window_last(&mut self, v: u32) {
        self.set_data2(v);
    }
    /// Everything after the RMPP header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        bytes::sub_mut(self.buf.as_mut(), RMPP_HEADER_END..)
    }
    /// Writes a whole header.
    ///
    /// # Errors
    /// [`Error::FieldOverflow`] if a field of `h` is wider than its range;
    /// [`Error::Truncated`] only for an unchecked short view.
    pub fn set_header(&mut self, h: &RmppHeader) -> Result<(), Error> {
        <RmppHeader as super::Repr>::emit(h, bytes::sub_mut(self.buf.as_mut(), MAD_HEADER_LEN..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(RmppHeader);

    #[test]
    fn view_and_repr_agree_on_every_field() {
        let mut buf = [0u8; 256];
        for (i, b) in buf.iter_mut().enumerate().skip(24).take(12) {
            *b = (i as u8).wrapping_mul(29).wrapping_add(3);
        }
        let v = RmppView::new_checked(&buf[..]).unwrap();
        let h = RmppHeader::parse(&buf[24..]).unwrap();
        assert_eq!(v.version(), h.version);
        assert_eq!(v.rmpp_type(), h.rmpp_type);
        assert_eq!(v.resp_time(), h.resp_time);
        assert_eq!(v.flags(), h.flags);
        assert_eq!(v.status(), h.status);
        assert_eq!(v.data1(), h.data1);
        assert_eq!(v.data2(), h.data2);
        assert_eq!(v.header().unwrap(), h);
        assert_eq!(v.is_active(), h.is_active());
        assert_eq!(v.is_first(), h.is_first());
        assert_eq!(v.is_last(), h.is_last());
    }

    #[test]
    fn byte_26_packs_resp_time_over_flags_like_libibmad() {
        // RmppResp is mask 0xF8 of byte 26, RmppFlags mask 0x07.
        let mut buf = [0u8; 36];
        buf[26] = (0x1F << 3) | 0x05;
        let h = RmppHeader::parse(&buf[24..]).unwrap();
        assert_eq!(h.resp_time, RMPP_NO_RESP_TIME);
        assert_eq!(h.flags, RMPP_FLAG_ACTIVE | RMPP_FLAG_LAST);
        assert!(h.is_active() && h.is_last() && !h.is_first());
        assert_eq!(h.resp_time_duration(), None);
    }

    #[test]
    fn setters_write_what_getters_read_and_leave_neighbours_alone() {
        let mut v = RmppView::new_checked([0u8; 256]).unwrap();
        v.set_version(RMPP_VERSION);
        v.set_rmpp_type(RmppType::ACK);
        v.set_resp_time(0x12);
        v.set_active(true);
        v.set_last(true);
        v.set_status(RmppStatus::SUCCESS);
        v.set_seg_num(7);
        v.set_new_window_last(70);
        assert_eq!(v.resp_time(), 0x12, "flag setters must not touch RRespTime");
        assert_eq!(v.flags(), RMPP_FLAG_ACTIVE | RMPP_FLAG_LAST);
        v.set_last(false);
        v.set_first(true);
        assert_eq!(v.flags(), RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST);
        v.set_resp_time(0xFF);
        assert_eq!(v.resp_time(), 0x1F);
        assert_eq!(
            v.flags(),
            RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST,
            "RRespTime setter kept flags"
        );
        assert_eq!(v.seg_num(), 7);
        assert_eq!(v.new_window_last(), 70);
        let bytes = v.into_inner();
        assert_eq!(&bytes[24..36], &[1, 2, 0xFB, 0, 0, 0, 0, 7, 0, 0, 0, 70]);
        assert!(bytes[..24].iter().chain(&bytes[36..]).all(|b| *b == 0));
    }

    #[test]
    fn set_header_emits_the_repr_in_place() {
        let h = RmppHeader {
            version: 1,
            rmpp_type: RmppType::DATA,
            resp_time: RMPP_NO_RESP_TIME,
            flags: RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST,
            status: RmppStatus::SUCCESS,
            data1: 1,
            data2: 440,
        };
        let mut v = RmppView::new_checked(vec![0u8; 256]).unwrap();
        v.set_header(&h).unwrap();
        assert_eq!(v.header().unwrap(), h);
        assert_eq!(v.payload_len(), 440);
        let bad = RmppHeader { flags: 8, ..h };
        assert!(matches!(
            v.set_header(&bad),
            Err(Error::FieldOverflow { .. })
        ));
    }

    #[test]
    fn short_buffers_are_refused_by_the_view() {
        assert!(matches!(
            RmppView::new_checked(&[0u8; 35][..]),
            Err(Error::Truncated {
                need: 36,
                got: 35,
                ..
            })
        ));
        // An unchecked short view reads zeros and never panics.
        let v = RmppView::new_unchecked(&[0xFFu8; 26][..]);
        assert_eq!(v.status(), RmppStatus(0));
        assert_eq!(v.data2(), 0);
        assert!(v.payload().is_empty());
        assert!(v.header().is_err());
    }

    #[test]
    fn abort_range_is_118_to_127() {
        assert!(!RmppStatus(117).is_abort());
        assert!(RmppStatus::T2L.is_abort());
        assert!(RmppStatus::UNSPEC.is_abort());
        assert!(!RmppStatus(128).is_abort());
        assert!(!RmppStatus::RESX.is_abort());
        assert_eq!(RmppStatus::W2S.name(), Some("W2S"));
        assert_eq!(RmppStatus(122), RmppStatus::W2S);
        assert_eq!(RmppStatus(124), RmppStatus::BAD_STATUS);
    }

    #[test]
    fn status_validity_follows_the_type() {
        assert!(RmppStatus::RESX.is_valid_for(RmppType::STOP));
        assert!(!RmppStatus::SUCCESS.is_valid_for(RmppType::STOP));
        assert!(!RmppStatus::RESX.is_valid_for(RmppType::ABORT));
        assert!(RmppStatus::TMR.is_valid_for(RmppType::ABORT));
        assert!(RmppStatus::SUCCESS.is_valid_for(RmppType::ACK));
        assert!(!RmppStatus::S2B.is_valid_for(RmppType::ACK));
        assert!(!RmppStatus::SUCCESS.is_valid_for(RmppType(9)));
        let h = RmppHeader {
            rmpp_type: RmppType::STOP,
            status: RmppStatus::RESX,
            ..Default::default()
        };
        assert!(h.status_is_valid());
    }

    #[test]
    fn resp_time_is_4_096_us_times_two_to_the_value() {
        assert_eq!(resp_time_to_duration(0), Some(Duration::from_nanos(4096)));
        assert_eq!(
            resp_time_to_duration(18),
            Some(Duration::from_nanos(4096 << 18))
        );
        assert_eq!(resp_time_to_duration(0x1F), None);
        assert_eq!(resp_time_to_duration(0x20), None);
        assert_eq!(resp_time_from_duration(Duration::from_secs(1)), Some(18));
        assert_eq!(resp_time_from_duration(Duration::ZERO), Some(0));
        assert_eq!(resp_time_from_duration(Duration::from_secs(5000)), None);
    }

    #[test]
    fn data_labels_follow_the_type() {
        let mut h = RmppHeader {
            rmpp_type: RmppType::ACK,
            ..Default::default()
        };
        assert_eq!(
            (h.data1_label(), h.data2_label()),
            ("RmppSegNum", "RmppNewWin")
        );
        h.rmpp_type = RmppType::DATA;
        assert_eq!(h.data2_label(), "RmppPayload");
        h.rmpp_type = RmppType::ABORT;
        assert_eq!(
            (h.data1_label(), h.data2_label()),
            ("RmppData1", "RmppData2")
        );
    }
}

#[cfg(test)]
mod used_len_tests {
    use super::*;

    fn segment(flags: u8, t: RmppType, paylen: u32) -> [u8; 256] {
        let mut m = [0u8; 256];
        m[1] = 0x03;
        let mut v = RmppView::new_unchecked(&mut m[..]);
        v.set_version(RMPP_VERSION);
        v.set_rmpp_type(t);
        v.set_flags(flags);
        v.set_seg_num(1);
        v.set_payload_len(paylen);
        m
    }

    #[test]
    fn a_last_data_segment_uses_its_rmpp_header_and_payload_length_and_nothing_else_is_cut() {
        let all = RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST;
        let m = segment(all, RmppType::DATA, 20 + 64);
        assert_eq!(RmppView::new_unchecked(&m[..]).used_len(256), 36 + 20 + 64);
        // A claim past the MAD, or under the header: clamped.
        let m = segment(all, RmppType::DATA, 5000);
        assert_eq!(RmppView::new_unchecked(&m[..]).used_len(256), 256);
        let m = segment(all, RmppType::DATA, 0);
        assert_eq!(RmppView::new_unchecked(&m[..]).used_len(256), 36);
        assert_eq!(RmppView::new_unchecked(&m[..]).used_len(30), 30);
        // Not Last, not DATA, not active: the whole length.
        for (flags, t) in [
            (RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST, RmppType::DATA),
            (all, RmppType::ACK),
            (RMPP_FLAG_FIRST | RMPP_FLAG_LAST, RmppType::DATA),
        ] {
            let m = segment(flags, t, 20);
            assert_eq!(
                RmppView::new_unchecked(&m[..]).used_len(256),
                256,
                "{flags:#x} {t:?}"
            );
        }
    }
}
