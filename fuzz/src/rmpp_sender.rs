//! Operation sequences on one RMPP [`Sender`]: the peer's replies (ACK,
//! STOP, ABORT built on the segments actually sent, with arbitrary segment
//! numbers, windows and statuses, and raw bytes), timeouts, time jumps and
//! cancel, with the sender's invariants checked after every step and its
//! termination checked at the end.

use crate::clock::Clock;
use crate::ops::Ops;
use crate::raw_rmpp::RawRmppHeader;
use arbitrary::{Arbitrary, Unstructured};
use mad_rmpp::segment::read_header;
use mad_rmpp::{Outcome, RmppStatus, RmppType, SendEvent, Sender, SenderConfig};
use mad_wire::wire::MAD_LEN;
use std::time::Duration;

/// How the sender under test is set up.
#[derive(Arbitrary, Debug)]
struct Setup {
    /// Class header: SA (56), vendor range 2 (40), DevMgt (64), bare (36).
    class: u8,
    /// Data bytes (taken modulo 6000: up to about 30 segments).
    data_len: u16,
    /// First window (modulo 70).
    initial_window: u8,
    /// Retries (modulo 6).
    retries: u8,
    /// ACK timeout in ms (1..=2000).
    ack_timeout_ms: u16,
    /// A response is expected after the last ACK.
    expects_response: bool,
    /// Seed of the data bytes.
    seed: u8,
}

/// A segment number the peer names in a reply.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Seg {
    /// The n-th distinct segment number sent so far (modulo their count).
    Sent(u8),
    /// The highest segment sent so far.
    Highest,
    /// The sender's last acknowledged segment.
    LastAck,
    /// The message's last segment.
    Count,
    /// Any number.
    Raw(u32),
}

/// A window the peer grants in an ACK.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Win {
    /// The acknowledged segment plus this many.
    Plus(u8),
    /// Exactly the acknowledged segment (a closed window).
    Closed,
    /// The message's last segment.
    Count,
    /// Any number.
    Raw(u32),
}

/// One step of the peer, the owner or the clock.
#[derive(Arbitrary, Debug)]
enum Op {
    /// Posts up to this many due MADs.
    Transmit(u8),
    /// An ACK built on a sent segment.
    Ack {
        /// Acknowledged segment.
        seg: Seg,
        /// New window last.
        win: Win,
        /// Status (0: SUCCESS).
        status: u8,
    },
    /// A STOP with this status.
    Stop(u8),
    /// An ABORT with this status.
    Abort(u8),
    /// Any RMPP header on a sent segment.
    Header(RawRmppHeader),
    /// Raw bytes as a reply.
    Raw(Vec<u8>),
    /// `handle_timeout` now.
    Timeout,
    /// The clock moves this many ms.
    Advance(u16),
    /// The clock moves to the sender's deadline, and `handle_timeout`.
    ToDeadline,
    /// The owner cancels.
    Cancel,
}

/// What the harness knows of the sender.
struct Model {
    count: u32,
    message: Vec<u8>,
    hdr_len: usize,
    expects_response: bool,
    /// Distinct DATA segment numbers sent, in first-sent order.
    sent: Vec<u32>,
    /// Highest segment sent.
    highest: u32,
    /// The largest window the peer granted in an ACK (or the first).
    max_window: u32,
    /// The last MAD the sender posted (template of the replies).
    template: Vec<u8>,
    last_ack: u32,
    all_acked: bool,
    finished: Option<Outcome>,
}

impl Model {
    fn seg(&self, s: Seg, sender: &Sender) -> u32 {
        match s {
            Seg::Sent(i) if !self.sent.is_empty() => self.sent[usize::from(i) % self.sent.len()],
            Seg::Sent(_) => 1,
            Seg::Highest => self.highest,
            Seg::LastAck => sender.last_ack(),
            Seg::Count => self.count,
            Seg::Raw(n) => n,
        }
    }

    fn reply(&self, h: &RawRmppHeader) -> Vec<u8> {
        let mut m = self.template.clone();
        mad_testkit::header::edit(&mut m, |mh| mh.response = !mh.response);
        h.write(&mut m);
        m
    }

    /// Posts up to `max` MADs and checks each.
    fn transmit(&mut self, s: &mut Sender, clock: &Clock, max: usize) {
        let mut short = [0u8; MAD_LEN - 1];
        assert_eq!(s.poll_transmit_into(clock.now(), &mut short), None);
        for _ in 0..max {
            let Some(m) = s.poll_transmit(clock.now()) else {
                break;
            };
            self.check_posted(&m);
        }
    }

