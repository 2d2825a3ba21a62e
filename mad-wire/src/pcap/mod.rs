//! MAD captures as classic pcap files that Wireshark / tshark decode.
//!
//! # Format
//! [`PcapWriter`] writes a classic (libpcap 2.4) file, little-endian, with
//! nanosecond timestamps (magic `0xA1B23C4D`) and link type 197
//! ([`LinkType::Erf`]). Each record is an ERF record of ERF type 21
//! (INFINIBAND):
//!
//! ```text
//! offset len  ERF header (16 bytes)
//!      0   8  timestamp, little-endian 32.32 fixed point (seconds . fraction)
//!      8   1  type: 21 (bit 7, extension headers present, is 0)
//!      9   1  flags: bits 0-1 capture interface (0 sent, 1 received),
//!             bit 2 varying record length (set)
//!     10   2  rlen, big-endian: record length including this header
//!     12   2  lctr (loss counter), big-endian: 0
//!     14   2  wlen, big-endian: length of the IB packet on the wire
//!     16   n  the IB packet: LRH, BTH, DETH, MAD, ICRC, VCRC (see [`packet`])
//! ```
//!
//! Debian's tshark 4.0 does not read link type 247 (LINKTYPE_INFINIBAND),
//! but it decodes ERF type 21 down to the SMP and SA attributes, which is
//! what ibdump-style captures use. [`PcapReader`] reads both: ERF type 21
//! records and bare link type 247 packets (which the writer can also
//! produce, [`PcapWriter::with_link_type`]).
//!
//! # Errors, not panics
//! The reader is meant to be fed arbitrary bytes (it is fuzzed): a bad
//! magic, an unknown link type, a truncated record, an ERF record of
//! another type or an LRH/BTH that does not describe a UD datagram is a
//! [`PcapError`], never a panic. Records are bounded by
//! [`MAX_RECORD_LEN`], so a corrupt length cannot make it allocate much,
//! and a file by [`MAX_PCAP_LEN`] (or the limit given to
//! [`PcapReader::with_limit`]): an endless input (`/dev/zero`, a FIFO)
//! ends with [`PcapError::TooLarge`] instead of being read for ever.
//!
//! ```
//! use mad_wire::pcap::{Direction, PacketMeta, PcapReader, PcapWriter, Timestamp};
//! let mut mad = [0u8; 256];
//! mad[0] = 1;
//! mad[1] = 0x01; // LID-routed SMP
//! mad[2] = 1;
//! mad[3] = 0x01; // Get
//! let mut file = Vec::new();
//! let mut w = PcapWriter::new(&mut file).unwrap();
//! let meta = PacketMeta::for_mad(&mad, 1, 2, Direction::Sent);
//! w.write_mad(Timestamp::new(1_700_000_000, 5), &mad, &meta).unwrap();
//! drop(w);
//! let mut r = PcapReader::new(&file[..]).unwrap();
//! let rec = r.next_record().unwrap().unwrap();
//! assert_eq!(rec.meta, meta);
//! assert_eq!(rec.mad, mad);
//! assert!(rec.crc.all_valid());
//! assert!(r.next_record().unwrap().is_none());
//! ```

pub mod crc;
pub mod packet;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use reader::{PcapReader, PcapRecord};
pub use writer::PcapWriter;

pub use packet::{
    CrcCheck, CrcStatus, DecodedPacket, Direction, PacketMeta, DEFAULT_PKEY, GSI_QKEY,
};

/// pcap magic for microsecond timestamps (as written, native order).
pub const MAGIC_MICROS: u32 = 0xA1B2_C3D4;
/// pcap magic for nanosecond timestamps.
pub const MAGIC_NANOS: u32 = 0xA1B2_3C4D;
/// ERF record type of an InfiniBand packet.
pub const ERF_TYPE_INFINIBAND: u8 = 21;
/// Length of the ERF record header (without extension headers).
pub const ERF_HEADER_LEN: usize = 16;
/// Snapshot length written in the file header.
pub const SNAPLEN: u32 = 65_535;
/// Largest record the reader accepts (captured length).
pub const MAX_RECORD_LEN: usize = 65_535;
/// The most bytes [`PcapReader::new`] reads from one input (1 GiB, about
/// three million MAD records); [`PcapReader::with_limit`] sets another.
pub const MAX_PCAP_LEN: u64 = 1 << 30;

/// Link types of the files this module reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// LINKTYPE_ERF (197): an ERF record per packet.
    Erf,
    /// LINKTYPE_INFINIBAND (247): the bare IB packet, starting at the LRH.
    Infiniband,
}

impl LinkType {
    /// The number in the pcap file header.
    #[must_use]
    pub fn code(self) -> u32 {
        match self {
            Self::Erf => 197,
            Self::Infiniband => 247,
        }
    }

    /// The link type for a file-header number, if supported.
    #[must_use]
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            197 => Some(Self::Erf),
            247 => Some(Self::Infiniband),
            _ => None,
        }
    }
}

/// A capture timestamp: seconds and nanoseconds since the Unix epoch.
///
/// pcap and ERF both store 32-bit seconds, so times after 2106 do not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01 UTC.
    pub secs: u32,
    /// Nanoseconds, below 1 000 000 000 (checked by the writer).
    pub nanos: u32,
}

