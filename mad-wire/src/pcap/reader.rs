//! [`PcapReader`]: MADs back from a capture file, bounded and panic-free.

use std::io::{self, Read};

use super::{
    packet, CrcStatus, Direction, LinkType, PacketMeta, PcapError, Timestamp, ERF_HEADER_LEN,
    ERF_TYPE_INFINIBAND, MAGIC_MICROS, MAGIC_NANOS, MAX_PCAP_LEN, MAX_RECORD_LEN,
};

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
    pub(super) limit: u64,
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
pub(super) fn parse_erf(data: &[u8]) -> Result<(Timestamp, Direction, &[u8]), PcapError> {
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
