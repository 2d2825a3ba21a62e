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

use std::io::{self, Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    fn to_erf(self) -> u64 {
        let frac = ((u64::from(self.nanos) << 32) + 500_000_000) / 1_000_000_000;
        (u64::from(self.secs) << 32) + frac
    }

    /// From the ERF 32.32 fixed-point form (rounded to the nearest ns).
    fn from_erf(ts: u64) -> Self {
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

/// Writes MADs, wrapped in synthesized IB packets, as a pcap file.
///
/// The file header is written by [`PcapWriter::new`]; each
/// [`PcapWriter::write_mad`] writes one record. Call
/// [`PcapWriter::flush`] (or drop a `BufWriter`) to push data out.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    link: LinkType,
    buf: Vec<u8>,
}

impl<W: Write> PcapWriter<W> {
    /// Starts an ERF (link type 197) capture on `out`.
    ///
    /// # Errors
    /// I/O errors writing the file header.
    pub fn new(out: W) -> Result<Self, PcapError> {
        Self::with_link_type(out, LinkType::Erf)
    }

    /// Starts a capture of the given link type. [`LinkType::Infiniband`]
    /// files hold bare packets (no direction); tshark 4.0 cannot read them.
    ///
    /// # Errors
    /// I/O errors writing the file header.
    pub fn with_link_type(mut out: W, link: LinkType) -> Result<Self, PcapError> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone 0, sigfigs 0.
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&link.code().to_le_bytes());
        out.write_all(&h)?;
        Ok(Self {
            out,
            link,
            buf: Vec::with_capacity(ERF_HEADER_LEN + packet::packet_len(256)),
        })
    }

    /// The link type being written.
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// Writes one record: `mad` inside LRH/BTH/DETH built from `meta`, with
    /// real ICRC and VCRC, stamped `ts`.
    ///
    /// # Errors
    /// [`PcapError::MetaOverflow`] / [`PcapError::PayloadLength`] for
    /// unrepresentable input, [`PcapError::Timestamp`] for nanoseconds of a
    /// second or more, and I/O errors. Nothing is written on error.
    pub fn write_mad(
        &mut self,
        ts: Timestamp,
        mad: &[u8],
        meta: &PacketMeta,
    ) -> Result<(), PcapError> {
        if ts.nanos >= 1_000_000_000 {
            return Err(PcapError::Timestamp("nanoseconds must be below one second"));
        }
        self.buf.clear();
        let pkt_start = match self.link {
            LinkType::Erf => ERF_HEADER_LEN,
            LinkType::Infiniband => 0,
        };
        self.buf.resize(16 + pkt_start, 0);
        packet::encode(meta, mad, &mut self.buf)?;
        let pkt_len = self.buf.len() - 16 - pkt_start;
        let rec_len = pkt_len + pkt_start;
        // rec_len <= 16 + packet_len(4096): fits every length field below.
        let h = &mut self.buf[..16];
        h[0..4].copy_from_slice(&ts.secs.to_le_bytes());
        h[4..8].copy_from_slice(&ts.nanos.to_le_bytes());
        h[8..12].copy_from_slice(&(rec_len as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(rec_len as u32).to_le_bytes());
        if self.link == LinkType::Erf {
            let e = &mut self.buf[16..16 + ERF_HEADER_LEN];
            e[0..8].copy_from_slice(&ts.to_erf().to_le_bytes());
            e[8] = ERF_TYPE_INFINIBAND;
            e[9] = 0x04 | meta.direction.erf_interface(); // vlen | interface
            e[10..12].copy_from_slice(&(rec_len as u16).to_be_bytes());
            e[12..14].copy_from_slice(&0u16.to_be_bytes());
            e[14..16].copy_from_slice(&(pkt_len as u16).to_be_bytes());
        }
        self.out.write_all(&self.buf)?;
        Ok(())
    }

    /// [`PcapWriter::write_mad`] with the addressing a port would use for
    /// this MAD's class ([`PacketMeta::for_mad`]: SMPs on QP0 and VL15,
    /// everything else on QP1 with the GSI Q_Key).
    ///
    /// # Errors
    /// As [`PcapWriter::write_mad`].
    pub fn write_mad_auto(
        &mut self,
        ts: Timestamp,
        mad: &[u8],
        slid: u16,
        dlid: u16,
        direction: Direction,
    ) -> Result<(), PcapError> {
        let meta = PacketMeta::for_mad(mad, slid, dlid, direction);
        self.write_mad(ts, mad, &meta)
    }

    /// Flushes the underlying writer.
    ///
    /// # Errors
    /// I/O errors.
    pub fn flush(&mut self) -> Result<(), PcapError> {
        self.out.flush()?;
        Ok(())
    }

    /// Flushes and returns the underlying writer.
    ///
    /// # Errors
    /// I/O errors while flushing.
    pub fn into_inner(mut self) -> Result<W, PcapError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One MAD read back from a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapRecord {
    /// Capture time (the ERF timestamp for ERF records, the pcap record
    /// timestamp for link type 247).
    pub ts: Timestamp,
    /// Addressing from the packet headers; direction from the ERF
    /// capture interface.
    pub meta: PacketMeta,
    /// The MAD (the UD payload without pad).
    pub mad: Vec<u8>,
    /// ICRC / VCRC verdicts.
    pub crc: CrcStatus,
    /// True when the packet carried a GRH (skipped).
    pub has_grh: bool,
}

/// Reads MAD records from a pcap file of link type 197 (ERF type 21
/// records) or 247 (bare IB packets).
///
/// [`PcapReader::next_record`] returns `Ok(None)` at the end. A record
/// whose framing is intact but whose contents are bad (another ERF type,
/// a non-UD packet) is an error for that record only, and the next call
/// goes on with the following record. A framing error (truncated header,
/// oversized length, I/O error) ends the stream: later calls return
/// `Ok(None)`. The [`Iterator`] implementation follows the same rules.
#[derive(Debug)]
pub struct PcapReader<R: Read> {
    input: R,
    link: LinkType,
    swapped: bool,
    nanos: bool,
    done: bool,
    records: u64,
    buf: Vec<u8>,
    /// Bytes read so far (file header included).
    consumed: u64,
    limit: u64,
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<R: Read> PcapReader<R> {
    /// Reads and checks the file header.
    ///
    /// # Errors
    /// [`PcapError::BadMagic`], [`PcapError::UnsupportedVersion`],
    /// [`PcapError::UnsupportedLinkType`], [`PcapError::Truncated`] for a
    /// file shorter than its header, or an I/O error.
    pub fn new(input: R) -> Result<Self, PcapError> {
        Self::with_limit(input, MAX_PCAP_LEN)
    }

    /// As [`PcapReader::new`], reading at most `limit` bytes of `input`:
    /// a record that would end past it is [`PcapError::TooLarge`], and
    /// ends the stream.
    ///
    /// # Errors
    /// As [`PcapReader::new`].
    pub fn with_limit(mut input: R, limit: u64) -> Result<Self, PcapError> {
        let mut h = [0u8; 24];
        let got = read_full(&mut input, &mut h)?;
        if got < 4 {
            return Err(PcapError::Truncated {
                what: "pcap file header",
                need: 24,
                got,
            });
        }
        let magic_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let (swapped, nanos) = match magic_le {
            MAGIC_MICROS => (false, false),
            MAGIC_NANOS => (false, true),
            m if m.swap_bytes() == MAGIC_MICROS => (true, false),
            m if m.swap_bytes() == MAGIC_NANOS => (true, true),
            m => return Err(PcapError::BadMagic(m)),
        };
        if got < 24 {
            return Err(PcapError::Truncated {
                what: "pcap file header",
                need: 24,
                got,
            });
        }
        let u16_at = |i: usize| {
            let v = u16::from_le_bytes([h[i], h[i + 1]]);
            if swapped {
                v.swap_bytes()
            } else {
                v
            }
        };
        let u32_at = |i: usize| {
            let v = u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
            if swapped {
                v.swap_bytes()
            } else {
                v
            }
        };
        let (major, minor) = (u16_at(4), u16_at(6));
        if major != 2 {
            return Err(PcapError::UnsupportedVersion { major, minor });
        }
        // Bits 26-31 of the link-type word may carry FCS information; the
        // link type proper is the low 16 bits and bits 16-25 must be 0.
        let network = u32_at(20);
        let code = network & 0x03FF_FFFF;
        let link = LinkType::from_code(code).ok_or(PcapError::UnsupportedLinkType(code))?;
        Ok(Self {
            input,
            link,
            swapped,
            nanos,
            done: false,
            records: 0,
            buf: Vec::new(),
            consumed: 24,
            limit,
        })
    }

    /// The file's link type.
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// Number of records read so far (good or bad).
    pub fn records_read(&self) -> u64 {
        self.records
    }

    fn u32_at(&self, b: &[u8], i: usize) -> u32 {
        let v = u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if self.swapped {
            v.swap_bytes()
        } else {
            v
        }
    }

    /// Reads the next record, `Ok(None)` at the end of the file.
    ///
    /// # Errors
    /// See the type documentation: framing errors end the stream, content
    /// errors ([`PcapError::UnsupportedErfType`], [`PcapError::BadErf`],
    /// [`PcapError::BadPacket`], a packet shorter than its LRH says) skip
    /// one record.
    pub fn next_record(&mut self) -> Result<Option<PcapRecord>, PcapError> {
        if self.done {
            return Ok(None);
        }
        match self.read_frame() {
            Ok(Some(ts)) => {
                self.records += 1;
                self.parse_frame(ts).map(Some)
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        }
    }

    /// Reads a record header and its data into `self.buf`.
    fn read_frame(&mut self) -> Result<Option<Timestamp>, PcapError> {
        let mut h = [0u8; 16];
        let got = read_full(&mut self.input, &mut h)?;
        if got == 0 {
            return Ok(None);
        }
        if got < 16 {
            return Err(PcapError::Truncated {
                what: "pcap record header",
                need: 16,
                got,
            });
        }
        let secs = self.u32_at(&h, 0);
        let frac = self.u32_at(&h, 4);
        let incl = self.u32_at(&h, 8) as usize;
        if incl > MAX_RECORD_LEN {
            return Err(PcapError::RecordTooLarge {
                len: incl,
                max: MAX_RECORD_LEN,
            });
        }
        self.consumed += 16 + incl as u64;
        if self.consumed > self.limit {
            return Err(PcapError::TooLarge { limit: self.limit });
        }
        self.buf.clear();
        self.buf.resize(incl, 0);
        let got = read_full(&mut self.input, &mut self.buf)?;
        if got < incl {
            return Err(PcapError::Truncated {
                what: "pcap record data",
                need: incl,
                got,
            });
        }
        let nanos = if self.nanos {
            frac
        } else {
            frac.saturating_mul(1000)
        };
        Ok(Some(Timestamp { secs, nanos }))
    }

    fn parse_frame(&self, pcap_ts: Timestamp) -> Result<PcapRecord, PcapError> {
        let data = &self.buf[..];
        let (ts, direction, pkt) = match self.link {
            LinkType::Infiniband => (pcap_ts, Direction::Unknown, data),
            LinkType::Erf => parse_erf(data)?,
        };
        let d = packet::decode(pkt)?;
        Ok(PcapRecord {
            ts,
            meta: PacketMeta {
                direction,
                ..d.meta
            },
            mad: d.payload.to_vec(),
            crc: d.crc,
            has_grh: d.has_grh,
        })
    }
}

/// Splits an ERF record into timestamp, direction and the IB packet.
fn parse_erf(data: &[u8]) -> Result<(Timestamp, Direction, &[u8]), PcapError> {
    if data.len() < ERF_HEADER_LEN {
        return Err(PcapError::Truncated {
            what: "ERF header",
            need: ERF_HEADER_LEN,
            got: data.len(),
        });
    }
    let mut ts8 = [0u8; 8];
    ts8.copy_from_slice(&data[0..8]);
    let ts = Timestamp::from_erf(u64::from_le_bytes(ts8));
    let ty = data[8];
    let flags = data[9];
    let rlen = usize::from(u16::from_be_bytes([data[10], data[11]]));
    let wlen = usize::from(u16::from_be_bytes([data[14], data[15]]));
    if ty & 0x7F != ERF_TYPE_INFINIBAND {
        return Err(PcapError::UnsupportedErfType(ty & 0x7F));
    }
    if flags & 0x08 != 0 {
        return Err(PcapError::BadErf {
            field: "flags",
            value: u64::from(flags),
            reason: "record marked truncated",
        });
    }
    // Skip extension headers: 8 bytes each, bit 7 of the first byte says
    // another one follows.
    let mut off = ERF_HEADER_LEN;
    let mut more = ty & 0x80 != 0;
    while more {
        let Some(ext) = data.get(off..off + 8) else {
            return Err(PcapError::Truncated {
                what: "ERF extension header",
                need: off + 8,
                got: data.len(),
            });
        };
        more = ext[0] & 0x80 != 0;
        off += 8;
    }
    if rlen < off {
        return Err(PcapError::BadErf {
            field: "rlen",
            value: rlen as u64,
            reason: "shorter than the ERF headers",
        });
    }
    // The packet is what the record holds after the headers, limited by
    // rlen (the record may be snapped) and by wlen (ERF pads records).
    let end = rlen.min(data.len());
    let pkt = &data[off..end];
    let pkt = &pkt[..wlen.min(pkt.len())];
    Ok((ts, Direction::from_erf_interface(flags & 0x03), pkt))
}

impl<R: Read> Iterator for PcapReader<R> {
    type Item = Result<PcapRecord, PcapError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mad(class: u8, seed: u8) -> Vec<u8> {
        let mut m: Vec<u8> = (0..256u32)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect();
        m[0] = 1;
        m[1] = class;
        m
    }

    fn sample_metas() -> Vec<(Vec<u8>, PacketMeta, Timestamp)> {
        vec![
            (
                mad(0x01, 1),
                PacketMeta::for_mad(&mad(0x01, 1), 1, 2, Direction::Sent),
                Timestamp::new(1_700_000_000, 0),
            ),
            (
                mad(0x81, 2),
                PacketMeta::for_mad(&mad(0x81, 2), 0xFFFF, 0xFFFF, Direction::Received),
                Timestamp::new(1_700_000_001, 999_999_999),
            ),
            (
                mad(0x03, 3),
                PacketMeta {
                    slid: 0x0C01,
                    dlid: 0x0001,
                    sl: 5,
                    vl: 2,
                    src_qp: 0x1234,
                    dest_qp: 1,
                    qkey: GSI_QKEY,
                    pkey: 0x7FFF,
                    psn: 0x00AB_CDEF,
                    direction: Direction::Sent,
                },
                Timestamp::new(u32::MAX, 1),
            ),
            (
                mad(0x04, 4),
                PacketMeta {
                    direction: Direction::Unknown,
                    ..PacketMeta::for_mad(&mad(0x04, 4), 7, 8, Direction::Unknown)
                },
                Timestamp::new(0, 123_456_789),
            ),
        ]
    }

    fn write_all(link: LinkType) -> Vec<u8> {
        let mut w = PcapWriter::with_link_type(Vec::new(), link).unwrap();
        for (m, meta, ts) in sample_metas() {
            w.write_mad(ts, &m, &meta).unwrap();
        }
        w.into_inner().unwrap()
    }

    #[test]
    fn erf_capture_reads_back_equal() {
        let file = write_all(LinkType::Erf);
        let r = PcapReader::new(&file[..]).unwrap();
        assert_eq!(r.link_type(), LinkType::Erf);
        let recs: Vec<PcapRecord> = r.map(Result::unwrap).collect();
        let want = sample_metas();
        assert_eq!(recs.len(), want.len());
        for (rec, (m, meta, ts)) in recs.iter().zip(want) {
            assert_eq!(rec.mad, m);
            assert_eq!(rec.meta, meta);
            assert_eq!(rec.ts, ts);
            assert!(rec.crc.all_valid());
            assert!(!rec.has_grh);
        }
    }

    #[test]
    fn link_type_247_capture_reads_back_without_direction() {
        let file = write_all(LinkType::Infiniband);
        let mut r = PcapReader::new(&file[..]).unwrap();
        assert_eq!(r.link_type(), LinkType::Infiniband);
        for (m, meta, ts) in sample_metas() {
            let rec = r.next_record().unwrap().unwrap();
            assert_eq!(rec.mad, m);
            assert_eq!(
                rec.meta,
                PacketMeta {
                    direction: Direction::Unknown,
                    ..meta
                }
            );
            assert_eq!(rec.ts, ts);
            assert!(rec.crc.all_valid());
        }
        assert!(r.next_record().unwrap().is_none());
        assert_eq!(r.records_read(), 4);
    }

    #[test]
    fn file_and_erf_headers_have_the_documented_layout() {
        let file = write_all(LinkType::Erf);
        assert_eq!(&file[0..4], &[0x4D, 0x3C, 0xB2, 0xA1]);
        assert_eq!(&file[4..8], &[2, 0, 4, 0]);
        assert_eq!(&file[20..24], &197u32.to_le_bytes());
        let rec = &file[24..];
        assert_eq!(&rec[0..4], &1_700_000_000u32.to_le_bytes());
        assert_eq!(&rec[8..12], &306u32.to_le_bytes());
        let erf = &rec[16..32];
        assert_eq!(
            u64::from_le_bytes(erf[0..8].try_into().unwrap()),
            1_700_000_000u64 << 32
        );
        assert_eq!(erf[8], 21);
        assert_eq!(erf[9], 0x04); // vlen, interface 0 (sent)
        assert_eq!(&erf[10..16], &[0x01, 0x32, 0, 0, 0x01, 0x22]); // rlen 306, wlen 290
    }

    #[test]
    fn erf_timestamps_round_trip_every_nanosecond_value_tested() {
        for nanos in (0..1_000_000_000u32)
            .step_by(999_983)
            .chain([1, 999_999_999, 500_000_000])
        {
            let t = Timestamp::new(42, nanos);
            assert_eq!(Timestamp::from_erf(t.to_erf()), t);
        }
        // A fraction just under one second rounds up into the next second.
        assert_eq!(
            Timestamp::from_erf((7u64 << 32) | 0xFFFF_FFFF),
            Timestamp::new(8, 0)
        );
    }

    #[test]
    fn timestamps_convert_from_system_time_and_reject_out_of_range() {
        let t = UNIX_EPOCH + Duration::new(1_000, 5);
        assert_eq!(Timestamp::try_from(t).unwrap(), Timestamp::new(1_000, 5));
        assert!(Timestamp::try_from(Duration::from_secs(1 << 33)).is_err());
        assert_eq!(Timestamp::from((3, 4)).to_duration(), Duration::new(3, 4));
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        assert!(matches!(
            w.write_mad(
                Timestamp::new(0, 1_000_000_000),
                &mad(1, 0),
                &PacketMeta::default()
            ),
            Err(PcapError::Timestamp(_))
        ));
        assert_eq!(
            w.into_inner().unwrap().len(),
            24,
            "nothing written on error"
        );
    }

    #[test]
    fn bad_magic_version_and_link_type_are_refused() {
        let good = write_all(LinkType::Erf);
        let mut f = good.clone();
        f[0] = 0;
        assert!(matches!(
            PcapReader::new(&f[..]),
            Err(PcapError::BadMagic(_))
        ));
        let mut f = good.clone();
        f[4] = 3;
        assert!(matches!(
            PcapReader::new(&f[..]),
            Err(PcapError::UnsupportedVersion { major: 3, .. })
        ));
        let mut f = good.clone();
        f[20..24].copy_from_slice(&1u32.to_le_bytes()); // Ethernet
        assert!(matches!(
            PcapReader::new(&f[..]),
            Err(PcapError::UnsupportedLinkType(1))
        ));
        for n in [0, 3, 4, 23] {
            assert!(matches!(
                PcapReader::new(&good[..n]),
                Err(PcapError::Truncated { .. })
            ));
        }
        let e = PcapReader::new(&[0x12, 0x34, 0x56, 0x78, 0, 0][..]).unwrap_err();
        assert!(e.to_string().contains("bad magic"), "{e}");
    }

    #[test]
    fn big_endian_microsecond_files_are_read() {
        // Hand-built: big-endian header, microsecond magic, link type 247.
        let mut p = Vec::new();
        let meta = PacketMeta::for_mad(&mad(3, 9), 3, 4, Direction::Unknown);
        packet::encode(&meta, &mad(3, 9), &mut p).unwrap();
        let mut f = Vec::new();
        f.extend_from_slice(&MAGIC_MICROS.to_be_bytes());
        f.extend_from_slice(&2u16.to_be_bytes());
        f.extend_from_slice(&4u16.to_be_bytes());
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&SNAPLEN.to_be_bytes());
        f.extend_from_slice(&247u32.to_be_bytes());
        f.extend_from_slice(&10u32.to_be_bytes());
        f.extend_from_slice(&20u32.to_be_bytes());
        f.extend_from_slice(&(p.len() as u32).to_be_bytes());
        f.extend_from_slice(&(p.len() as u32).to_be_bytes());
        f.extend_from_slice(&p);
        let mut r = PcapReader::new(&f[..]).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.ts, Timestamp::new(10, 20_000));
        assert_eq!(rec.meta, meta);
        assert_eq!(rec.mad, mad(3, 9));
    }

    #[test]
    fn truncated_records_end_the_stream_with_an_error() {
        let good = write_all(LinkType::Erf);
        // Cut inside the second record's header, then inside its data.
        let first_end = 24 + 16 + 306;
        for cut in [first_end + 5, first_end + 16 + 100] {
            let mut r = PcapReader::new(&good[..cut]).unwrap();
            assert!(r.next_record().unwrap().is_some());
            assert!(matches!(r.next_record(), Err(PcapError::Truncated { .. })));
            assert!(r.next_record().unwrap().is_none());
        }
    }

    #[test]
    fn oversized_record_lengths_are_refused_without_allocating() {
        let mut f = write_all(LinkType::Erf)[..24].to_vec();
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&u32::MAX.to_le_bytes());
        f.extend_from_slice(&u32::MAX.to_le_bytes());
        let mut r = PcapReader::new(&f[..]).unwrap();
        assert!(matches!(
            r.next_record(),
            Err(PcapError::RecordTooLarge { .. })
        ));
    }

    /// A capture that never ends: the file header, then the same record
    /// for ever (as a FIFO fed by an endless writer gives).
    struct Endless {
        bytes: Vec<u8>,
        head: usize,
        pos: usize,
    }

    impl Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.pos == self.bytes.len() {
                self.pos = self.head;
            }
            let n = out.len().min(self.bytes.len() - self.pos);
            out[..n].copy_from_slice(&self.bytes[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    #[test]
    fn an_endless_capture_ends_at_the_readers_limit() {
        let file = write_all(LinkType::Erf);
        let incl = u32::from_le_bytes(file[32..36].try_into().unwrap()) as usize;
        let rec = 16 + incl;
        let input = Endless {
            bytes: file[..24 + rec].to_vec(),
            head: 24,
            pos: 0,
        };
        let limit = (24 + 10 * rec) as u64;
        let mut r = PcapReader::with_limit(input, limit).unwrap();
        for _ in 0..10 {
            assert!(r.next_record().unwrap().is_some());
        }
        let e = r.next_record().unwrap_err();
        assert!(matches!(e, PcapError::TooLarge { limit: l } if l == limit));
        assert!(e.to_string().contains(&limit.to_string()), "{e}");
        assert!(
            r.next_record().unwrap().is_none(),
            "the error ends the stream"
        );
    }

    #[test]
    fn the_default_pcap_limit_is_max_pcap_len() {
        let file = write_all(LinkType::Erf);
        let r = PcapReader::new(&file[..]).unwrap();
        assert_eq!(r.limit, MAX_PCAP_LEN);
    }

    #[test]
    fn bad_record_contents_skip_only_that_record() {
        let mut file = write_all(LinkType::Erf);
        let rec0 = 24 + 16;
        // First record: ERF type Ethernet (2).
        file[rec0 + 8] = 2;
        // Second record: BTH opcode RC SEND only.
        let rec1 = rec0 + 306 + 16;
        file[rec1 + 16 + 8] = 0x04;
        let mut r = PcapReader::new(&file[..]).unwrap();
        assert!(matches!(
            r.next_record(),
            Err(PcapError::UnsupportedErfType(2))
        ));
        let e = r.next_record().unwrap_err();
        assert!(matches!(
            e,
            PcapError::BadPacket {
                header: "BTH",
                field: "OpCode",
                ..
            }
        ));
        assert!(e.to_string().contains("not a UD SEND-only"), "{e}");
        assert!(r.next_record().unwrap().is_some());
        assert!(r.next_record().unwrap().is_some());
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn erf_extension_headers_padding_and_truncation_flags_are_handled() {
        let file = write_all(LinkType::Erf);
        let rec = &file[24 + 16..24 + 16 + 306];
        // Insert one extension header and 6 bytes of record padding.
        let mut erf = rec[..16].to_vec();
        erf[8] |= 0x80;
        erf.extend_from_slice(&[0x01, 0, 0, 0, 0, 0, 0, 0]);
        erf.extend_from_slice(&rec[16..]);
        erf.extend_from_slice(&[0xEE; 6]);
        let rlen = erf.len() as u16;
        erf[10..12].copy_from_slice(&rlen.to_be_bytes());
        let (_, dir, pkt) = parse_erf(&erf).unwrap();
        assert_eq!(dir, Direction::Sent);
        assert_eq!(pkt, &rec[16..]);
        // Extension header promised but missing.
        let mut short = rec[..20].to_vec();
        short[8] |= 0x80;
        assert!(matches!(
            parse_erf(&short),
            Err(PcapError::Truncated { .. })
        ));
        // Truncated flag.
        let mut t = rec.to_vec();
        t[9] |= 0x08;
        assert!(matches!(
            parse_erf(&t),
            Err(PcapError::BadErf { field: "flags", .. })
        ));
        // rlen shorter than the header.
        let mut t = rec.to_vec();
        t[10] = 0;
        t[11] = 4;
        assert!(matches!(
            parse_erf(&t),
            Err(PcapError::BadErf { field: "rlen", .. })
        ));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_reader() {
        let good = write_all(LinkType::Erf);
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..2000 {
            let mut f = good.clone();
            let flips = 1 + round % 8;
            for _ in 0..flips {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let i = (seed as usize) % f.len();
                f[i] = (seed >> 32) as u8;
            }
            let cut = (seed >> 40) as usize % (f.len() + 1);
            if let Ok(r) = PcapReader::new(&f[..cut]) {
                for _ in r {}
            }
        }
    }
}
