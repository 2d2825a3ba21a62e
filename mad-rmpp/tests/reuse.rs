//! Buffer reuse: the receiver's pool of reassembly buffers
//! (`ReceiverTable::recycle`) and the sender's message buffer
//! (`Sender::from_message` / `Sender::into_message`).

#![allow(clippy::unwrap_used)]

use mad_rmpp::{Outcome, Output, ReceiverConfig, ReceiverTable, Sender, SenderConfig};
use mad_wire::addr::Address;
mod support;
use support::sa_header;

use std::time::Instant;

const SRC: (u16, u32) = (5, 1);

/// `len` bytes of a pattern that depends on `seed`.
fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
        .collect()
}

/// Every segment of the message, as an open-window sender emits them.
fn segments(header: &[u8], data: &[u8], now: Instant) -> Vec<Vec<u8>> {
    let cfg = SenderConfig {
        initial_window: u32::MAX,
        ..SenderConfig::default()
    };
    let mut tx = Sender::new(header, data, cfg, now).unwrap();
    std::iter::from_fn(|| tx.poll_transmit(now)).collect()
}

/// A table whose window admits every segment of the test messages at once,
/// so segments may arrive in any order after segment 1.
fn table(cfg: ReceiverConfig) -> ReceiverTable {
    ReceiverTable::new(ReceiverConfig {
        window: 100_000,
        ..cfg
    })
}

/// Feeds segment 1, then the others in `order` (indices into the rest);
/// returns the delivered message.
fn deliver(rx: &mut ReceiverTable, segs: &[Vec<u8>], order: &[usize], now: Instant) -> Vec<u8> {
    rx.handle(&segs[0], &Address::gsi(SRC.0), now);
    for &i in order {
        rx.handle(&segs[1 + i], &Address::gsi(SRC.0), now);
    }
    let mut delivered = None;
    while let Some(o) = rx.poll_output() {
        if let Output::Delivered { message, .. } = o {
            delivered = Some(message);
        }
    }
    delivered.expect("the message is delivered")
}

/// Message `tid` (`sa_header(tid)` and `data`) segmented and fed to `rx`
/// in `order`: the delivered message and its header.
fn receive(
    rx: &mut ReceiverTable,
    tid: u64,
    data: &[u8],
    order: fn(&[Vec<u8>]) -> Vec<usize>,
    now: Instant,
) -> (Vec<u8>, Vec<u8>) {
    let header = sa_header(tid);
    let segs = segments(&header, data, now);
    (deliver(rx, &segs, &order(&segs), now), header)
}

fn in_order(segs: &[Vec<u8>]) -> Vec<usize> {
    (0..segs.len() - 1).collect()
}

/// Last segment first, then the rest from the back, evens before odds:
/// every placement but the first leaves a gap behind it.
fn scrambled(segs: &[Vec<u8>]) -> Vec<usize> {
    let n = segs.len() - 1;
    let mut order: Vec<usize> = (0..n).rev().filter(|i| i % 2 == 0).collect();
    order.extend((0..n).rev().filter(|i| i % 2 == 1));
    order
}

fn message(header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = header.to_vec();
    m.extend_from_slice(data);
    m
}

/// True when `m` is `header` then `data` (the RMPP header, bytes 24..36,
/// is segment 1's and not compared), without printing megabytes on failure.
fn is_message(m: &[u8], header: &[u8], data: &[u8]) -> bool {
    m.len() == header.len() + data.len()
        && m[..24] == header[..24]
        && m[36..header.len()] == header[36..]
        && m[header.len()..] == *data
}

