//! The InfiniBand packet synthesized around a MAD: LRH, BTH, DETH, the MAD
//! itself, pad, ICRC and VCRC (IBA vol. 1 §7.7, §9.2, §9.3.3, §7.8).
//!
//! ```text
//! offset  len  header
//!      0    8  LRH   VL(4) LVer(4) | SL(4) resv(2) LNH(2) | DLID(16)
//!                    | resv(5) PktLen(11) | SLID(16)
//!      8   12  BTH   OpCode(8) | SE M PadCnt(2) TVer(4) | P_Key(16)
//!                    | FECN BECN resv(6) | DestQP(24) | A resv(7) | PSN(24)
//!     20    8  DETH  Q_Key(32) | resv(8) | SrcQP(24)
//!     28    n  MAD   (n = 256 for every MAD on QP0/QP1), then PadCnt zeros
//!   28+n    4  ICRC  least significant byte first
//!   32+n    2  VCRC  least significant byte first
//! ```
//!
//! PktLen counts 4-byte words from the LRH through the ICRC (the VCRC is
//! not included), so a 256-byte MAD gives PktLen 72 and a 290-byte packet.

use super::crc;
use super::PcapError;

/// Length of the Local Route Header.
pub const LRH_LEN: usize = 8;
/// Length of the Global Route Header.
pub const GRH_LEN: usize = 40;
/// Length of the Base Transport Header.
pub const BTH_LEN: usize = 12;
/// Length of the Datagram Extended Transport Header.
pub const DETH_LEN: usize = 8;
/// Length of the ICRC.
pub const ICRC_LEN: usize = 4;
/// Length of the VCRC.
pub const VCRC_LEN: usize = 2;
/// BTH opcode of an Unreliable Datagram SEND-only packet.
pub const OPCODE_UD_SEND_ONLY: u8 = 0x64;
/// LRH Link Next Header: IBA transport, no GRH.
pub const LNH_IBA_LOCAL: u8 = 2;
/// LRH Link Next Header: GRH follows.
pub const LNH_IBA_GLOBAL: u8 = 3;
pub use crate::addr::GSI_QKEY;
/// The default (full-member) partition key.
pub const DEFAULT_PKEY: u16 = 0xFFFF;
/// Largest payload (MAD) the writer accepts: the largest IB MTU.
pub const MAX_PAYLOAD: usize = 4096;

/// Whether the capturing port sent or received a packet.
///
/// ERF records store it in the capture-interface bits of the ERF flags:
/// interface 0 for [`Direction::Sent`], 1 for [`Direction::Received`].
/// Link type 247 records have no place for it and read back as
/// [`Direction::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    /// Sent by the capturing port.
    Sent,
    /// Received by the capturing port.
    #[default]
    Received,
    /// Not recorded (ERF interfaces 2 and 3, link type 247).
    Unknown,
}

impl Direction {
    /// ERF capture interface used for this direction.
    #[must_use]
    pub fn erf_interface(self) -> u8 {
        match self {
            Self::Sent => 0,
            Self::Received => 1,
            Self::Unknown => 2,
        }
    }

    /// Direction stored in an ERF capture interface number (0..=3).
    #[must_use]
    pub fn from_erf_interface(iface: u8) -> Self {
        match iface & 0x03 {
            0 => Self::Sent,
            1 => Self::Received,
            _ => Self::Unknown,
        }
    }
}

/// Addressing of one captured MAD: what goes into its LRH, BTH and DETH.
///
/// Field widths are checked by the writer (`sl`, `vl`: 4 bits; QPs and
/// PSN: 24 bits). [`PacketMeta::for_mad`] picks the values a real port
/// would use for a MAD of a given class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketMeta {
    /// LRH source LID.
    pub slid: u16,
    /// LRH destination LID.
    pub dlid: u16,
    /// LRH service level (0 for SMPs).
    pub sl: u8,
    /// LRH virtual lane: 15 for SMPs (QP0), usually 0 otherwise.
    pub vl: u8,
    /// DETH source QP.
    pub src_qp: u32,
    /// BTH destination QP: 0 for SMPs, 1 for GSI MADs.
    pub dest_qp: u32,
    /// DETH Q_Key: 0 on QP0, [`GSI_QKEY`] on QP1.
    pub qkey: u32,
    /// BTH partition key.
    pub pkey: u16,
    /// BTH packet sequence number.
    pub psn: u32,
    /// Sent or received by the capturing port.
    pub direction: Direction,
}

