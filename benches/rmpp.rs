//! RMPP segmentation and reassembly in memory, no loss, for SA messages of
//! 1 KiB to 4 MiB (56-byte SA header, 200 data bytes per segment).
//! Throughput is SA data bytes per second (criterion prints binary
//! GiB/s; multiply by 1.0737 for decimal GB/s).
//!
//! - `segment`: a `Sender` built with `Sender::new` (the message copied into
//!   a fresh buffer) turning it into 256-byte segments
//!   (`poll_transmit_into`, window opened to the whole message so no ACK
//!   is needed).
//! - `reassemble`: a fresh `ReceiverTable` taking the pre-built segments in
//!   order and delivering the message (its ACKs are produced and dropped);
//!   no buffer is reused.
//! - `transfer`: both, with the real ACK flow (first window 1, then the
//!   receiver's window of 64), as an SA GetTable response travels, in the
//!   steady state of a long-running user: one `ReceiverTable` kept across
//!   transfers, each delivered message handed back with
//!   `ReceiverTable::recycle`, and one message buffer for the sender, taken
//!   back with `Sender::into_message` and refilled (header with a new TID,
//!   then the data: the copy a responder pays building its table) for the
//!   next transfer. A virtual clock moves past the receiver's linger time
//!   between transfers, so `handle_timeout` forgets the previous one as it
//!   would in service.
//! - `transfer_cold`: the same transfer with everything fresh each time (new
//!   table, `Sender::new` copying into a new buffer, the delivered message
//!   dropped): what a one-shot tool pays, page faults on new memory
//!   included.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::{black_box, BenchmarkId, Criterion, Throughput};
use mad_core::transport::Address;
use mad_core::wire::sa::SaHeader;
use mad_core::wire::{AttributeId, MadStatus, Method, MgmtClass, RMPP_HEADER_END};
use mad_rmpp::{Output, ReceiverConfig, ReceiverTable, Sender, SenderConfig};
use mad_testkit::MadBuilder;
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;

const SIZES: &[(usize, &str)] = &[
    (1 << 10, "1KiB"),
    (16 << 10, "16KiB"),
    (256 << 10, "256KiB"),
    (1 << 20, "1MiB"),
    (4 << 20, "4MiB"),
];

/// SA GetTableResp header (common MAD header + RMPP + SA header).
pub(crate) fn sa_header() -> [u8; 56] {
    let sa = SaHeader {
        attr_offset: 14,
        ..SaHeader::default()
    };
    let m = MadBuilder::new(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET_TABLE,
        AttributeId(0x0011),
    )
    .response(MadStatus::SUCCESS)
    .tid(0x0000_0001_0000_0007)
    .repr_at(RMPP_HEADER_END, &sa)
    .build();
    let mut h = [0u8; 56];
    h.copy_from_slice(&m[..56]);
    h
}

/// Every segment of `data`, as the sender emits them with an open window.
pub(crate) fn segments(header: &[u8], data: &[u8], now: Instant) -> Vec<[u8; 256]> {
    let cfg = SenderConfig {
        initial_window: u32::MAX,
        ..SenderConfig::default()
    };
    let mut tx = Sender::new(header, data, cfg, now).expect("valid SA header");
    let mut out = Vec::new();
    let mut seg = [0u8; 256];
    while tx.poll_transmit_into(now, &mut seg).is_some() {
        out.push(seg);
    }
    out
}

/// Feeds `segs` to a fresh table; returns the delivered message length.
pub(crate) fn reassemble(segs: &[[u8; 256]], now: Instant) -> usize {
    let mut rx = ReceiverTable::new(ReceiverConfig::default());
    let mut delivered = 0;
    for s in segs {
        rx.handle(s, &Address::gsi(1), now);
        while let Some(o) = rx.poll_output() {
            if let Output::Delivered { message, .. } = o {
                delivered = message.len();
            }
        }
    }
    delivered
}

/// True when `m` is `header` then `data`; the RMPP header (bytes 24..36)
/// is segment 1's, not the one given to the sender.
fn is_message(m: &[u8], header: &[u8], data: &[u8]) -> bool {
    m.len() == header.len() + data.len()
        && m[..24] == header[..24]
        && m[36..header.len()] == header[36..]
        && m[header.len()..] == *data
}