#[test]
fn a_recycled_buffer_receives_the_next_large_message() {
    let now = Instant::now();
    let mut rx = table(ReceiverConfig::default());
    let d1 = data(100_000, 1);
    let (a, h1) = receive(&mut rx, 1, &d1, in_order, now);
    assert!(is_message(&a, &h1, &d1));
    let (ptr, cap) = (a.as_ptr(), a.capacity());
    rx.recycle(a);
    assert_eq!(rx.pooled_buffers(), 1);
    assert_eq!(rx.pooled_bytes(), cap);

    let d2 = data(100_000, 2);
    let (b, h2) = receive(&mut rx, 2, &d2, in_order, now);
    assert!(is_message(&b, &h2, &d2));
    assert_eq!(b.as_ptr(), ptr, "the recycled allocation is reused");
    assert_eq!(b.capacity(), cap, "and not reallocated");
    assert_eq!(
        rx.pooled_buffers(),
        0,
        "the transfer took it out of the pool"
    );
}

#[test]
fn a_recycled_buffer_never_leaks_old_bytes_into_a_shorter_scrambled_message() {
    let now = Instant::now();
    let mut rx = table(ReceiverConfig::default());
    let (a, _) = receive(&mut rx, 1, &[0xAA; 60_000], in_order, now);
    let ptr = a.as_ptr();
    rx.recycle(a);
    // B is shorter, ends mid-segment, and arrives last segment first with
    // gaps: every byte of it must be B's own.
    let db = data(20_001, 7);
    let (b, hb) = receive(&mut rx, 2, &db, scrambled, now);
    assert_eq!(b.as_ptr(), ptr, "B was reassembled in A's buffer");
    assert_eq!(b.len(), 56 + 20_001);
    assert!(is_message(&b, &hb, &db));
    assert!(!b.contains(&0xAA), "no byte of A survives in B");
}

#[test]
fn the_buffer_of_an_aborted_transfer_is_reused_without_its_bytes() {
    let now = Instant::now();
    let mut rx = table(ReceiverConfig::default());
    // A stops half-way: the sender aborts it.
    let (ha, da) = (sa_header(1), vec![0xAA; 60_000]);
    let sa = segments(&ha, &da, now);
    for s in &sa[..sa.len() / 2] {
        rx.handle(s, &Address::gsi(SRC.0), now);
    }
    let mut abort = sa[0].clone();
    abort[25] = 3; // ABORT
    abort[26] = 0x01; // Active
    abort[27] = 118; // T2L
    rx.handle(&abort, &Address::gsi(SRC.0), now);
    let ended: Vec<Output> = std::iter::from_fn(|| rx.poll_output()).collect();
    assert!(ended.iter().any(|o| matches!(
        o,
        Output::Ended {
            outcome: Outcome::Aborted(_),
            ..
        }
    )));
    assert_eq!(rx.active(), 0);
    assert_eq!(rx.pooled_buffers(), 1, "the partial buffer is pooled");
    let db = data(30_000, 3);
    let (b, hb) = receive(&mut rx, 2, &db, scrambled, now);
    assert!(is_message(&b, &hb, &db));
}

#[test]
fn the_pool_never_holds_more_than_its_count_or_byte_budget() {
    let budget = 1 << 20;
    let cfg = ReceiverConfig {
        pool_buffers: 3,
        pool_bytes: budget,
        pool_min_len: 4096,
        ..ReceiverConfig::default()
    };
    let mut rx = table(cfg);
    let caps = [
        100_000,
        300_000,
        2 << 20,
        200_000,
        4096,
        500_000,
        50_000,
        400_000,
        1 << 20,
        10_000,
    ];
    for &c in &caps {
        let mut v = Vec::with_capacity(c);
        v.push(1u8);
        rx.recycle(v);
        assert!(rx.pooled_buffers() <= 3, "count bound");
        assert!(rx.pooled_bytes() <= budget, "byte bound");
    }
    // Too big for the budget, or too small to keep: never kept.
    let mut rx = table(cfg);
    rx.recycle(Vec::with_capacity(budget + 1));
    rx.recycle(Vec::with_capacity(4096));
    rx.recycle(Vec::new());
    assert_eq!((rx.pooled_buffers(), rx.pooled_bytes()), (0, 0));
    // The count bound drops the smallest buffers.
    for c in [10_000, 20_000, 30_000, 40_000] {
        rx.recycle(Vec::with_capacity(c));
    }
    assert_eq!(rx.pooled_buffers(), 3);
    assert_eq!(rx.pooled_bytes(), 90_000);
    // A pool of 0 buffers keeps nothing.
    let mut rx = table(ReceiverConfig {
        pool_buffers: 0,
        ..ReceiverConfig::default()
    });
    rx.recycle(Vec::with_capacity(100_000));
    assert_eq!(rx.pooled_buffers(), 0);
}

