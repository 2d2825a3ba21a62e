//! The RMPP sender: segmentation, the ACK window, retransmission.
//!
//! One [`Sender`] per outbound message. Drive it with:
//! - [`Sender::poll_transmit`] (or `_into`) until it returns `None`: each
//!   call yields one MAD to post (a DATA segment, or an ABORT / DS ACK);
//! - [`Sender::handle_reply`] for every ACK, STOP or ABORT the peer sends
//!   for this transfer (the caller matches them by TID and address);
//! - [`Sender::handle_timeout`] when [`Sender::poll_timeout`] has passed
//!   (calling it early does nothing);
//! - [`Sender::poll_event`] for the outcome.
//!
//! Window: the first window is `initial_window` segments (1, or the window
//! the requester advertised for a double-sided response); the receiver's
//! ACKs move it. All segments up to the window are released back to back;
//! the kernel releases one per send completion, which only changes pacing.
//! On timeout the sender goes back to the first unacknowledged segment
//! (go-back-N) and spends one retry; the retry budget is restored whenever
//! an ACK advances. An ACK that acknowledges nothing new (a repeated or
//! stale one) never moves the ACK timer, so a peer that keeps talking
//! without making progress cannot keep a transfer alive: the retries run
//! out all the same. Nor can a receiver that acknowledges without opening
//! the window (an ACK whose window ends at the acknowledged segment): the
//! ACK timer keeps running while nothing may be sent, and each expiry
//! spends a retry. When they run out the transfer ends `TimedOut` and,
//! unlike the kernel, an ABORT(TMR) tells the receiver so it can free its
//! state at once instead of after its 40 s total timer.

use crate::segment::{
    flip_response_bit, header, read_header, write_header, Geometry, Header, RmppStatus, RmppType,
    FLAG_ACTIVE, FLAG_FIRST, FLAG_LAST, MAD_LEN,
};
use crate::{Error, Outcome};
use mad_wire::wire::rmpp::{RmppView, RMPP_HEADER_LEN};
use mad_wire::wire::{Mad, Repr, MAD_HEADER_LEN, RMPP_HEADER_END};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Sender parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderConfig {
    /// How long to wait for an ACK before going back (kernel: the client's
    /// timeout if it is 1..=2000 ms, else 2 s).
    pub ack_timeout: Duration,
    /// Retries per window.
    pub retries: u32,
    /// First window (1 unless this is a response to a double-sided request).
    pub initial_window: u32,
    /// A response is expected after the last ACK: the sender then sends a
    /// DS ACK and reports [`SendEvent::AllAcked`] instead of finishing.
    pub expects_response: bool,
    /// RRespTime to put in the segments (0x1F: none given).
    pub resp_time: u8,
}

impl Default for SenderConfig {
    fn default() -> Self {
        Self {
            ack_timeout: Duration::from_secs(2),
            retries: 3,
            initial_window: 1,
            expects_response: false,
            resp_time: 0x1F,
        }
    }
}

impl SenderConfig {
    /// The kernel's ACK timeout for a client timeout of `timeout`.
    #[must_use]
    pub fn kernel_ack_timeout(timeout: Duration) -> Duration {
        if timeout.is_zero() || timeout > Duration::from_secs(2) {
            Duration::from_secs(2)
        } else {
            timeout
        }
    }
}

/// What the sender reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendEvent {
    /// Every segment is acknowledged and a response is expected: the owner
    /// now waits for it (with its own response timeout).
    AllAcked,
    /// The transfer ended.
    Finished(Outcome),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Active,
    AwaitingResponse,
    Finished,
}

/// One outbound RMPP message.
#[derive(Debug)]
pub struct Sender {
    /// Header followed by the data.
    message: Vec<u8>,
    geom: Geometry,
    cfg: SenderConfig,
    /// Highest segment sent in the current pass.
    seg_sent: u32,
    /// Highest segment acknowledged.
    last_ack: u32,
    /// Highest segment the receiver accepts.
    newwin: u32,
    retries_left: u32,
    /// Retransmission passes made (go-back-N restarts).
    pub retransmissions: u32,
    /// When the ACK timer was last armed (a segment sent, or a wait
    /// started); it expires `cfg.ack_timeout` later. Kept as the arming
    /// time, not the deadline, so a burst of segments does not add a
    /// duration to an `Instant` per segment.
    armed_at: Option<Instant>,
    /// The RMPP header of a middle DATA segment (Data1 and Data2 zero),
    /// written once here and copied into each segment.
    data_template: [u8; RMPP_HEADER_LEN],
    state: State,
    control: VecDeque<Vec<u8>>,
    events: VecDeque<SendEvent>,
}

