//! Model tests: a sender and a receiver table joined by a lossy, duplicating,
//! reordering, delaying channel on a virtual clock. Every transfer must end
//! with the payload delivered byte-identical, or with a clear status on both
//! sides, and leave no state behind.

#![allow(clippy::unwrap_used)]

use mad_rmpp::{Outcome, Output, ReceiverConfig, ReceiverTable, SendEvent, Sender, SenderConfig};
use mad_wire::addr::Address;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
mod support;
use support::sa_header;

use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 < p
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Clone, Copy, Debug)]
struct Faults {
    loss: f64,
    dup: f64,
    /// Maximum extra delay (reordering comes from different delays).
    jitter_us: u64,
}

const CLEAN: Faults = Faults {
    loss: 0.0,
    dup: 0.0,
    jitter_us: 0,
};

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    at: Duration,
    seq: u64,
    to_receiver: bool,
    mad: Vec<u8>,
}

struct Result_ {
    sender: Outcome,
    delivered: Option<Vec<u8>>,
    receiver_ended: Option<Outcome>,
    /// Virtual time at which the sender finished.
    elapsed: Duration,
}

fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng(seed | 1);
    (0..len).map(|_| r.next() as u8).collect()
}

fn run(data: &[u8], faults: Faults, seed: u64, scfg: SenderConfig) -> Result_ {
    let base = Instant::now();
    let mut now = Duration::ZERO;
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let header = sa_header(0x1234_0000_0000_0000 | seed);
    let mut tx = Sender::new(&header, data, scfg, base).unwrap();
    let mut rx = ReceiverTable::new(ReceiverConfig::default());
    let mut net: BinaryHeap<Reverse<InFlight>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut sender_outcome = None;
    let mut delivered = None;
    let mut receiver_ended = None;
    let mut finished_at = Duration::ZERO;
    let mut send = |net: &mut BinaryHeap<Reverse<InFlight>>,
                    rng: &mut Rng,
                    now: Duration,
                    to_rx: bool,
                    mad: Vec<u8>| {
        if rng.chance(faults.loss) {
            return;
        }
        let copies = if rng.chance(faults.dup) { 2 } else { 1 };
        for _ in 0..copies {
            let delay = Duration::from_micros(5 + rng.below(faults.jitter_us + 1));
            seq += 1;
            net.push(Reverse(InFlight {
                at: now + delay,
                seq,
                to_receiver: to_rx,
                mad: mad.clone(),
            }));
        }
    };
    for _step in 0..5_000_000u64 {
        let t = base + now;
        while let Some(m) = tx.poll_transmit(t) {
            send(&mut net, &mut rng, now, true, m);
        }
        while let Some(o) = rx.poll_output() {
            match o {
                Output::Send { mad, .. } => send(&mut net, &mut rng, now, false, mad),
                Output::Delivered { message, .. } => {
                    assert!(delivered.is_none(), "delivered twice");
                    delivered = Some(message);
                }
                Output::Ended { outcome, .. } => {
                    assert!(receiver_ended.is_none(), "receiver ended twice");
                    receiver_ended = Some(outcome);
                }
            }
        }
        while let Some(e) = tx.poll_event() {
            if let SendEvent::Finished(o) = e {
                assert!(sender_outcome.is_none(), "sender finished twice");
                sender_outcome = Some(o);
                finished_at = now;
            }
        }
        if sender_outcome.is_some() && rx.is_empty() && net.is_empty() {
            break;
        }
        // Advance the virtual clock to the next event.
        let next_net = net.peek().map(|Reverse(f)| f.at);
        let next_timer = [tx.poll_timeout(), rx.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .map(|i| i - base);
        let next = match (next_net, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        now = now.max(next);
        let t = base + now;
        while net.peek().is_some_and(|Reverse(f)| f.at <= now) {
            let Reverse(f) = net.pop().unwrap();
            if f.to_receiver {
                rx.handle(&f.mad, &Address::gsi(7), t);
            } else {
                tx.handle_reply(&f.mad, t);
            }
        }
        tx.handle_timeout(t);
        rx.handle_timeout(t);
    }
    Result_ {
        sender: sender_outcome.expect("sender never finished"),
        delivered,
        receiver_ended,
        elapsed: finished_at,
    }
}

fn check(data: &[u8], r: &Result_) {
    match r.sender {
        Outcome::Success => {
            let m = r
                .delivered
                .as_ref()
                .expect("sender succeeded but nothing was delivered");
            assert_eq!(m.len(), 56 + data.len());
            assert!(m[56..] == *data, "payload differs");
        }
        other => {
            // A failed send: the receiver either never saw segment 1, or it
            // ended with a status of its own / delivered before the final
            // ACK was lost for good.
            assert!(
                matches!(other, Outcome::TimedOut | Outcome::Aborted(_)),
                "{other:?}"
            );
            if let Some(m) = &r.delivered {
                assert!(m[56..] == *data, "payload differs");
            }
        }
    }
    if let Some(o) = r.receiver_ended {
        assert!(
            matches!(o, Outcome::TimedOut | Outcome::Aborted(_)),
            "{o:?}"
        );
    }
}

/// The default sender configuration with `retries` retries.
fn retrying(retries: u32) -> SenderConfig {
    SenderConfig {
        retries,
        ..SenderConfig::default()
    }
}

#[test]
fn transfers_of_every_interesting_size_complete_on_a_clean_channel() {
    // 0 and 1 records, exactly a window, a window plus one, 10,000 records.
    for len in [0usize, 112, 64 * 200, 65 * 200, 10_000 * 112] {
        let data = payload(len, len as u64 + 1);
        let r = run(&data, CLEAN, 1, SenderConfig::default());
        assert_eq!(r.sender, Outcome::Success, "len {len}");
        check(&data, &r);
        assert!(r.receiver_ended.is_none());
    }
}

#[test]
fn transfers_complete_under_one_and_ten_percent_loss_with_duplicates_and_reordering() {
    let cfg = retrying(20);
    for (loss, seeds) in [(0.01, 0..20u64), (0.10, 20..40)] {
        for seed in seeds {
            let len = 200 * (1 + (seed as usize * 37) % 300);
            let data = payload(len, seed);
            let f = Faults {
                loss,
                dup: 0.05,
                jitter_us: 200,
            };
            let r = run(&data, f, seed, cfg);
            assert_eq!(
                r.sender,
                Outcome::Success,
                "loss {loss} seed {seed} len {len}"
            );
            check(&data, &r);
        }
    }
}

#[test]
fn thirty_percent_loss_completes_or_ends_with_a_clear_status() {
    let mut ok = 0;
    for seed in 100..130u64 {
        let data = payload(200 * 100, seed);
        let f = Faults {
            loss: 0.30,
            dup: 0.02,
            jitter_us: 500,
        };
        let r = run(&data, f, seed, retrying(30));
        check(&data, &r);
        if r.sender == Outcome::Success {
            ok += 1;
        }
    }
    assert!(
        ok > 20,
        "only {ok} of 30 completed at 30% loss with 30 retries"
    );
}

#[test]
fn loss_that_outlasts_the_retries_times_out_on_both_sides() {
    let data = payload(200 * 50, 9);
    let f = Faults {
        loss: 0.9,
        dup: 0.0,
        jitter_us: 0,
    };
    let r = run(&data, f, 3, retrying(2));
    assert_eq!(r.sender, Outcome::TimedOut);
    check(&data, &r);
}

#[test]
fn a_1_mib_table_takes_no_retransmission_on_a_clean_channel() {
    let data = payload(1 << 20, 5);
    let r = run(&data, CLEAN, 5, SenderConfig::default());
    assert_eq!(r.sender, Outcome::Success);
    check(&data, &r);
    assert!(r.elapsed < Duration::from_secs(1), "{:?}", r.elapsed);
}