#[test]
fn a_transfer_takes_the_smallest_pooled_buffer_that_holds_its_claim() {
    let now = Instant::now();
    let mut rx = table(ReceiverConfig::default());
    let small = Vec::<u8>::with_capacity(64 << 10);
    let large = Vec::<u8>::with_capacity(1 << 20);
    let ps = small.as_ptr();
    rx.recycle(large);
    rx.recycle(small);
    let d = data(40_000, 4);
    let (m, h) = receive(&mut rx, 1, &d, in_order, now);
    assert!(is_message(&m, &h, &d));
    assert_eq!(m.as_ptr(), ps, "the 64 KiB buffer fits 40 kB");
    // A claim beyond every buffer takes the largest, which grows.
    let d = data(1_500_000, 5);
    let (m, h) = receive(&mut rx, 2, &d, in_order, now);
    assert!(is_message(&m, &h, &d));
    assert_eq!(rx.pooled_buffers(), 0, "the 1 MiB buffer was taken");
}

#[test]
fn a_small_message_leaves_the_pooled_buffers_alone() {
    let now = Instant::now();
    let mut rx = table(ReceiverConfig::default());
    let large = Vec::<u8>::with_capacity(1 << 20);
    rx.recycle(large);
    let d = data(1_000, 6);
    let (m, h) = receive(&mut rx, 1, &d, in_order, now);
    assert!(is_message(&m, &h, &d));
    assert_eq!(m.capacity(), m.len(), "a fresh buffer, shrunk to fit");
    assert_eq!(rx.pooled_buffers(), 1);
    assert_eq!(rx.pooled_bytes(), 1 << 20);
}

#[test]
fn clear_empties_the_pool() {
    let mut rx = table(ReceiverConfig::default());
    rx.recycle(Vec::with_capacity(1 << 20));
    assert_eq!(rx.pooled_buffers(), 1);
    rx.clear();
    assert_eq!((rx.pooled_buffers(), rx.pooled_bytes()), (0, 0));
}

#[test]
fn into_message_returns_the_exact_message_without_a_copy() {
    let now = Instant::now();
    let (h, d) = (sa_header(9), data(5_000, 8));
    let tx = Sender::new(&h, &d, SenderConfig::default(), now).unwrap();
    assert_eq!(tx.message(), message(&h, &d).as_slice());
    assert_eq!(tx.into_message(), message(&h, &d));

    // from_message keeps the caller's allocation; into_message gives it
    // back unchanged, even after segments went out.
    let m = message(&h, &d);
    let ptr = m.as_ptr();
    let mut tx = Sender::from_message(m, 56, SenderConfig::default(), now).unwrap();
    assert_eq!(tx.message().as_ptr(), ptr);
    assert!(tx.poll_transmit(now).is_some());
    let back = tx.into_message();
    assert_eq!(back.as_ptr(), ptr);
    assert!(back == message(&h, &d), "byte-exact");
}

#[test]
fn a_sender_rebuilt_from_its_own_buffer_sends_the_same_segments() {
    let now = Instant::now();
    let (h, d) = (sa_header(3), data(3_000, 9));
    let cfg = SenderConfig {
        initial_window: u32::MAX,
        ..SenderConfig::default()
    };
    let mut tx = Sender::new(&h, &d, cfg, now).unwrap();
    let first: Vec<Vec<u8>> = std::iter::from_fn(|| tx.poll_transmit(now)).collect();
    let mut tx = Sender::from_message(tx.into_message(), 56, cfg, now).unwrap();
    let again: Vec<Vec<u8>> = std::iter::from_fn(|| tx.poll_transmit(now)).collect();
    assert_eq!(first, again);
}
