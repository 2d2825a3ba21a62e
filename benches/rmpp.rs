//! RMPP segmentation and reassembly in memory, no loss, for SA messages of
//! 1 KiB to 4 MiB (56-byte SA header, 200 data bytes per segment).
//! Throughput is data bytes per second.
//!
//! - `segment`: a `Sender` turning the message into 256-byte segments
//!   (`poll_transmit_into`, window opened to the whole message so no ACK
//!   is needed).
//! - `reassemble`: a `ReceiverTable` taking the pre-built segments in
//!   order and delivering the message (its ACKs are produced and dropped).
//! - `transfer`: both, with the real ACK flow (first window 1, then the
//!   receiver's window of 64), as an SA GetTable response travels.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mad_rmpp::{Output, ReceiverConfig, ReceiverTable, Sender, SenderConfig};
use std::time::Instant;

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
fn sa_header() -> [u8; 56] {
    let mut h = [0u8; 56];
    h[0] = 1;
    h[1] = 0x03;
    h[2] = 2;
    h[3] = 0x92;
    h[8..16].copy_from_slice(&0x0000_0001_0000_0007u64.to_be_bytes());
    h[16..18].copy_from_slice(&0x0011u16.to_be_bytes());
    h[44..46].copy_from_slice(&14u16.to_be_bytes());
    h
}

/// Every segment of `data`, as the sender emits them with an open window.
fn segments(header: &[u8], data: &[u8], now: Instant) -> Vec<[u8; 256]> {
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
fn reassemble(segs: &[[u8; 256]], now: Instant) -> usize {
    let mut rx = ReceiverTable::new(ReceiverConfig::default());
    let mut delivered = 0;
    for s in segs {
        rx.handle(s, 1, 1, now);
        while let Some(o) = rx.poll_output() {
            if let Output::Delivered { message, .. } = o {
                delivered = message.len();
            }
        }
    }
    delivered
}

/// One complete transfer with the ACK flow; returns the delivered length.
fn transfer(header: &[u8], data: &[u8], now: Instant) -> usize {
    let mut tx = Sender::new(header, data, SenderConfig::default(), now).expect("valid SA header");
    let mut rx = ReceiverTable::new(ReceiverConfig::default());
    let mut seg = [0u8; 256];
    let mut delivered = 0;
    while !tx.is_finished() {
        let mut progressed = false;
        while tx.poll_transmit_into(now, &mut seg).is_some() {
            rx.handle(&seg, 1, 1, now);
            progressed = true;
        }
        while let Some(o) = rx.poll_output() {
            match o {
                Output::Send { mad, .. } => tx.handle_reply(&mad, now),
                Output::Delivered { message, .. } => delivered = message.len(),
                Output::Ended { .. } => {}
            }
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    delivered
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
        assert_eq!(
            transfer(&header, &data, now),
            56 + size,
            "transfer delivers"
        );
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
            b.iter(|| transfer(&header, black_box(data), now));
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = rmpp
}
criterion_main!(benches);