impl Sender {
    /// A sender for `data` behind `header` (the class header: common MAD
    /// header, RMPP header and class header — 56 bytes for SA).
    ///
    /// # Errors
    /// A header of the wrong size.
    pub fn new(header: &[u8], data: &[u8], cfg: SenderConfig, now: Instant) -> Result<Self, Error> {
        let mut message = Vec::with_capacity(header.len() + data.len());
        message.extend_from_slice(header);
        message.extend_from_slice(data);
        Self::from_message(message, header.len(), cfg, now)
    }

    /// A sender for an assembled message (`hdr_len` header bytes, then data).
    /// The sender owns `message` and never copies it whole: each segment
    /// is written from it on demand, and [`Sender::into_message`] gives it
    /// back.
    ///
    /// # Errors
    /// A header length outside 36..256 or longer than the message.
    pub fn from_message(
        message: Vec<u8>,
        hdr_len: usize,
        cfg: SenderConfig,
        _now: Instant,
    ) -> Result<Self, Error> {
        if message.len() < hdr_len {
            return Err(Error::Malformed {
                reason: "message shorter than its class header",
                value: message.len() as u64,
            });
        }
        let geom = Geometry::new(hdr_len, message.len() - hdr_len)?;
        let mut data_template = [0u8; RMPP_HEADER_LEN];
        let h = header(
            RmppType::DATA,
            cfg.resp_time,
            FLAG_ACTIVE,
            RmppStatus::SUCCESS,
            0,
            0,
        );
        // Every field of a header built by `header` fits its bit range.
        let _ = h.emit(&mut data_template);
        Ok(Self {
            message,
            geom,
            cfg,
            seg_sent: 0,
            last_ack: 0,
            newwin: cfg.initial_window.max(1),
            retries_left: cfg.retries,
            retransmissions: 0,
            armed_at: None,
            data_template,
            state: State::Active,
            control: VecDeque::new(),
            events: VecDeque::new(),
        })
    }

    /// The whole message (class header, then data) this sender segments.
    #[must_use]
    pub fn message(&self) -> &[u8] {
        &self.message
    }

    /// Ends this sender and gives back its message buffer, unchanged: to
    /// start the transfer again (a new sender from the same bytes, no
    /// copy), or to clear it and build the next message in the same
    /// allocation (see [`Sender::from_message`]).
    #[must_use]
    pub fn into_message(self) -> Vec<u8> {
        self.message
    }

    /// Segment geometry.
    #[must_use]
    pub fn geometry(&self) -> Geometry {
        self.geom
    }

    /// The TID of the message (header bytes 8..16).
    #[must_use]
    pub fn tid(&self) -> u64 {
        Mad::new_unchecked(&self.message[..]).tid()
    }