/// Runs one transfer between `tx` and `rx` with the ACK flow; returns the
/// delivered message (handed to `delivered`) length.
fn run(
    tx: &mut Sender,
    rx: &mut ReceiverTable,
    now: Instant,
    mut delivered: impl FnMut(&mut ReceiverTable, Vec<u8>),
) -> usize {
    let mut seg = [0u8; 256];
    let mut len = 0;
    while !tx.is_finished() {
        let mut progressed = false;
        while tx.poll_transmit_into(now, &mut seg).is_some() {
            rx.handle(&seg, &Address::gsi(1), now);
            progressed = true;
        }
        while let Some(o) = rx.poll_output() {
            match o {
                Output::Send { mad, .. } => tx.handle_reply(&mad, now),
                Output::Delivered { message, .. } => {
                    len = message.len();
                    delivered(rx, message);
                }
                Output::Ended { .. } => {}
            }
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    len
}

/// One complete transfer with fresh buffers and a fresh table; returns the
/// delivered message.
pub(crate) fn transfer_cold(header: &[u8], data: &[u8], now: Instant) -> Vec<u8> {
    let mut tx = Sender::new(header, data, SenderConfig::default(), now).expect("valid SA header");
    let mut rx = ReceiverTable::new(ReceiverConfig::default());
    let mut out = Vec::new();
    run(&mut tx, &mut rx, now, |_, m| out = m);
    out
}

/// A long-running user: one receiver table and one sender message buffer
/// kept across transfers.
pub(crate) struct Steady {
    rx: ReceiverTable,
    /// The sender's message buffer between transfers.
    message: Vec<u8>,
    /// Virtual clock, moved past the linger time before each transfer.
    now: Instant,
    tid: u64,
}

impl Steady {
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            rx: ReceiverTable::new(ReceiverConfig::default()),
            message: Vec::new(),
            now,
            tid: 0,
        }
    }

    /// One transfer of `data` behind `header` (with the next TID); the
    /// delivered message is passed to `check`, then recycled. Returns the
    /// delivered length.
    pub(crate) fn transfer(
        &mut self,
        header: &[u8],
        data: &[u8],
        mut check: impl FnMut(&[u8]),
    ) -> usize {
        self.now += ReceiverConfig::default().linger + Duration::from_secs(1);
        self.rx.handle_timeout(self.now);
        self.tid += 1;
        let mut m = std::mem::take(&mut self.message);
        m.clear();
        m.extend_from_slice(header);
        let tid = self.tid;
        mad_testkit::header::edit(&mut m, |h| h.tid = tid);
        m.extend_from_slice(data);
        let mut tx = Sender::from_message(m, header.len(), SenderConfig::default(), self.now)
            .expect("valid SA header");
        let len = run(&mut tx, &mut self.rx, self.now, |rx, message| {
            check(&message);
            rx.recycle(message);
        });
        self.message = tx.into_message();
        len
    }
}

fn rmpp(c: &mut Criterion) {
    let now = Instant::now();
    let header = sa_header();
    let mut rng = support::Rng::new(0x726d_7070);
    let mut g = c.benchmark_group("rmpp");
    for &(size, name) in SIZES {
        let data = rng.bytes(size);
        let segs = segments(&header, &data, now);
        assert_eq!(reassemble(&segs, now), 56 + size, "reassembly delivers");
        assert!(
            is_message(&transfer_cold(&header, &data, now), &header, &data),
            "cold transfer delivers the message"
        );
        // Steady state: byte-exact on the first transfer and after reuse,
        // and the receive buffer of a large message is reused (one pooled
        // buffer, no more).
        let mut steady = Steady::new(now);
        let mut want = header;
        for _ in 0..3 {
            want[8..16].copy_from_slice(&(steady.tid + 1).to_be_bytes());
            let mut same = false;
            steady.transfer(&header, &data, |m| same = is_message(m, &want, &data));
            assert!(same, "steady transfer delivers the message");
            let pooled = usize::from(size + 56 > ReceiverConfig::default().pool_min_len);
            assert_eq!(
                steady.rx.pooled_buffers(),
                pooled,
                "a large message's buffer is recycled, once"
            );
            assert_eq!(steady.rx.len(), 1, "only the last transfer lingers");
        }
        g.throughput(Throughput::Bytes(size as u64));
        g.sample_size(if size >= 1 << 20 { 20 } else { 50 });
        g.bench_with_input(BenchmarkId::new("segment", name), &data, |b, data| {
            let cfg = SenderConfig {
                initial_window: u32::MAX,
                ..SenderConfig::default()
            };
            let mut seg = [0u8; 256];
            b.iter(|| {
                let mut tx =
                    Sender::new(&header, black_box(data), cfg, now).expect("valid SA header");
                let mut n = 0u32;
                while let Some(s) = tx.poll_transmit_into(now, &mut seg) {
                    black_box(&seg);
                    n = s;
                }
                n
            });
        });
        g.bench_with_input(BenchmarkId::new("reassemble", name), &segs, |b, segs| {
            b.iter(|| reassemble(black_box(segs), now));
        });
        g.bench_with_input(BenchmarkId::new("transfer", name), &data, |b, data| {
            b.iter(|| {
                steady.transfer(&header, black_box(data), |m| {
                    black_box(m);
                })
            });
        });
        g.bench_with_input(BenchmarkId::new("transfer_cold", name), &data, |b, data| {
            b.iter(|| transfer_cold(&header, black_box(data), now).len());
        });
    }
    g.finish();
}

support::bench_main!(rmpp);