    fn check_posted(&mut self, m: &[u8]) {
        assert_eq!(m.len(), MAD_LEN);
        let h = read_header(m).unwrap();
        assert!(h.is_active());
        if h.rmpp_type != RmppType::DATA {
            // An ABORT, or the DS ACK of a fully acknowledged request.
            assert!(
                h.rmpp_type == RmppType::ABORT
                    || (h.rmpp_type == RmppType::ACK && self.expects_response && self.all_acked),
                "unexpected control MAD {h:?}"
            );
            assert_eq!(&m[..24], &self.message[..24], "control MAD header");
            return;
        }
        assert!(self.finished.is_none(), "DATA after the end: {h:?}");
        assert!(!self.all_acked, "DATA after every segment was acknowledged");
        let n = h.data1;
        assert!(
            n >= 1 && n <= self.count,
            "segment {n} outside 1..={}",
            self.count
        );
        assert!(
            n <= self.max_window,
            "segment {n} beyond the window {}",
            self.max_window
        );
        assert!(
            n > self.last_ack,
            "segment {n} was acknowledged ({})",
            self.last_ack
        );
        assert_eq!(h.is_first(), n == 1);
        assert_eq!(h.is_last(), n == self.count);
        // The segment carries exactly its slice of the message.
        let seg_size = MAD_LEN - self.hdr_len;
        assert_eq!(&m[..24], &self.message[..24]);
        assert_eq!(&m[36..self.hdr_len], &self.message[36..self.hdr_len]);
        let start = self.hdr_len + (n as usize - 1) * seg_size;
        let end = (start + seg_size).min(self.message.len());
        let len = end - start;
        assert_eq!(
            &m[self.hdr_len..self.hdr_len + len],
            &self.message[start..end]
        );
        assert!(m[self.hdr_len + len..].iter().all(|b| *b == 0), "padding");
        if !self.sent.contains(&n) {
            self.sent.push(n);
        }
        self.highest = self.highest.max(n);
        self.template = m.to_vec();
    }

    /// Takes the sender's events and checks its state.
    fn check(&mut self, s: &mut Sender) {
        while let Some(ev) = s.poll_event() {
            assert!(self.finished.is_none(), "event {ev:?} after the end");
            match ev {
                SendEvent::AllAcked => {
                    assert!(
                        self.expects_response,
                        "AllAcked without a response expected"
                    );
                    assert!(!self.all_acked, "AllAcked twice");
                    self.all_acked = true;
                }
                SendEvent::Finished(o) => {
                    if o == Outcome::Success {
                        assert!(!self.expects_response, "success while a response is due");
                        assert_eq!(s.last_ack(), self.count, "success before the last ACK");
                    }
                    self.finished = Some(o);
                }
            }
        }
        assert_eq!(s.is_finished(), self.finished.is_some(), "is_finished");
        if s.is_finished() || self.all_acked {
            assert_eq!(s.poll_timeout(), None, "a timer after the transfer ended");
        }
        let la = s.last_ack();
        assert!(
            la >= self.last_ack,
            "last_ack went back: {} -> {la}",
            self.last_ack
        );
        // (An ACK may name a segment inside the window not sent yet, as
        // the kernel allows; it may not name one past the message.)
        assert!(la <= self.count, "last_ack {la} past the message");
        self.last_ack = la;
        assert_eq!(s.is_all_acked(), la == self.count);
        if self.all_acked {
            assert!(s.is_all_acked());
        }
        assert_eq!(s.message(), &self.message[..]);
    }
}

