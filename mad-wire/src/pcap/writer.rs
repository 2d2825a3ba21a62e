//! [`PcapWriter`]: MADs out to a capture file.

use std::io::Write;

use super::{
    packet, Direction, LinkType, PacketMeta, PcapError, Timestamp, ERF_HEADER_LEN,
    ERF_TYPE_INFINIBAND, MAGIC_NANOS, SNAPLEN,
};

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