    /// True once the transfer has ended (any outcome).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.state == State::Finished
    }

    /// Highest acknowledged segment.
    #[must_use]
    pub fn last_ack(&self) -> u32 {
        self.last_ack
    }

    /// Next outcome or milestone.
    pub fn poll_event(&mut self) -> Option<SendEvent> {
        self.events.pop_front()
    }

    /// When [`Sender::handle_timeout`] must be called next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Active => self.deadline(),
            _ => None,
        }
    }

    /// When the armed ACK timer expires.
    fn deadline(&self) -> Option<Instant> {
        self.armed_at.map(|t| t + self.cfg.ack_timeout)
    }

    fn finish(&mut self, outcome: Outcome) {
        if self.state != State::Finished {
            self.state = State::Finished;
            self.armed_at = None;
            self.events.push_back(SendEvent::Finished(outcome));
        }
    }

    /// A control MAD (ACK/ABORT/STOP) built on this message's header.
    fn control_mad(&self, rtype: RmppType, status: RmppStatus, seg: u32, data2: u32) -> Vec<u8> {
        let mut m = vec![0u8; MAD_LEN];
        let h = self.geom.hdr_len.min(MAD_LEN);
        m[..h].copy_from_slice(&self.message[..h]);
        write_header(
            &header(rtype, self.cfg.resp_time, FLAG_ACTIVE, status, seg, data2),
            &mut m,
        );
        m
    }

    /// Answers a bad reply with ABORT(`st`) and ends the transfer if it
    /// is still in progress. A fully acknowledged transfer only answers
    /// (the kernel's `nack_recv`; its `abort_send` leaves a send whose
    /// segments are all acknowledged alone).
    fn abort(&mut self, st: RmppStatus) {
        if self.state == State::Finished {
            return;
        }
        let m = self.control_mad(RmppType::ABORT, st, 0, 0);
        self.control.push_back(m);
        if self.state == State::Active {
            self.finish(Outcome::Aborted(st));
        }
    }

    /// True once every segment has been acknowledged (the transfer may
    /// still wait for a response, or be finished).
    #[must_use]
    pub fn is_all_acked(&self) -> bool {
        self.last_ack == self.geom.count
    }

    /// Ends the transfer at the owner's request; nothing more is sent.
    pub fn cancel(&mut self) {
        self.finish(Outcome::Canceled);
    }

    /// Ends the transfer as [`Outcome::TimedOut`] without resending and
    /// without the ABORT(TMR) that [`Sender::handle_timeout`] sends when
    /// the retries run out: for an owner that gives up on a receiver that
    /// never acknowledged anything (nothing has reassembly state to free,
    /// or it never answers), where a stray ABORT would only reach
    /// whoever holds the receiver's address and TID next. Does nothing to
    /// a finished transfer.
    pub fn give_up(&mut self) {
        self.finish(Outcome::TimedOut);
    }

    /// Writes segment `n` (1-based) into `out` (at least 256 bytes).
    fn write_segment(&self, n: u32, out: &mut [u8]) {
        let g = &self.geom;
        out[..g.hdr_len].copy_from_slice(&self.message[..g.hdr_len]);
        let start = g.hdr_len + (n as usize - 1) * g.seg_size;
        let end = (start + g.seg_size).min(self.message.len());
        let len = end.saturating_sub(start);
        out[g.hdr_len..g.hdr_len + len].copy_from_slice(&self.message[start..end]);
        out[g.hdr_len + len..MAD_LEN]
            .iter_mut()
            .for_each(|b| *b = 0);
        // The fields every DATA segment shares come from the template;
        // then the segment's own: its number, and on the first and last
        // segment their flags and PayloadLength.
        out[MAD_HEADER_LEN..RMPP_HEADER_END].copy_from_slice(&self.data_template);
        let mut v = RmppView::new_unchecked(out);
        v.set_data1(n);
        if n == 1 || n == g.count {
            let mut flags = FLAG_ACTIVE;
            if n == 1 {
                flags |= FLAG_FIRST;
            }
            if n == g.count {
                flags |= FLAG_LAST;
            }
            v.set_flags(flags);
            v.set_data2(g.payload_length(n));
        }
    }

    /// Writes the next MAD to post into `out` (256 bytes) and returns its
    /// segment number (0 for a control MAD), or `None` when nothing is due.
    pub fn poll_transmit_into(&mut self, now: Instant, out: &mut [u8]) -> Option<u32> {
        if out.len() < MAD_LEN {
            return None;
        }
        if let Some(c) = self.control.pop_front() {
            out[..MAD_LEN].copy_from_slice(&c);
            return Some(0);
        }
        if self.state != State::Active {
            return None;
        }
        let limit = self.newwin.min(self.geom.count);
        if self.seg_sent >= limit {
            return None;
        }
        self.seg_sent += 1;
        let n = self.seg_sent;
        self.write_segment(n, out);
        self.armed_at = Some(now);
        Some(n)
    }

    /// The next MAD to post, or `None` when nothing is due.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Vec<u8>> {
        let mut v = vec![0u8; MAD_LEN];
        self.poll_transmit_into(now, &mut v).map(|_| v)
    }

    /// Takes an ACK, STOP or ABORT the receiver sent for this transfer.
    /// Anything else (a DATA segment, a short MAD) is ignored.
    pub fn handle_reply(&mut self, mad: &[u8], now: Instant) {
        let Ok(h) = read_header(mad) else { return };
        if !h.is_active() {
            return;
        }
        if h.version != crate::RMPP_VERSION {
            self.abort(RmppStatus::UNV);
            return;
        }
        match h.rmpp_type {
            RmppType::ACK => self.handle_ack(&h, now),
            RmppType::STOP | RmppType::ABORT => {
                if !h.status.is_valid_for(h.rmpp_type) {
                    self.abort(RmppStatus::BAD_STATUS);
                } else if self.state == State::Active {
                    // A late STOP / ABORT cannot undo a transfer whose
                    // segments are all acknowledged (kernel `abort_send`).
                    self.finish(Outcome::Aborted(h.status));
                }
            }
            RmppType::DATA => {}
            _ => self.abort(RmppStatus::BADT),
        }
    }

    fn handle_ack(&mut self, h: &Header, now: Instant) {
        if self.state == State::Finished {
            return;
        }
        if h.status != RmppStatus::SUCCESS {
            self.abort(RmppStatus::BAD_STATUS);
            return;
        }
        let (seg, wl) = (h.data1, h.data2);
        if wl < seg {
            self.abort(RmppStatus::W2S);
            return;
        }
        if self.state == State::AwaitingResponse {
            // A repeated final ACK: our DS ACK was lost; send it again.
            if seg == self.geom.count {
                self.control
                    .push_back(self.control_mad(RmppType::ACK, RmppStatus::SUCCESS, 0, 1));
            }
            return;
        }
        if seg > self.geom.count || seg > self.newwin {
            self.abort(RmppStatus::S2B);
            return;
        }
        if wl < self.newwin || seg < self.last_ack {
            return; // an old ACK
        }
        let advanced = seg > self.last_ack;
        if advanced {
            self.last_ack = seg;
            self.retries_left = self.cfg.retries;
        }
        self.newwin = wl;
        if self.seg_sent < self.last_ack {
            self.seg_sent = self.last_ack;
        }
        if !advanced && self.armed_at.is_some() {
            // No progress: a repeated (stale) ACK must not push the ACK
            // timer back, or a peer repeating it keeps the send alive for
            // ever. Segments the new window releases re-arm the timer
            // when they go out; the retries still run down.
            return;
        }
        if self.last_ack == self.geom.count {
            self.armed_at = None;
            if self.cfg.expects_response {
                self.state = State::AwaitingResponse;
                self.control
                    .push_back(self.control_mad(RmppType::ACK, RmppStatus::SUCCESS, 0, 1));
                self.events.push_back(SendEvent::AllAcked);
            } else {
                self.finish(Outcome::Success);
            }
        } else if self.seg_sent > self.last_ack || self.newwin <= self.last_ack {
            // Segments still unacknowledged: wait for them. Or the
            // receiver granted no new segment (a closed window): nothing
            // will go out to arm the timer, so it runs now, and a
            // receiver that never opens the window cannot hold the
            // transfer for ever (the retries run down).
            self.armed_at = Some(now);
        } else {
            self.armed_at = None;
        }
    }

    /// Handles an expired ACK timer. Does nothing before the deadline.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state != State::Active {
            return;
        }
        match self.deadline() {
            Some(d) if d <= now => {}
            _ => return,
        }
        self.armed_at = None;
        if self.retries_left == 0 {
            let m = self.control_mad(RmppType::ABORT, RmppStatus::TMR, 0, 0);
            self.control.push_back(m);
            self.finish(Outcome::TimedOut);
            return;
        }
        self.retries_left -= 1;
        self.retransmissions += 1;
        self.seg_sent = self.last_ack;
        if self.newwin <= self.last_ack {
            // A closed window: nothing is resent to re-arm the timer, so
            // the next wait starts here and spends the next retry.
            self.armed_at = Some(now);
        }
    }

    /// Flips the response bit of a control MAD built here; used by callers
    /// that need the peer's view of the method.
    #[doc(hidden)]
    pub fn flip_method(mad: &mut [u8]) {
        flip_response_bit(mad);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An SA GetTableResp's class header (56 bytes), TID 0x55.
    fn sa_header() -> Vec<u8> {
        use mad_wire::wire::{AttributeId, MadStatus, Method, MgmtClass};
        let mut h = mad_testkit_wire::MadBuilder::new(
            MgmtClass::SUBN_ADM,
            2,
            Method::GET_TABLE,
            AttributeId(0),
        )
        .response(MadStatus::SUCCESS)
        .tid(0x55)
        .to_vec();
        h.truncate(56);
        h
    }

    fn ack(seg: u32, wl: u32) -> Vec<u8> {
        let mut m = vec![0u8; 256];
        write_header(
            &header(RmppType::ACK, 0, FLAG_ACTIVE, RmppStatus::SUCCESS, seg, wl),
            &mut m,
        );
        m
    }

    fn drain(s: &mut Sender, now: Instant) -> Vec<Vec<u8>> {
        std::iter::from_fn(|| s.poll_transmit(now)).collect()
    }

    /// A sender of `len` bytes of `1` with at most `retries` resends.
    fn with_retries(retries: u32, len: usize, now: Instant) -> Sender {
        let cfg = SenderConfig {
            retries,
            ..SenderConfig::default()
        };
        Sender::new(&sa_header(), &vec![1u8; len], cfg, now).unwrap()
    }

    /// A sender of `len` bytes of `1` whose message expects a response.
    fn expecting_response(len: usize, now: Instant) -> Sender {
        let cfg = SenderConfig {
            expects_response: true,
            ..SenderConfig::default()
        };
        Sender::new(&sa_header(), &vec![1u8; len], cfg, now).unwrap()
    }

    #[test]
    fn every_segment_carries_the_whole_rmpp_header_of_its_position() {
        // Each DATA segment's header is the one `header` builds for its
        // number and position, whatever the caller's header held at bytes
        // 24..36 and whatever the output buffer held before.
        let now = Instant::now();
        for len in [0usize, 1, 200, 400, 401, 1024, 2000] {
            let mut hdr = sa_header();
            hdr[24..36].fill(0xA5);
            let cfg = SenderConfig {
                initial_window: u32::MAX,
                resp_time: 0x0E,
                ..SenderConfig::default()
            };
            let mut s = Sender::new(&hdr, &vec![3u8; len], cfg, now).unwrap();
            let count = s.geometry().count;
            let mut out = [0xFFu8; 256];
            let mut n = 0;
            while let Some(seg) = s.poll_transmit_into(now, &mut out) {
                n += 1;
                assert_eq!(seg, n);
                let mut flags = FLAG_ACTIVE;
                if n == 1 {
                    flags |= FLAG_FIRST;
                }
                if n == count {
                    flags |= FLAG_LAST;
                }
                let want = header(
                    RmppType::DATA,
                    0x0E,
                    flags,
                    RmppStatus::SUCCESS,
                    n,
                    s.geometry().payload_length(n),
                );
                assert_eq!(read_header(&out).unwrap(), want, "{len} bytes, segment {n}");
                assert_eq!(out[..24], hdr[..24]);
                assert_eq!(out[36..56], hdr[36..56]);
            }
            assert_eq!(n, count, "{len} bytes");
        }
    }

    #[test]
    fn first_window_is_one_segment_then_the_ack_opens_it() {
        let now = Instant::now();
        let mut s = Sender::new(&sa_header(), &[7u8; 2000], SenderConfig::default(), now).unwrap();
        assert_eq!(s.geometry().count, 10);
        let opening = drain(&mut s, now);
        assert_eq!(opening.len(), 1);
        let h = read_header(&opening[0]).unwrap();
        assert!(h.is_first() && h.is_active() && !h.is_last());
        assert_eq!(h.data2, 10 * 220);
        s.handle_reply(&ack(1, 65), now);
        let rest = drain(&mut s, now);
        assert_eq!(rest.len(), 9);
        let last = read_header(&rest[8]).unwrap();
        assert!(last.is_last());
        assert_eq!(last.data1, 10);
        assert_eq!(last.data2, 220);
        s.handle_reply(&ack(10, 74), now);
        assert_eq!(s.poll_event(), Some(SendEvent::Finished(Outcome::Success)));
        assert!(s.is_finished());
    }

    #[test]
    fn timeout_goes_back_to_the_first_unacknowledged_segment() {
        let t0 = Instant::now();
        let mut s = Sender::new(&sa_header(), &[1u8; 2000], SenderConfig::default(), t0).unwrap();
        drain(&mut s, t0);
        s.handle_reply(&ack(1, 65), t0);
        drain(&mut s, t0);
        s.handle_reply(&ack(4, 65), t0);
        s.handle_timeout(t0 + Duration::from_millis(1999));
        assert!(s.poll_transmit(t0).is_none(), "early timeout does nothing");
        let t1 = t0 + Duration::from_secs(3);
        s.handle_timeout(t1);
        let again = drain(&mut s, t1);
        let segs: Vec<u32> = again
            .iter()
            .map(|m| read_header(m).unwrap().data1)
            .collect();
        assert_eq!(segs, (5..=10).collect::<Vec<_>>());
    }

    #[test]
    fn retries_run_out_with_abort_tmr_and_timed_out() {
        let t0 = Instant::now();
        let mut s = with_retries(2, 500, t0);
        let mut t = t0;
        for _ in 0..3 {
            drain(&mut s, t);
            t += Duration::from_secs(2);
            s.handle_timeout(t);
        }
        let out = drain(&mut s, t);
        assert_eq!(out.len(), 1);
        let h = read_header(&out[0]).unwrap();
        assert_eq!((h.rmpp_type, h.status), (RmppType::ABORT, RmppStatus::TMR));
        assert_eq!(s.poll_event(), Some(SendEvent::Finished(Outcome::TimedOut)));
    }

    #[test]
    fn giving_up_ends_the_transfer_timed_out_without_an_abort() {
        let t0 = Instant::now();
        let mut s = with_retries(2, 500, t0);
        assert_eq!(drain(&mut s, t0).len(), 1);
        s.give_up();
        assert!(drain(&mut s, t0).is_empty(), "no ABORT, no segment");
        assert_eq!(s.poll_event(), Some(SendEvent::Finished(Outcome::TimedOut)));
        assert!(s.is_finished() && s.poll_timeout().is_none());
    }

    #[test]
    fn bad_acks_abort_with_the_kernel_status() {
        let now = Instant::now();
        let cases: [(Vec<u8>, RmppStatus); 3] = [
            (ack(3, 2), RmppStatus::W2S),
            (ack(2, 65), RmppStatus::S2B), // beyond the window of 1
            (
                {
                    let mut m = ack(1, 65);
                    m[27] = 5;
                    m
                },
                RmppStatus::BAD_STATUS,
            ),
        ];
        for (m, want) in cases {
            let mut s =
                Sender::new(&sa_header(), &[1u8; 500], SenderConfig::default(), now).unwrap();
            drain(&mut s, now);
            s.handle_reply(&m, now);
            let out = drain(&mut s, now);
            let h = read_header(&out[0]).unwrap();
            assert_eq!((h.rmpp_type, h.status), (RmppType::ABORT, want));
            assert_eq!(
                s.poll_event(),
                Some(SendEvent::Finished(Outcome::Aborted(want)))
            );
        }
    }

    #[test]
    fn stop_and_abort_from_the_receiver_end_the_transfer() {
        let now = Instant::now();
        let mut s = Sender::new(&sa_header(), &[1u8; 500], SenderConfig::default(), now).unwrap();
        drain(&mut s, now);
        let mut stop = ack(0, 0);
        stop[25] = RmppType::STOP.0;
        stop[27] = RmppStatus::RESX.0;
        s.handle_reply(&stop, now);
        assert_eq!(
            s.poll_event(),
            Some(SendEvent::Finished(Outcome::Aborted(RmppStatus::RESX)))
        );

        let mut s = Sender::new(&sa_header(), &[1u8; 500], SenderConfig::default(), now).unwrap();
        drain(&mut s, now);
        let mut abort = ack(0, 0);
        abort[25] = RmppType::ABORT.0;
        abort[27] = 42; // outside the ABORT range
        s.handle_reply(&abort, now);
        let out = drain(&mut s, now);
        assert_eq!(read_header(&out[0]).unwrap().status, RmppStatus::BAD_STATUS);
    }

    #[test]
    fn a_request_expecting_a_response_sends_a_ds_ack_after_the_last_ack() {
        let now = Instant::now();
        let mut s = expecting_response(100, now);
        assert_eq!(drain(&mut s, now).len(), 1);
        s.handle_reply(&ack(1, 1), now);
        assert_eq!(s.poll_event(), Some(SendEvent::AllAcked));
        let ds = drain(&mut s, now);
        let h = read_header(&ds[0]).unwrap();
        assert_eq!((h.rmpp_type, h.data1, h.data2), (RmppType::ACK, 0, 1));
        // A repeated final ACK gets the DS ACK again.
        s.handle_reply(&ack(1, 1), now);
        assert_eq!(drain(&mut s, now).len(), 1);
        assert!(!s.is_finished());
    }

    #[test]
    fn a_peer_repeating_a_stale_ack_cannot_keep_the_send_alive() {
        let t0 = Instant::now();
        let mut s = with_retries(2, 2000, t0);
        drain(&mut s, t0);
        s.handle_reply(&ack(1, 5), t0);
        drain(&mut s, t0);
        // The peer acknowledges segment 1 again and again, every 100 ms,
        // for ten minutes of virtual time.
        let mut t = t0;
        let mut ended = None;
        for _ in 0..6000 {
            t += Duration::from_millis(100);
            s.handle_reply(&ack(1, 5), t);
            s.handle_timeout(t);
            drain(&mut s, t);
            if let Some(SendEvent::Finished(o)) = s.poll_event() {
                ended = Some((o, t - t0));
                break;
            }
        }
        let (outcome, after) = ended.expect("the send never ended");
        assert_eq!(outcome, Outcome::TimedOut);
        // Three ACK waits (the first and two retries), not more.
        assert!(
            after <= Duration::from_secs(6) + Duration::from_millis(100),
            "{after:?}"
        );
    }

    #[test]
    fn a_receiver_holding_the_window_closed_cannot_stall_the_send() {
        // Found by the rmpp_sender_ops fuzz target: an ACK whose window
        // ends at the acknowledged segment (here 1 of 10) released nothing
        // and left no timer, so the sender waited for ever.
        let t0 = Instant::now();
        let mut s = with_retries(2, 2000, t0);
        drain(&mut s, t0);
        s.handle_reply(&ack(1, 1), t0);
        assert!(drain(&mut s, t0).is_empty(), "the window is closed");
        assert_eq!(s.poll_timeout(), Some(t0 + Duration::from_secs(2)));
        let mut t = t0;
        for _ in 0..3 {
            t = s.poll_timeout().expect("the ACK timer keeps running");
            s.handle_timeout(t);
            assert!(
                drain(&mut s, t)
                    .iter()
                    .all(|m| read_header(m).unwrap().rmpp_type == RmppType::ABORT),
                "nothing beyond the closed window"
            );
        }
        assert_eq!(s.poll_event(), Some(SendEvent::Finished(Outcome::TimedOut)));
        assert_eq!(t - t0, Duration::from_secs(6));

        // A receiver that opens the window later is served at once.
        let mut s = with_retries(2, 2000, t0);
        drain(&mut s, t0);
        s.handle_reply(&ack(1, 1), t0);
        let t1 = t0 + Duration::from_secs(1);
        s.handle_reply(&ack(1, 10), t1);
        assert_eq!(drain(&mut s, t1).len(), 9);
        s.handle_reply(&ack(10, 10), t1);
        assert_eq!(s.poll_event(), Some(SendEvent::Finished(Outcome::Success)));
    }

    fn control(rtype: RmppType, status: RmppStatus) -> Vec<u8> {
        let mut m = vec![0u8; 256];
        write_header(&header(rtype, 0, FLAG_ACTIVE, status, 0, 0), &mut m);
        m
    }

    #[test]
    fn a_fully_acknowledged_sender_does_not_abort_on_a_late_stop_or_abort() {
        let now = Instant::now();
        let mut s = expecting_response(100, now);
        drain(&mut s, now);
        s.handle_reply(&ack(1, 1), now);
        assert_eq!(s.poll_event(), Some(SendEvent::AllAcked));
        drain(&mut s, now);
        s.handle_reply(&control(RmppType::STOP, RmppStatus::RESX), now);
        s.handle_reply(&control(RmppType::ABORT, RmppStatus::T2L), now);
        assert!(drain(&mut s, now).is_empty(), "valid ones are not answered");
        // A malformed one is answered with ABORT(BAD_STATUS), as the
        // kernel's nack_recv does, and still ends nothing.
        s.handle_reply(&control(RmppType::ABORT, RmppStatus(5)), now);
        let out = drain(&mut s, now);
        let h = read_header(&out[0]).unwrap();
        assert_eq!(
            (h.rmpp_type, h.status),
            (RmppType::ABORT, RmppStatus::BAD_STATUS)
        );
        assert_eq!(s.poll_event(), None);
        assert!(!s.is_finished());
        assert!(s.is_all_acked());
        // The repeated final ACK still gets the DS ACK.
        s.handle_reply(&ack(1, 1), now);
        let ds = drain(&mut s, now);
        assert_eq!(read_header(&ds[0]).unwrap().data1, 0);
    }
}