impl Default for PacketMeta {
    fn default() -> Self {
        Self {
            slid: 0,
            dlid: 0,
            sl: 0,
            vl: 0,
            src_qp: 1,
            dest_qp: 1,
            qkey: GSI_QKEY,
            pkey: DEFAULT_PKEY,
            psn: 0,
            direction: Direction::Received,
        }
    }
}

impl PacketMeta {
    /// The addressing a port uses for `mad`: SMPs (management class 0x01
    /// or 0x81, MAD byte 1) travel QP0 → QP0 on VL15 with Q_Key 0; every
    /// other class travels QP1 → QP1 on VL0 with the GSI Q_Key. SL 0,
    /// default P_Key, PSN 0.
    #[must_use]
    pub fn for_mad(mad: &[u8], slid: u16, dlid: u16, direction: Direction) -> Self {
        let class = mad.get(1).copied().unwrap_or(0);
        let smp = class == 0x01 || class == 0x81;
        Self {
            slid,
            dlid,
            sl: 0,
            vl: if smp { 15 } else { 0 },
            src_qp: u32::from(!smp),
            dest_qp: u32::from(!smp),
            qkey: if smp { 0 } else { GSI_QKEY },
            pkey: DEFAULT_PKEY,
            psn: 0,
            direction,
        }
    }

    fn check(&self) -> Result<(), PcapError> {
        let checks: [(&'static str, u64, u32); 5] = [
            ("sl", u64::from(self.sl), 4),
            ("vl", u64::from(self.vl), 4),
            ("src_qp", u64::from(self.src_qp), 24),
            ("dest_qp", u64::from(self.dest_qp), 24),
            ("psn", u64::from(self.psn), 24),
        ];
        for (field, value, bits) in checks {
            if value >> bits != 0 {
                return Err(PcapError::MetaOverflow { field, value, bits });
            }
        }
        Ok(())
    }
}

/// Result of checking one CRC of a packet read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrcCheck {
    /// Present and equal to the computed value.
    Valid,
    /// Present but wrong.
    Invalid {
        /// The value in the packet.
        found: u32,
        /// The value computed over the packet.
        computed: u32,
    },
    /// Not in the captured bytes.
    Absent,
}

/// CRC verdicts of a packet read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrcStatus {
    /// The invariant CRC.
    pub icrc: CrcCheck,
    /// The variant CRC.
    pub vcrc: CrcCheck,
}

impl CrcStatus {
    /// True when both CRCs are present and valid.
    #[must_use]
    pub fn all_valid(&self) -> bool {
        self.icrc == CrcCheck::Valid && self.vcrc == CrcCheck::Valid
    }
}

/// Length of the packet [`encode`] builds around a payload of `len` bytes.
#[must_use]
pub fn packet_len(payload_len: usize) -> usize {
    let pad = (4 - payload_len % 4) % 4;
    LRH_LEN + BTH_LEN + DETH_LEN + payload_len + pad + ICRC_LEN + VCRC_LEN
}