/// Runs one operation sequence against a [`Sender`].
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(setup) = Setup::arbitrary(&mut u) else {
        return;
    };
    let (class, hdr_len) = match setup.class % 4 {
        0 => (0x03, 56),
        1 => (0x32, 40),
        2 => (0x06, 64),
        _ => (0x03, 36),
    };
    let mut hdr = vec![0u8; hdr_len];
    mad_testkit::header::edit(&mut hdr, |h| {
        h.base_version = 1;
        h.mgmt_class = mad_wire::wire::MgmtClass(class);
        h.class_version = 2;
        h.method = mad_wire::wire::Method::GET_TABLE;
        h.response = true;
        h.tid = 0x1234_5678_9abc_def0;
    });
    let data_len = usize::from(setup.data_len) % 6000;
    let body: Vec<u8> = (0..data_len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(setup.seed))
        .collect();
    let cfg = SenderConfig {
        ack_timeout: Duration::from_millis(u64::from(setup.ack_timeout_ms % 2000) + 1),
        retries: u32::from(setup.retries % 6),
        initial_window: u32::from(setup.initial_window % 70),
        expects_response: setup.expects_response,
        resp_time: 0x1F,
    };
    let mut clock = Clock::new();
    let mut s = Sender::new(&hdr, &body, cfg, clock.now()).unwrap();
    let mut message = hdr.clone();
    message.extend_from_slice(&body);
    let mut m = Model {
        count: s.geometry().count,
        message,
        hdr_len,
        expects_response: setup.expects_response,
        sent: Vec::new(),
        highest: 0,
        max_window: cfg.initial_window.max(1),
        template: {
            let mut t = vec![0u8; MAD_LEN];
            t[..hdr_len].copy_from_slice(&hdr);
            t
        },
        last_ack: 0,
        all_acked: false,
        finished: None,
    };
    assert_eq!(s.poll_timeout(), None, "a timer before anything was sent");
    for op in Ops::<Op>::new(&mut u, 400) {
        let now = clock.now();
        match op {
            Op::Transmit(n) => m.transmit(&mut s, &clock, usize::from(n)),
            Op::Ack { seg, win, status } => {
                let d1 = m.seg(seg, &s);
                let d2 = match win {
                    Win::Plus(k) => d1.saturating_add(u32::from(k)),
                    Win::Closed => d1,
                    Win::Count => m.count,
                    Win::Raw(n) => n,
                };
                let reply = m.reply(&RawRmppHeader::active(RmppType::ACK, status, d1, d2));
                // A window the sender may use: only a valid ACK opens it.
                if status == 0 && d2 >= d1 {
                    m.max_window = m.max_window.max(d2);
                }
                s.handle_reply(&reply, now);
            }
            Op::Stop(st) => {
                let r = m.reply(&RawRmppHeader::active(RmppType::STOP, st, 0, 0));
                s.handle_reply(&r, now);
            }
            Op::Abort(st) => {
                let r = m.reply(&RawRmppHeader::active(RmppType::ABORT, st, 0, 0));
                s.handle_reply(&r, now);
            }
            Op::Header(raw) => {
                let r = m.reply(&raw);
                let h = read_header(&r).unwrap();
                if h.is_active() && h.rmpp_type == RmppType::ACK && h.version == 1 {
                    if h.status == RmppStatus::SUCCESS && raw.d2 >= raw.d1 {
                        m.max_window = m.max_window.max(raw.d2);
                    }
                }
                s.handle_reply(&r, now);
            }
            Op::Raw(bytes) => {
                if let Ok(h) = read_header(&bytes) {
                    if h.is_active()
                        && h.version == 1
                        && h.rmpp_type == RmppType::ACK
                        && h.status == RmppStatus::SUCCESS
                        && h.data2 >= h.data1
                    {
                        m.max_window = m.max_window.max(h.data2);
                    }
                }
                s.handle_reply(&bytes, now);
            }
            Op::Timeout => s.handle_timeout(now),
            Op::Advance(ms) => clock.advance(Duration::from_millis(u64::from(ms))),
            Op::ToDeadline => {
                if let Some(d) = s.poll_timeout() {
                    clock.advance_to(d);
                }
                s.handle_timeout(clock.now());
            }
            Op::Cancel => s.cancel(),
        }
        m.check(&mut s);
    }
    // With the peer silent the sender ends: every timeout spends a retry,
    // so after `retries + 1` of them it has timed out (unless it is a
    // request whose segments are all acknowledged: it then waits for the
    // response, with no timer, until its owner ends it).
    for _ in 0..=cfg.retries + 1 {
        m.transmit(&mut s, &clock, usize::MAX);
        m.check(&mut s);
        match s.poll_timeout() {
            Some(d) => {
                clock.advance_to(d);
                s.handle_timeout(clock.now());
            }
            None => break,
        }
        m.check(&mut s);
    }
    m.transmit(&mut s, &clock, usize::MAX);
    m.check(&mut s);
    if m.finished.is_none() {
        assert!(
            m.all_acked && m.expects_response,
            "the sender neither finished nor has a timer (last_ack {} of {}, highest sent {})",
            s.last_ack(),
            m.count,
            m.highest
        );
        s.cancel();
        m.check(&mut s);
    }
    assert!(m.finished.is_some(), "Finished was never reported");
    // Nothing more, whatever comes late.
    s.handle_timeout(clock.now() + Duration::from_secs(3600));
    s.cancel();
    m.transmit(&mut s, &clock, usize::MAX);
    m.check(&mut s);
    assert_eq!(s.poll_timeout(), None);
    assert_eq!(s.into_message(), m.message);
}
