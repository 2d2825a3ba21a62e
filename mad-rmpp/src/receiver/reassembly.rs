//! Placing DATA segments: starting a transfer on segment 1, windowed
//! placement of the rest, completion and the lingering bound.

use std::time::Instant;

use super::budget::Usage;
use super::transfer::{Placed, State, Transfer};
use super::{hdr_len_of, Output, ReceiverConfig, ReceiverTable, TransferKey};
use crate::peer::{reply_address, Peer};
use crate::segment::{message_len, Header, RmppStatus, MAD_LEN, RMPP_DATA};
use crate::Outcome;
use mad_wire::addr::Address;

/// A received DATA segment on its way into the table: the transfer it
/// belongs to, its source address as received, its bytes and its parsed
/// RMPP header.
#[derive(Clone, Copy)]
pub(super) struct Segment<'a> {
    pub(super) key: TransferKey,
    pub(super) src: &'a Address,
    pub(super) mad: &'a [u8],
    pub(super) h: &'a Header,
}

impl ReceiverTable {
    pub(super) fn handle_data(&mut self, seg: Segment<'_>, now: Instant) {
        let Segment { key, src, mad, h } = seg;
        if h.status != RmppStatus::SUCCESS {
            self.reject(key, src, mad, RmppStatus::BAD_STATUS);
            return;
        }
        if h.data1 == 0 || (h.data1 == 1) != h.is_first() {
            self.reject(key, src, mad, RmppStatus::BAD_SEG);
            return;
        }
        if h.data1 == 1 && !self.transfers.contains_key(&key) {
            self.start(seg, now);
        } else {
            self.continue_transfer(key, mad, h, now);
        }
    }

    /// Segment 1 of a new transfer: refused when the table, the source or
    /// the byte budgets are full, else the transfer starts with it.
    pub(super) fn start(&mut self, seg: Segment<'_>, now: Instant) {
        let Segment { key, src, mad, h } = seg;
        let busy = self.usage.sources.get(&key.src).map_or(0, |s| s.active);
        if self.active >= self.cfg.max_total || busy >= self.cfg.max_per_source {
            self.stats.refused_busy += 1;
            self.reject(key, src, mad, RmppStatus::RESX);
            return;
        }
        let hdr_len = hdr_len_of(key.class);
        if mad.len() < MAD_LEN || hdr_len >= MAD_LEN {
            self.reject(key, src, mad, RmppStatus::BAD_LEN);
            return;
        }
        let mut first = [0u8; MAD_LEN];
        first.copy_from_slice(&mad[..MAD_LEN]);
        // The claimed length (segment 1's PayloadLength: the total after
        // the RMPP header, at least the message's data) only picks a pooled
        // buffer; nothing is allocated for it.
        let claim = (h.data2 != 0).then(|| hdr_len.saturating_add(h.data2 as usize));
        let room = self.usage.room(key.src, &self.cfg);
        let (mut data, pooled) = match self.take_buffer(claim, room) {
            Some(b) => (b, true),
            None => (Vec::new(), false),
        };
        self.usage.take(key.src, data.capacity());
        if !self
            .usage
            .grow(key.src, &self.cfg, &mut data, (hdr_len, None))
        {
            self.usage.release(key.src, data.capacity());
            self.recycle(data);
            self.stats.refused_bytes += 1;
            self.reject(key, src, mad, RmppStatus::RESX);
            return;
        }
        data.extend_from_slice(&mad[..hdr_len]);
        let t = Transfer {
            first,
            reply: reply_address(src),
            hdr_len,
            seg_size: MAD_LEN - hdr_len,
            data,
            pooled,
            have: Vec::new(),
            seg_num: 0,
            max_seen: 0,
            newwin: 1,
            last_seg: None,
            last_len: 0,
            first_total: h.data2,
            state: State::Active,
            deadline: now + self.cfg.total_timeout,
            repwin: 1,
        };
        self.deadlines.insert((t.deadline, key));
        self.transfers.insert(key, t);
        self.active += 1;
        self.usage.source(key.src).active += 1;
        self.place(key, mad, h, now);
    }

    pub(super) fn continue_transfer(
        &mut self,
        key: TransferKey,
        mad: &[u8],
        h: &Header,
        now: Instant,
    ) {
        let window = self.cfg.window.max(1);
        // One table lookup per segment on the common path (the table key
        // is hashed once): checks and placement work on the same entry.
        let Some(t) = self.transfers.get_mut(&key) else {
            self.dropped += 1;
            return;
        };
        let n = h.data1;
        if t.state == State::Complete || (n <= t.seg_num && n >= 1) {
            // Duplicate of something already acknowledged or delivered:
            // repeat the current ACK.
            self.ack(key);
            return;
        }
        if n > t.newwin {
            self.dropped += 1;
            return;
        }
        if t.has(n) {
            return; // held but not yet acknowledged
        }
        let placed = Self::place_in(t, key.src, &mut self.usage, &self.cfg, mad, h, window);
        self.after_place(key, placed, now);
    }

    pub(super) fn place(&mut self, key: TransferKey, mad: &[u8], h: &Header, now: Instant) {
        let window = self.cfg.window.max(1);
        let Some(t) = self.transfers.get_mut(&key) else {
            return;
        };
        let placed = Self::place_in(t, key.src, &mut self.usage, &self.cfg, mad, h, window);
        self.after_place(key, placed, now);
    }