/// Appends to `out` the full IB packet (LRH, BTH, DETH, `payload`, pad,
/// ICRC, VCRC) carrying `payload` with the addressing of `meta`.
///
/// # Errors
/// [`PcapError::MetaOverflow`] when a field of `meta` is too wide,
/// [`PcapError::PayloadLength`] when `payload` exceeds [`MAX_PAYLOAD`].
pub fn encode(meta: &PacketMeta, payload: &[u8], out: &mut Vec<u8>) -> Result<(), PcapError> {
    meta.check()?;
    if payload.len() > MAX_PAYLOAD {
        return Err(PcapError::PayloadLength {
            len: payload.len(),
            max: MAX_PAYLOAD,
        });
    }
    let pad = (4 - payload.len() % 4) % 4;
    let words = (LRH_LEN + BTH_LEN + DETH_LEN + payload.len() + pad + ICRC_LEN) / 4;
    let start = out.len();
    // LRH.
    out.push(meta.vl << 4); // LVer 0
    out.push((meta.sl << 4) | LNH_IBA_LOCAL);
    out.extend_from_slice(&meta.dlid.to_be_bytes());
    // `words` <= (28 + 4096 + 3 + 4) / 4 < 2048: fits the 11-bit PktLen.
    out.extend_from_slice(&(words as u16).to_be_bytes());
    out.extend_from_slice(&meta.slid.to_be_bytes());
    // BTH.
    out.push(OPCODE_UD_SEND_ONLY);
    out.push((pad as u8) << 4); // SE 0, M 0, TVer 0
    out.extend_from_slice(&meta.pkey.to_be_bytes());
    out.extend_from_slice(&meta.dest_qp.to_be_bytes()); // byte 4 (FECN/BECN/resv) is 0
    out.extend_from_slice(&meta.psn.to_be_bytes()); // A 0, resv7 0
                                                    // DETH.
    out.extend_from_slice(&meta.qkey.to_be_bytes());
    out.extend_from_slice(&meta.src_qp.to_be_bytes()); // reserved byte 0
    out.extend_from_slice(payload);
    out.resize(out.len() + pad, 0);
    let icrc = crc::icrc(&out[start..]).unwrap_or(0);
    out.extend_from_slice(&icrc.to_le_bytes());
    let vcrc = crc::vcrc(&out[start..]);
    out.extend_from_slice(&vcrc.to_le_bytes());
    Ok(())
}

/// A packet parsed by [`decode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedPacket<'a> {
    /// Addressing read from LRH, BTH and DETH (direction is
    /// [`Direction::Unknown`]: the packet does not carry it).
    pub meta: PacketMeta,
    /// The payload (the MAD), without pad.
    pub payload: &'a [u8],
    /// True when the LRH announced a GRH (LNH = 3); it is skipped.
    pub has_grh: bool,
    /// CRC verdicts.
    pub crc: CrcStatus,
}

fn bad(header: &'static str, field: &'static str, value: u64, reason: &'static str) -> PcapError {
    PcapError::BadPacket {
        header,
        field,
        value,
        reason,
    }
}

fn be16(b: &[u8], i: usize) -> u16 {
    match b.get(i..i + 2) {
        Some(s) => u16::from_be_bytes([s[0], s[1]]),
        None => 0,
    }
}

