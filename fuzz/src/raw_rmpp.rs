//! An RMPP header as the fuzz input gives it: every field raw, the
//! version and the type included, so that the peer can send any header.

use arbitrary::Arbitrary;
use mad_rmpp::segment::{header, write_header, FLAG_ACTIVE};
use mad_rmpp::{RmppStatus, RmppType};

/// Any RMPP header, field by field.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct RawRmppHeader {
    /// Version.
    pub version: u8,
    /// Type.
    pub rtype: u8,
    /// Flags.
    pub flags: u8,
    /// Status.
    pub status: u8,
    /// Data1.
    pub d1: u32,
    /// Data2.
    pub d2: u32,
}

impl RawRmppHeader {
    /// A version-1 active header of `rtype`.
    pub fn active(rtype: RmppType, status: u8, d1: u32, d2: u32) -> Self {
        Self {
            version: 1,
            rtype: rtype.0,
            flags: FLAG_ACTIVE,
            status,
            d1,
            d2,
        }
    }

    /// Whether it is an active ACK (any version, status or numbers).
    pub fn is_active_ack(&self) -> bool {
        self.flags & FLAG_ACTIVE != 0 && self.rtype == RmppType::ACK.0
    }

    /// Writes it into `mad`'s RMPP header (response time 0x1F).
    pub fn write(&self, mad: &mut [u8]) {
        let mut h = header(
            RmppType(self.rtype),
            0x1F,
            self.flags,
            RmppStatus(self.status),
            self.d1,
            self.d2,
        );
        h.version = self.version;
        write_header(&h, mad);
    }
}
