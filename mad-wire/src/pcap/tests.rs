//! Tests of the pcap writer and reader.

use super::reader::parse_erf;
use super::*;
use std::io::Read;

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