fn be32(b: &[u8], i: usize) -> u32 {
    match b.get(i..i + 4) {
        Some(s) => u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

/// Parses an IB packet that starts with an LRH and carries a UD SEND-only
/// datagram (a MAD), checking its ICRC and VCRC when present.
///
/// The packet ends where the LRH's PktLen says (plus the VCRC when
/// captured); bytes after that (capture padding) are ignored.
///
/// # Errors
/// [`PcapError::Truncated`] when the buffer is shorter than the headers or
/// than PktLen, [`PcapError::BadPacket`] when a header field makes the
/// packet something other than a UD datagram (raw packet, other opcode,
/// PktLen too small for the headers).
pub fn decode(pkt: &[u8]) -> Result<DecodedPacket<'_>, PcapError> {
    if pkt.len() < LRH_LEN {
        return Err(PcapError::Truncated {
            what: "LRH",
            need: LRH_LEN,
            got: pkt.len(),
        });
    }
    let vl = pkt[0] >> 4;
    let sl = pkt[1] >> 4;
    let lnh = pkt[1] & 0x03;
    let dlid = be16(pkt, 2);
    let pkt_words = usize::from(be16(pkt, 4) & 0x07FF);
    let slid = be16(pkt, 6);
    let has_grh = match lnh {
        LNH_IBA_LOCAL => false,
        LNH_IBA_GLOBAL => true,
        _ => {
            return Err(bad(
                "LRH",
                "LNH",
                u64::from(lnh),
                "raw packet (no BTH), not a MAD",
            ))
        }
    };
    let bth = LRH_LEN + if has_grh { GRH_LEN } else { 0 };
    let deth = bth + BTH_LEN;
    let payload_start = deth + DETH_LEN;
    let pkt_len = pkt_words * 4;
    if pkt_len < payload_start + ICRC_LEN {
        return Err(bad(
            "LRH",
            "PktLen",
            pkt_words as u64,
            "shorter than LRH, BTH, DETH and ICRC",
        ));
    }
    if pkt.len() < pkt_len {
        return Err(PcapError::Truncated {
            what: "IB packet (LRH PktLen)",
            need: pkt_len,
            got: pkt.len(),
        });
    }
    let opcode = pkt[bth];
    if opcode != OPCODE_UD_SEND_ONLY {
        return Err(bad(
            "BTH",
            "OpCode",
            u64::from(opcode),
            "not a UD SEND-only datagram, so not a MAD",
        ));
    }
    let pad = usize::from((pkt[bth + 1] >> 4) & 0x03);
    let pkey = be16(pkt, bth + 2);
    let dest_qp = be32(pkt, bth + 4) & 0x00FF_FFFF;
    let psn = be32(pkt, bth + 8) & 0x00FF_FFFF;
    let qkey = be32(pkt, deth);
    let src_qp = be32(pkt, deth + 4) & 0x00FF_FFFF;
    let payload_end = pkt_len - ICRC_LEN;
    if payload_end < payload_start + pad {
        return Err(bad(
            "BTH",
            "PadCnt",
            pad as u64,
            "pad longer than the payload",
        ));
    }
    let payload = &pkt[payload_start..payload_end - pad];

    let found_icrc = be32(pkt, payload_end).swap_bytes();
    let icrc = match crc::icrc(&pkt[..payload_end]) {
        Some(c) if c == found_icrc => CrcCheck::Valid,
        Some(c) => CrcCheck::Invalid {
            found: found_icrc,
            computed: c,
        },
        None => CrcCheck::Absent,
    };
    let vcrc = match pkt.get(pkt_len..pkt_len + VCRC_LEN) {
        Some(v) => {
            let found = u16::from_le_bytes([v[0], v[1]]);
            let computed = crc::vcrc(&pkt[..pkt_len]);
            if found == computed {
                CrcCheck::Valid
            } else {
                CrcCheck::Invalid {
                    found: u32::from(found),
                    computed: u32::from(computed),
                }
            }
        }
        None => CrcCheck::Absent,
    };
    Ok(DecodedPacket {
        meta: PacketMeta {
            slid,
            dlid,
            sl,
            vl,
            src_qp,
            dest_qp,
            qkey,
            pkey,
            psn,
            direction: Direction::Unknown,
        },
        payload,
        has_grh,
        crc: CrcStatus { icrc, vcrc },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smp() -> Vec<u8> {
        let mut m = vec![0u8; 256];
        m[0] = 1;
        m[1] = 0x81;
        m[2] = 1;
        m[3] = 1;
        for (i, b) in m.iter_mut().enumerate().skip(24) {
            *b = (i as u8).wrapping_mul(7);
        }
        m
    }

    #[test]
    fn smp_packet_has_the_iba_layout() {
        let mad = smp();
        let meta = PacketMeta::for_mad(&mad, 0xFFFF, 0xFFFF, Direction::Sent);
        assert_eq!(
            (meta.vl, meta.dest_qp, meta.src_qp, meta.qkey),
            (15, 0, 0, 0)
        );
        let mut p = Vec::new();
        encode(&meta, &mad, &mut p).unwrap();
        assert_eq!(p.len(), 290);
        assert_eq!(p.len(), packet_len(256));
        assert_eq!(p[0], 0xF0); // VL15, LVer 0
        assert_eq!(p[1], 0x02); // SL0, LNH local
        assert_eq!(&p[2..8], &[0xFF, 0xFF, 0x00, 72, 0xFF, 0xFF]);
        assert_eq!(&p[8..20], &[0x64, 0, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&p[20..28], &[0; 8]);
        assert_eq!(&p[28..284], &mad[..]);
        // ICRC over the masked packet, stored LSB first; VCRC over all.
        let mut masked = p[..284].to_vec();
        masked[0] |= 0xF0;
        masked[12] = 0xFF;
        assert_eq!(&p[284..288], &crc::crc32(&masked).to_le_bytes());
        assert_eq!(&p[288..290], &crc::vcrc(&p[..288]).to_le_bytes());
    }

    #[test]
    fn gsi_packet_uses_qp1_vl0_and_the_gsi_qkey() {
        let mut mad = smp();
        mad[1] = 0x03;
        let meta = PacketMeta::for_mad(&mad, 1, 2, Direction::Received);
        assert_eq!(
            (meta.vl, meta.dest_qp, meta.src_qp, meta.qkey),
            (0, 1, 1, GSI_QKEY)
        );
        let mut p = Vec::new();
        encode(&meta, &mad, &mut p).unwrap();
        assert_eq!(&p[12..16], &[0, 0, 0, 1]);
        assert_eq!(&p[20..28], &[0x80, 0x01, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn decode_inverts_encode_and_validates_both_crcs() {
        let meta = PacketMeta {
            slid: 0x1234,
            dlid: 0xBEEF,
            sl: 9,
            vl: 3,
            src_qp: 0xABCDEF,
            dest_qp: 0x123456,
            qkey: 0xDEAD_BEEF,
            pkey: 0x8001,
            psn: 0xFEDCBA,
            direction: Direction::Unknown,
        };
        for len in [0usize, 1, 2, 3, 24, 255, 256, 257, 4096] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 13 + 1) as u8).collect();
            let mut p = Vec::new();
            encode(&meta, &payload, &mut p).unwrap();
            assert_eq!(p.len(), packet_len(len));
            let d = decode(&p).unwrap();
            assert_eq!(d.meta, meta);
            assert_eq!(d.payload, &payload[..]);
            assert!(d.crc.all_valid(), "len {len}: {:?}", d.crc);
            assert!(!d.has_grh);
        }
    }

    #[test]
    fn a_flipped_bit_is_reported_as_a_bad_crc() {
        let mut p = Vec::new();
        encode(&PacketMeta::default(), &smp(), &mut p).unwrap();
        p[100] ^= 0x10;
        let d = decode(&p).unwrap();
        assert!(matches!(d.crc.icrc, CrcCheck::Invalid { .. }));
        assert!(matches!(d.crc.vcrc, CrcCheck::Invalid { .. }));
        // A changed VL only breaks the VCRC.
        let mut p = Vec::new();
        encode(&PacketMeta::default(), &smp(), &mut p).unwrap();
        p[0] ^= 0x70;
        let d = decode(&p).unwrap();
        assert_eq!(d.crc.icrc, CrcCheck::Valid);
        assert!(matches!(d.crc.vcrc, CrcCheck::Invalid { .. }));
        // Without the VCRC it is absent, not invalid.
        let d = decode(&p[..p.len() - 2]).unwrap();
        assert_eq!(d.crc.vcrc, CrcCheck::Absent);
    }

    #[test]
    fn overwide_meta_fields_are_refused() {
        let mut out = Vec::new();
        for (meta, field) in [
            (
                PacketMeta {
                    vl: 16,
                    ..Default::default()
                },
                "vl",
            ),
            (
                PacketMeta {
                    sl: 0x10,
                    ..Default::default()
                },
                "sl",
            ),
            (
                PacketMeta {
                    src_qp: 1 << 24,
                    ..Default::default()
                },
                "src_qp",
            ),
            (
                PacketMeta {
                    dest_qp: 1 << 24,
                    ..Default::default()
                },
                "dest_qp",
            ),
            (
                PacketMeta {
                    psn: 1 << 24,
                    ..Default::default()
                },
                "psn",
            ),
        ] {
            match encode(&meta, &[0; 256], &mut out) {
                Err(PcapError::MetaOverflow { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        assert!(matches!(
            encode(&PacketMeta::default(), &[0; MAX_PAYLOAD + 1], &mut out),
            Err(PcapError::PayloadLength { .. })
        ));
        assert!(out.is_empty());
    }

    #[test]
    fn malformed_headers_are_errors_not_panics() {
        let mut good = Vec::new();
        encode(&PacketMeta::default(), &smp(), &mut good).unwrap();
        // Short LRH.
        assert!(matches!(
            decode(&good[..7]),
            Err(PcapError::Truncated { what: "LRH", .. })
        ));
        // Raw packet.
        let mut p = good.clone();
        p[1] &= !0x03;
        assert!(matches!(
            decode(&p),
            Err(PcapError::BadPacket { field: "LNH", .. })
        ));
        // PktLen beyond the buffer.
        assert!(matches!(
            decode(&good[..200]),
            Err(PcapError::Truncated { .. })
        ));
        // PktLen too small for the headers.
        let mut p = good.clone();
        p[4] = 0;
        p[5] = 3;
        assert!(matches!(
            decode(&p),
            Err(PcapError::BadPacket {
                field: "PktLen",
                ..
            })
        ));
        // Other opcode.
        let mut p = good.clone();
        p[8] = 0x04;
        assert!(matches!(
            decode(&p),
            Err(PcapError::BadPacket {
                field: "OpCode",
                ..
            })
        ));
        // Pad longer than an empty payload.
        let mut empty = Vec::new();
        encode(&PacketMeta::default(), &[], &mut empty).unwrap();
        empty[9] |= 0x30;
        assert!(matches!(
            decode(&empty),
            Err(PcapError::BadPacket {
                field: "PadCnt",
                ..
            })
        ));
        // GRH announced but not there.
        let mut p = good[..40].to_vec();
        p[1] |= 0x03;
        p[4] = 0;
        p[5] = 10;
        assert!(decode(&p).is_err());
        // Every prefix of a good packet either parses or errors.
        for n in 0..good.len() {
            let _ = decode(&good[..n]);
        }
    }

    #[test]
    fn a_grh_is_skipped_and_covered_by_the_icrc() {
        let mut plain = Vec::new();
        let meta = PacketMeta {
            slid: 5,
            dlid: 6,
            ..Default::default()
        };
        encode(&meta, &smp(), &mut plain).unwrap();
        // Insert a GRH by hand and recompute the CRCs.
        let mut p = plain[..8].to_vec();
        p[1] = (p[1] & !0x03) | LNH_IBA_GLOBAL;
        let words = (plain.len() - VCRC_LEN + GRH_LEN) / 4;
        p[4..6].copy_from_slice(&(words as u16).to_be_bytes());
        let mut grh = [0u8; GRH_LEN];
        grh[0] = 0x60;
        grh[6] = 0x1B;
        grh[7] = 0x40;
        p.extend_from_slice(&grh);
        p.extend_from_slice(&plain[8..plain.len() - 6]);
        let icrc = crc::icrc(&p).unwrap();
        p.extend_from_slice(&icrc.to_le_bytes());
        let vcrc = crc::vcrc(&p);
        p.extend_from_slice(&vcrc.to_le_bytes());
        let d = decode(&p).unwrap();
        assert!(d.has_grh);
        assert_eq!(d.meta, meta_unknown(meta));
        assert_eq!(d.payload, &smp()[..]);
        assert!(d.crc.all_valid());
    }

    fn meta_unknown(m: PacketMeta) -> PacketMeta {
        PacketMeta {
            direction: Direction::Unknown,
            ..m
        }
    }
}