    /// Checks segment `h.data1` against `t` and stores it, growing its
    /// buffer within the byte budgets of `usage`; says what the table
    /// must do next.
    pub(super) fn place_in(
        t: &mut Transfer,
        src: Peer,
        usage: &mut Usage,
        cfg: &ReceiverConfig,
        mad: &[u8],
        h: &Header,
        window: u32,
    ) -> Placed {
        let n = h.data1;
        // Segment numbers beyond a known Last, or a Last below a segment
        // already received: the Last flag is inconsistent.
        if t.last_seg.is_some_and(|l| n > l) || (h.is_last() && n < t.max_seen) {
            return Placed::Fail(RmppStatus::S2B);
        }
        if (n as usize)
            .checked_mul(t.seg_size)
            .is_none_or(|e| e > cfg.max_message_len.saturating_add(t.seg_size))
        {
            // Too long for our bound: stop the sender.
            return Placed::Fail(RmppStatus::RESX);
        }
        let Some(payload) = mad.get(t.hdr_len..MAD_LEN) else {
            // A segment shorter than a MAD carries no whole payload.
            return Placed::Fail(RmppStatus::BAD_LEN);
        };
        // `data` holds the class header (from segment 1) then the payloads.
        let off = t.hdr_len + (n as usize - 1) * t.seg_size;
        let hint = t.size_hint();
        if !usage.grow(src, cfg, &mut t.data, (off + t.seg_size, hint)) {
            return Placed::RefusedBytes;
        }
        if off == t.data.len() {
            // In order: append without zero-filling first.
            t.data.extend_from_slice(payload);
        } else {
            if t.data.len() < off + t.seg_size {
                t.data.resize(off + t.seg_size, 0);
            }
            t.data[off..off + t.seg_size].copy_from_slice(payload);
        }
        t.set(n);
        t.max_seen = t.max_seen.max(n);
        if h.is_last() {
            t.last_seg = Some(n);
            t.last_len = h.data2;
        }
        while t.has(t.seg_num + 1) {
            t.seg_num += 1;
        }
        if t.last_seg == Some(t.seg_num) {
            Placed::Complete
        } else if t.seg_num == 1 && n == 1 {
            t.newwin = 1 + window;
            Placed::Ack
        } else if t.seg_num == t.newwin {
            t.newwin += window;
            Placed::Ack
        } else {
            Placed::Nothing
        }
    }

    pub(super) fn after_place(&mut self, key: TransferKey, placed: Placed, now: Instant) {
        match placed {
            Placed::Nothing => {}
            Placed::Ack => self.ack(key),
            Placed::Complete => self.complete(key, now),
            Placed::Fail(st) => self.fail(key, Some(st), Outcome::Aborted(st)),
            Placed::RefusedBytes => {
                self.stats.refused_bytes += 1;
                let st = RmppStatus::RESX;
                self.fail(key, Some(st), Outcome::Aborted(st));
            }
        }
    }

    pub(super) fn complete(&mut self, key: TransferKey, now: Instant) {
        let verdict = {
            let Some(t) = self.transfers.get(&key) else {
                return;
            };
            let count = t.seg_num;
            match message_len(t.hdr_len, count, t.last_len) {
                None => Err(RmppStatus::BAD_LEN),
                Some(len) => {
                    // The First segment's total, when given (non-zero), must agree.
                    let pad = RMPP_DATA - t.last_len;
                    let total = u64::from(count) * u64::from(RMPP_DATA) - u64::from(pad);
                    if t.first_total != 0 && count > 1 && u64::from(t.first_total) != total {
                        Err(RmppStatus::BAD_LEN)
                    } else if len > self.cfg.max_message_len {
                        Err(RmppStatus::RESX)
                    } else {
                        Ok(len)
                    }
                }
            }
        };
        let len = match verdict {
            Ok(len) => len,
            Err(st) => {
                self.fail(key, Some(st), Outcome::Aborted(st));
                return;
            }
        };
        let Some(t) = self.transfers.get_mut(&key) else {
            return;
        };
        // The buffer already is header + data: hand it over, no copy. A
        // fresh buffer grew by doubling: give back the slack. A pooled one
        // keeps its capacity for when the owner recycles it.
        let mut message = std::mem::take(&mut t.data);
        let cap = message.capacity();
        message.truncate(len);
        if !t.pooled {
            message.shrink_to_fit();
        }
        t.have = Vec::new();
        t.state = State::Complete;
        let src = t.reply;
        self.active -= 1;
        self.usage.release(key.src, cap);
        let s = self.usage.source(key.src);
        s.active = s.active.saturating_sub(1);
        s.lingering.push_back(key);
        self.lingering.push_back(key);
        self.ack(key);
        self.set_deadline(key, now + self.cfg.linger);
        self.out.push_back(Output::Delivered { key, src, message });
        self.bound_lingering(key.src);
    }

    /// Forgets the oldest finished transfers of `src`, then of the table,
    /// past the lingering limits.
    pub(super) fn bound_lingering(&mut self, src: Peer) {
        loop {
            let oldest = self
                .usage
                .sources
                .get(&src)
                .filter(|s| s.lingering.len() > self.cfg.max_lingering_per_source)
                .and_then(|s| s.lingering.front().copied());
            let Some(k) = oldest else { break };
            self.stats.evicted_lingering += 1;
            self.remove(&k);
        }
        while self.lingering.len() > self.cfg.max_lingering {
            let Some(k) = self.lingering.front().copied() else {
                break;
            };
            self.stats.evicted_lingering += 1;
            self.remove(&k);
        }
    }
}