impl Timestamp {
    /// A timestamp from seconds and nanoseconds.
    #[must_use]
    pub const fn new(secs: u32, nanos: u32) -> Self {
        Self { secs, nanos }
    }

    /// As a duration since the epoch.
    #[must_use]
    pub fn to_duration(self) -> Duration {
        Duration::new(u64::from(self.secs), self.nanos)
    }

    /// The ERF 32.32 fixed-point form (rounded to the nearest 2^-32 s).
    pub(super) fn to_erf(self) -> u64 {
        let frac = ((u64::from(self.nanos) << 32) + 500_000_000) / 1_000_000_000;
        (u64::from(self.secs) << 32) + frac
    }

    /// From the ERF 32.32 fixed-point form (rounded to the nearest ns).
    pub(super) fn from_erf(ts: u64) -> Self {
        let secs = ts >> 32;
        let frac = ts & 0xFFFF_FFFF;
        let nanos = (frac * 1_000_000_000 + (1 << 31)) >> 32;
        if nanos >= 1_000_000_000 {
            Self {
                secs: (secs as u32).wrapping_add(1),
                nanos: 0,
            }
        } else {
            Self {
                secs: secs as u32,
                nanos: nanos as u32,
            }
        }
    }
}

impl From<(u32, u32)> for Timestamp {
    fn from((secs, nanos): (u32, u32)) -> Self {
        Self { secs, nanos }
    }
}

impl TryFrom<Duration> for Timestamp {
    type Error = PcapError;
    fn try_from(d: Duration) -> Result<Self, PcapError> {
        let secs = u32::try_from(d.as_secs())
            .map_err(|_| PcapError::Timestamp("seconds do not fit in 32 bits"))?;
        Ok(Self {
            secs,
            nanos: d.subsec_nanos(),
        })
    }
}

impl TryFrom<SystemTime> for Timestamp {
    type Error = PcapError;
    fn try_from(t: SystemTime) -> Result<Self, PcapError> {
        let d = t
            .duration_since(UNIX_EPOCH)
            .map_err(|_| PcapError::Timestamp("before the Unix epoch"))?;
        Self::try_from(d)
    }
}

/// Why a capture could not be written or read.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The underlying reader or writer failed.
    #[error("pcap I/O error: {0}")]
    Io(#[from] io::Error),
    /// The file does not start with a pcap magic number.
    #[error("not a pcap file: bad magic number {0:#010x}")]
    BadMagic(u32),
    /// A pcap version other than 2.x.
    #[error("unsupported pcap version {major}.{minor} (need 2.x)")]
    UnsupportedVersion {
        /// Major version.
        major: u16,
        /// Minor version.
        minor: u16,
    },
    /// A link type other than 197 (ERF) or 247 (INFINIBAND).
    #[error("unsupported pcap link type {0} (need 197 ERF or 247 INFINIBAND)")]
    UnsupportedLinkType(u32),
    /// The input ended inside a structure.
    #[error("{what}: truncated: {got} bytes, need {need}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        got: usize,
    },
    /// The input goes on past the reader's limit ([`MAX_PCAP_LEN`]): it
    /// ends the stream.
    #[error("the pcap input is longer than its limit of {}", crate::limits::describe_size(*limit))]
    TooLarge {
        /// The limit ([`MAX_PCAP_LEN`] or the one given to
        /// [`PcapReader::with_limit`]).
        limit: u64,
    },
    /// A record claims more captured bytes than [`MAX_RECORD_LEN`].
    #[error("pcap record claims {len} captured bytes, more than the limit {max}")]
    RecordTooLarge {
        /// Captured length from the record header.
        len: usize,
        /// The limit ([`MAX_RECORD_LEN`]).
        max: usize,
    },
    /// An ERF record of a type other than INFINIBAND (21).
    #[error("ERF record type {0} is not INFINIBAND (21)")]
    UnsupportedErfType(u8),
    /// An ERF header field is inconsistent.
    #[error("ERF header {field}: {reason} (value {value})")]
    BadErf {
        /// Field.
        field: &'static str,
        /// Offending value.
        value: u64,
        /// Why it is wrong.
        reason: &'static str,
    },
    /// An LRH / BTH / DETH field that does not describe a MAD datagram.
    #[error("{header} {field}: {reason} (value {value:#x})")]
    BadPacket {
        /// Header (`"LRH"`, `"BTH"`).
        header: &'static str,
        /// Field.
        field: &'static str,
        /// Offending value.
        value: u64,
        /// Why it is wrong.
        reason: &'static str,
    },
    /// A [`PacketMeta`] field too wide for its header field.
    #[error("PacketMeta.{field}: value {value:#x} does not fit in {bits} bits")]
    MetaOverflow {
        /// Field.
        field: &'static str,
        /// Offending value.
        value: u64,
        /// Width of the header field.
        bits: u32,
    },
    /// A payload too long for one IB packet.
    #[error("payload of {len} bytes exceeds the largest IB MTU ({max})")]
    PayloadLength {
        /// Payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A timestamp pcap cannot store.
    #[error("timestamp out of range: {0}")]
    Timestamp(&'static str),
}
