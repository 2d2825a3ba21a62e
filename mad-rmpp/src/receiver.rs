//! The RMPP receiver: reassembly of inbound transfers.
//!
//! A [`ReceiverTable`] holds every inbound transfer of one agent (or port),
//! keyed like the kernel's `mad_rmpp_recv`: TID, source LID and QP, class,
//! class version and method. Feed it every RMPP-active DATA segment and
//! every ABORT / STOP addressed to a receiving transfer with
//! [`ReceiverTable::handle`], call [`ReceiverTable::handle_timeout`] when
//! [`ReceiverTable::poll_timeout`] passes, and drain
//! [`ReceiverTable::poll_output`]: ACK / ABORT / STOP MADs to send back to
//! the transfer's source, reassembled messages, and transfers that ended
//! without a message.
//!
//! The caller decides what may allocate: for a response, call `handle`
//! only once the segment's TID and source match a send that waits for it
//! (the table itself allocates a transfer on segment 1 only, and never more
//! than `max_message_len` bytes of buffer).
//!
//! Placement is O(1): segment `n` lands at `(n-1) * seg_size` of a flat
//! buffer and a bitmap records it, however the segments are reordered.
//!
//! Buffer reuse: a long-running owner (an SA client, a responder) hands
//! every delivered message back with [`ReceiverTable::recycle`] once it is
//! done with it. The table keeps a small pool of such buffers (bounded by
//! [`ReceiverConfig::pool_buffers`] and [`ReceiverConfig::pool_bytes`]) and
//! reassembles the next large transfer into one of them instead of a fresh
//! allocation, which for messages of a megabyte or more would otherwise be
//! fresh pages the kernel must fault in on every transfer. Buffers of
//! transfers that fail or time out go back to the pool too. A recycled
//! buffer is cleared: its old bytes can never appear in a new message.

use crate::segment::{
    flip_response_bit, header, message_len, read_header, write_header, Header, RmppStatus,
    RmppType, FLAG_ACTIVE, MAD_LEN, RMPP_DATA,
};
use crate::Outcome;
use mad_core::hash::FastMap;
use mad_core::wire::MgmtClass;
use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

/// Identifies one inbound transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TransferKey {
    /// Transaction ID.
    pub tid: u64,
    /// Source LID.
    pub src_lid: u16,
    /// Source QP.
    pub src_qp: u32,
    /// Management class.
    pub class: u8,
    /// Class version.
    pub class_version: u8,
    /// Method byte (with the response bit).
    pub method: u8,
}

impl std::hash::Hash for TransferKey {
    /// Hashes the key as two words (every field, packed without overlap)
    /// instead of six separate writes: the table is looked up once per
    /// received segment, so this is on the reassembly hot path. Equal keys
    /// give equal words, as `Eq` requires.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.tid);
        state.write_u64(
            (u64::from(self.src_lid) << 48)
                | (u64::from(self.src_qp) << 16)
                | (u64::from(self.class) << 8)
                | u64::from(self.class_version),
        );
        state.write_u8(self.method);
    }
}

impl TransferKey {
    /// The key of `mad` received from `src_lid`/`src_qp`.
    #[must_use]
    pub fn of(mad: &[u8], src_lid: u16, src_qp: u32) -> Option<Self> {
        if mad.len() < 16 {
            return None;
        }
        let mut t = [0u8; 8];
        t.copy_from_slice(&mad[8..16]);
        Some(Self {
            tid: u64::from_be_bytes(t),
            src_lid,
            src_qp,
            class: mad[1],
            class_version: mad[2],
            method: mad[3],
        })
    }
}

/// Receiver parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Segments granted per window (kernel: 64).
    pub window: u32,
    /// Total time a transfer may take from segment 1 (kernel: 40 s).
    pub total_timeout: Duration,
    /// How long a finished transfer is remembered to re-ACK duplicates
    /// (kernel: 10 s).
    pub linger: Duration,
    /// Largest reassembled message, header included.
    pub max_message_len: usize,
    /// Concurrent active reassemblies from one source (LID, QP).
    pub max_per_source: usize,
    /// Concurrent active reassemblies in the table.
    pub max_total: usize,
    /// Most reassembly buffers kept for reuse (see
    /// [`ReceiverTable::recycle`]); 0 disables the pool.
    pub pool_buffers: usize,
    /// Most bytes (buffer capacity) kept for reuse in total; a buffer
    /// larger than this is never kept.
    pub pool_bytes: usize,
    /// Messages whose first segment claims at most this many bytes get a
    /// fresh buffer, and recycled buffers of at most this capacity are not
    /// kept: the allocator serves small buffers from its heap without page
    /// faults, and the pooled ones (sized by earlier large messages) stay
    /// free for the next large one.
    pub pool_min_len: usize,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self {
            window: 64,
            total_timeout: Duration::from_secs(40),
            linger: Duration::from_secs(10),
            max_message_len: 64 << 20,
            max_per_source: 16,
            max_total: 1024,
            pool_buffers: 4,
            pool_bytes: 16 << 20,
            pool_min_len: 4096,
        }
    }
}

/// What the table asks its owner to do or reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send this MAD (ACK, ABORT or STOP) to the transfer's source
    /// (`key.src_lid`, `key.src_qp`).
    Send {
        /// The transfer.
        key: TransferKey,
        /// 256 bytes.
        mad: Vec<u8>,
    },
    /// A message was reassembled: its header (once) followed by its data.
    Delivered {
        /// The transfer.
        key: TransferKey,
        /// The message.
        message: Vec<u8>,
    },
    /// A transfer ended without a message.
    Ended {
        /// The transfer.
        key: TransferKey,
        /// Why.
        outcome: Outcome,
    },
}

/// What placing a segment asks the table to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placed {
    Nothing,
    Ack,
    Complete,
    Fail(RmppStatus),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Active,
    Complete,
}

#[derive(Debug)]
struct Transfer {
    /// The first segment's first 256 bytes (header template for ACKs and
    /// for the delivered message).
    first: [u8; MAD_LEN],
    hdr_len: usize,
    seg_size: usize,
    /// The class header (segment 1's first `hdr_len` bytes) followed by
    /// the payloads placed so far: the delivered message is this buffer.
    data: Vec<u8>,
    /// `data` came from the pool: it is delivered at its capacity (the
    /// owner is expected to recycle it), not shrunk.
    pooled: bool,
    have: Vec<u64>,
    /// Highest in-order segment.
    seg_num: u32,
    /// Highest segment received at all.
    max_seen: u32,
    newwin: u32,
    last_seg: Option<u32>,
    last_len: u32,
    first_total: u32,
    state: State,
    deadline: Instant,
    /// Window the requester advertised in a DS ACK (double-sided).
    repwin: u32,
}

impl Transfer {
    fn has(&self, n: u32) -> bool {
        let i = (n - 1) as usize;
        self.have
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn set(&mut self, n: u32) {
        let i = (n - 1) as usize;
        if self.have.len() <= i / 64 {
            self.have.resize(i / 64 + 1, 0);
        }
        self.have[i / 64] |= 1 << (i % 64);
    }
}

/// All inbound RMPP transfers of one agent or port.
#[derive(Debug)]
pub struct ReceiverTable {
    cfg: ReceiverConfig,
    transfers: FastMap<TransferKey, Transfer>,
    deadlines: BTreeSet<(Instant, TransferKey)>,
    per_source: FastMap<(u16, u32), usize>,
    active: usize,
    out: VecDeque<Output>,
    /// Cleared buffers kept for reuse, bounded by the configuration.
    pool: Vec<Vec<u8>>,
    /// Sum of the capacities in `pool`.
    pool_capacity: usize,
    /// Segments dropped as out of window or for unknown transfers.
    pub dropped: u64,
}

/// The class header length of `class` (`ib_get_mad_data_offset`).
fn hdr_len_of(class: u8) -> usize {
    MgmtClass(class).data_offset()
}

impl ReceiverTable {
    /// An empty table.
    #[must_use]
    pub fn new(cfg: ReceiverConfig) -> Self {
        Self {
            cfg,
            transfers: FastMap::default(),
            deadlines: BTreeSet::new(),
            per_source: FastMap::default(),
            active: 0,
            out: VecDeque::new(),
            pool: Vec::new(),
            pool_capacity: 0,
            dropped: 0,
        }
    }

    /// Hands a delivered message's buffer back for reuse by a later
    /// transfer. The buffer is cleared (its capacity is kept). It is kept
    /// only within [`ReceiverConfig::pool_buffers`] and
    /// [`ReceiverConfig::pool_bytes`]: when the pool would exceed either,
    /// its smallest buffers (possibly this one) are dropped. A buffer of
    /// at most [`ReceiverConfig::pool_min_len`] bytes of capacity, or more
    /// than the byte budget, is dropped at once.
    ///
    /// Any `Vec<u8>` may be given, not only one this table delivered.
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        let cap = buf.capacity();
        if cap <= self.cfg.pool_min_len || cap > self.cfg.pool_bytes || self.cfg.pool_buffers == 0 {
            return;
        }
        buf.clear();
        self.pool.push(buf);
        self.pool_capacity += cap;
        while self.pool.len() > self.cfg.pool_buffers || self.pool_capacity > self.cfg.pool_bytes {
            let Some(i) = (0..self.pool.len()).min_by_key(|&i| self.pool[i].capacity()) else {
                break;
            };
            let dropped = self.pool.swap_remove(i);
            self.pool_capacity -= dropped.capacity();
        }
    }

    /// Buffers held for reuse.
    #[must_use]
    pub fn pooled_buffers(&self) -> usize {
        self.pool.len()
    }

    /// Bytes (capacity) held for reuse.
    #[must_use]
    pub fn pooled_bytes(&self) -> usize {
        self.pool_capacity
    }

    /// A pooled buffer for a message claiming `claim` bytes (`None`: no
    /// claim): the smallest that holds the claim, else the largest (it
    /// grows as segments arrive, as a fresh one would). Claims up to
    /// `pool_min_len` get none.
    fn take_buffer(&mut self, claim: Option<usize>) -> Option<Vec<u8>> {
        let cap = |i: &usize| self.pool[*i].capacity();
        let i = match claim {
            Some(c) if c <= self.cfg.pool_min_len => None,
            Some(c) => (0..self.pool.len())
                .filter(|i| cap(i) >= c)
                .min_by_key(cap)
                .or_else(|| (0..self.pool.len()).max_by_key(cap)),
            None => (0..self.pool.len()).max_by_key(cap),
        }?;
        let buf = self.pool.swap_remove(i);
        self.pool_capacity -= buf.capacity();
        Some(buf)
    }

    /// Transfers held (active or lingering).
    #[must_use]
    pub fn len(&self) -> usize {
        self.transfers.len()
    }

    /// True when no transfer is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.transfers.is_empty()
    }

    /// Active (not yet complete) transfers.
    #[must_use]
    pub fn active(&self) -> usize {
        self.active
    }

    /// Next thing to send or report.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// When [`ReceiverTable::handle_timeout`] must be called next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.first().map(|(t, _)| *t)
    }

    /// The window a double-sided requester advertised for the response to
    /// a completed transfer, if it sent one.
    #[must_use]
    pub fn response_window(&self, key: &TransferKey) -> Option<u32> {
        self.transfers
            .get(key)
            .filter(|t| t.state == State::Complete)
            .map(|t| t.repwin)
    }

    /// A reply MAD built from `template` with the response bit flipped.
    fn reply(template: &[u8], rtype: RmppType, st: RmppStatus, seg: u32, data2: u32) -> Vec<u8> {
        let mut m = vec![0u8; MAD_LEN];
        let n = template.len().min(MAD_LEN);
        m[..n].copy_from_slice(&template[..n]);
        flip_response_bit(&mut m);
        let rt = read_header(&m).map(|h| h.resp_time).unwrap_or(0x1F);
        write_header(&header(rtype, rt, FLAG_ACTIVE, st, seg, data2), &mut m);
        if rtype != RmppType::ACK {
            // ABORT/STOP carry no class data.
            let h = hdr_len_of(m[1]).min(MAD_LEN);
            m[h..].iter_mut().for_each(|b| *b = 0);
        }
        m
    }

    fn nack(&mut self, key: TransferKey, mad: &[u8], st: RmppStatus) {
        let rtype = if st == RmppStatus::RESX {
            RmppType::STOP
        } else {
            RmppType::ABORT
        };
        self.out.push_back(Output::Send {
            key,
            mad: Self::reply(mad, rtype, st, 0, 0),
        });
    }

    /// Refuses a MAD with `st` (ABORT, or STOP for RESX) and ends the
    /// transfer it belongs to: an active one is dropped; for a segment that
    /// belongs to no transfer, [`Output::Ended`] is still reported so that
    /// the owner of a waiting send learns at once that its response failed.
    fn reject(&mut self, key: TransferKey, mad: &[u8], st: RmppStatus) {
        self.nack(key, mad, st);
        if self
            .transfers
            .get(&key)
            .is_some_and(|t| t.state == State::Active)
        {
            self.fail(key, None, Outcome::Aborted(st));
        } else {
            self.out.push_back(Output::Ended {
                key,
                outcome: Outcome::Aborted(st),
            });
        }
    }

    fn ack(&mut self, key: TransferKey) {
        if let Some(t) = self.transfers.get(&key) {
            let m = Self::reply(
                &t.first,
                RmppType::ACK,
                RmppStatus::SUCCESS,
                t.seg_num,
                t.newwin,
            );
            self.out.push_back(Output::Send { key, mad: m });
        }
    }

    fn set_deadline(&mut self, key: TransferKey, at: Instant) {
        if let Some(t) = self.transfers.get_mut(&key) {
            self.deadlines.remove(&(t.deadline, key));
            t.deadline = at;
            self.deadlines.insert((at, key));
        }
    }

    fn remove(&mut self, key: &TransferKey) -> Option<Transfer> {
        let mut t = self.transfers.remove(key)?;
        self.deadlines.remove(&(t.deadline, *key));
        // A failed or canceled reassembly's buffer serves the next one.
        self.recycle(std::mem::take(&mut t.data));
        if t.state == State::Active {
            self.active -= 1;
            let src = (key.src_lid, key.src_qp);
            if let Some(c) = self.per_source.get_mut(&src) {
                *c -= 1;
                if *c == 0 {
                    self.per_source.remove(&src);
                }
            }
        }
        Some(t)
    }

    /// Ends an active transfer with `outcome`, telling the sender with
    /// `nack` (an RMPP status) when given.
    fn fail(&mut self, key: TransferKey, nack: Option<RmppStatus>, outcome: Outcome) {
        if let Some(t) = self.remove(&key) {
            if let Some(st) = nack {
                let first = t.first;
                self.nack(key, &first, st);
            }
            self.out.push_back(Output::Ended { key, outcome });
        }
    }

    /// Takes one MAD received from `src_lid` / `src_qp`: an RMPP-active DATA
    /// segment, or an ABORT / STOP / DS ACK for an inbound transfer.
    /// Returns `false` if the MAD is not RMPP-active (the caller delivers it
    /// as an ordinary MAD).
    pub fn handle(&mut self, mad: &[u8], src_lid: u16, src_qp: u32, now: Instant) -> bool {
        let Ok(h) = read_header(mad) else {
            return false;
        };
        if !h.is_active() {
            return false;
        }
        let Some(key) = TransferKey::of(mad, src_lid, src_qp) else {
            return false;
        };
        if h.version != crate::RMPP_VERSION {
            self.reject(key, mad, RmppStatus::UNV);
            return true;
        }
        match h.rmpp_type {
            RmppType::DATA => self.handle_data(key, mad, &h, now),
            RmppType::ABORT | RmppType::STOP => {
                // The sender gave up on an inbound transfer.
                if self
                    .transfers
                    .get(&key)
                    .is_some_and(|t| t.state == State::Active)
                {
                    self.fail(key, None, Outcome::Aborted(h.status));
                }
            }
            RmppType::ACK => {
                // A DS ACK (segment 0) primes the response window of a
                // completed double-sided request. It is the requester's copy
                // of our final ACK with the response bit flipped back, so it
                // carries the request's method: the transfer's own key.
                if h.data1 == 0 {
                    if let Some(t) = self.transfers.get_mut(&key) {
                        if t.state == State::Complete {
                            t.repwin = h.data2.max(1);
                        }
                    }
                }
            }
            _ => {
                self.reject(key, mad, RmppStatus::BADT);
            }
        }
        true
    }

    fn handle_data(&mut self, key: TransferKey, mad: &[u8], h: &Header, now: Instant) {
        if h.status != RmppStatus::SUCCESS {
            self.reject(key, mad, RmppStatus::BAD_STATUS);
            return;
        }
        if h.data1 == 0 || (h.data1 == 1) != h.is_first() {
            self.reject(key, mad, RmppStatus::BAD_SEG);
            return;
        }
        if h.data1 == 1 && !self.transfers.contains_key(&key) {
            self.start(key, mad, h, now);
        } else {
            self.continue_transfer(key, mad, h, now);
        }
    }

    fn start(&mut self, key: TransferKey, mad: &[u8], h: &Header, now: Instant) {
        let src = (key.src_lid, key.src_qp);
        if self.active >= self.cfg.max_total
            || self.per_source.get(&src).copied().unwrap_or(0) >= self.cfg.max_per_source
        {
            self.reject(key, mad, RmppStatus::RESX);
            return;
        }
        let hdr_len = hdr_len_of(key.class);
        if mad.len() < MAD_LEN || hdr_len >= MAD_LEN {
            self.reject(key, mad, RmppStatus::BAD_LEN);
            return;
        }
        let mut first = [0u8; MAD_LEN];
        first.copy_from_slice(&mad[..MAD_LEN]);
        // The claimed length (segment 1's PayloadLength: the total after
        // the RMPP header, at least the message's data) only picks a pooled
        // buffer; nothing is allocated for it.
        let claim = (h.data2 != 0).then(|| hdr_len.saturating_add(h.data2 as usize));
        let (mut data, pooled) = match self.take_buffer(claim) {
            Some(b) => (b, true),
            None => (Vec::new(), false),
        };
        data.extend_from_slice(&mad[..hdr_len]);
        let t = Transfer {
            first,
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
        *self.per_source.entry(src).or_insert(0) += 1;
        self.place(key, mad, h, now);
    }

    fn continue_transfer(&mut self, key: TransferKey, mad: &[u8], h: &Header, now: Instant) {
        let window = self.cfg.window.max(1);
        let max_len = self.cfg.max_message_len;
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
        let placed = Self::place_in(t, mad, h, window, max_len);
        self.after_place(key, placed, now);
    }

    fn place(&mut self, key: TransferKey, mad: &[u8], h: &Header, now: Instant) {
        let window = self.cfg.window.max(1);
        let max_len = self.cfg.max_message_len;
        let Some(t) = self.transfers.get_mut(&key) else {
            return;
        };
        let placed = Self::place_in(t, mad, h, window, max_len);
        self.after_place(key, placed, now);
    }

    /// Checks segment `h.data1` against `t` and stores it; says what the
    /// table must do next.
    fn place_in(t: &mut Transfer, mad: &[u8], h: &Header, window: u32, max_len: usize) -> Placed {
        let n = h.data1;
        // Segment numbers beyond a known Last, or a Last below a segment
        // already received: the Last flag is inconsistent.
        if t.last_seg.is_some_and(|l| n > l) || (h.is_last() && n < t.max_seen) {
            return Placed::Fail(RmppStatus::S2B);
        }
        if (n as usize)
            .checked_mul(t.seg_size)
            .is_none_or(|e| e > max_len.saturating_add(t.seg_size))
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

    fn after_place(&mut self, key: TransferKey, placed: Placed, now: Instant) {
        match placed {
            Placed::Nothing => {}
            Placed::Ack => self.ack(key),
            Placed::Complete => self.complete(key, now),
            Placed::Fail(st) => self.fail(key, Some(st), Outcome::Aborted(st)),
        }
    }

    fn complete(&mut self, key: TransferKey, now: Instant) {
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
        message.truncate(len);
        if !t.pooled {
            message.shrink_to_fit();
        }
        t.have = Vec::new();
        t.state = State::Complete;
        self.active -= 1;
        let src = (key.src_lid, key.src_qp);
        if let Some(c) = self.per_source.get_mut(&src) {
            *c -= 1;
            if *c == 0 {
                self.per_source.remove(&src);
            }
        }
        self.ack(key);
        self.set_deadline(key, now + self.cfg.linger);
        self.out.push_back(Output::Delivered { key, message });
    }

    /// Ends expired transfers: active ones with ABORT(T2L) to the sender
    /// and [`Outcome::TimedOut`]; finished ones are forgotten. Does nothing
    /// before the earliest deadline.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(at, key)) = self.deadlines.first() {
            if at > now {
                break;
            }
            let active = self
                .transfers
                .get(&key)
                .is_some_and(|t| t.state == State::Active);
            if active {
                self.fail(key, Some(RmppStatus::T2L), Outcome::TimedOut);
            } else {
                self.remove(&key);
            }
        }
    }

    /// Drops every transfer (for example when the agent deregisters);
    /// active ones are reported as [`Outcome::Canceled`]. The buffer pool
    /// is emptied too.
    pub fn clear(&mut self) {
        let keys: Vec<TransferKey> = self.transfers.keys().copied().collect();
        for k in keys {
            if let Some(t) = self.remove(&k) {
                if t.state == State::Active {
                    self.out.push_back(Output::Ended {
                        key: k,
                        outcome: Outcome::Canceled,
                    });
                }
            }
        }
        self.pool = Vec::new();
        self.pool_capacity = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{FLAG_FIRST, FLAG_LAST};
    use crate::{SendEvent, Sender, SenderConfig};

    const SRC: (u16, u32) = (9, 1);

    fn seg(n: u32, flags: u8, d2: u32) -> Vec<u8> {
        let mut m = vec![0u8; MAD_LEN];
        m[0] = 1;
        m[1] = 3;
        m[2] = 2;
        m[3] = 0x92;
        m[8..16].copy_from_slice(&0xABu64.to_be_bytes());
        for (i, b) in m.iter_mut().enumerate().skip(56) {
            *b = (i as u32 + n) as u8;
        }
        write_header(
            &header(
                RmppType::DATA,
                0x1F,
                FLAG_ACTIVE | flags,
                RmppStatus::SUCCESS,
                n,
                d2,
            ),
            &mut m,
        );
        m
    }

    fn outputs(t: &mut ReceiverTable) -> Vec<Output> {
        std::iter::from_fn(|| t.poll_output()).collect()
    }

    fn sent(o: &[Output]) -> Vec<(RmppType, RmppStatus, u32, u32)> {
        o.iter()
            .filter_map(|x| match x {
                Output::Send { mad, .. } => {
                    let h = read_header(mad).unwrap();
                    Some((h.rmpp_type, h.status, h.data1, h.data2))
                }
                _ => None,
            })
            .collect()
    }

    fn ended(o: &[Output]) -> Option<Outcome> {
        o.iter().find_map(|x| match x {
            Output::Ended { outcome, .. } => Some(*outcome),
            _ => None,
        })
    }

    fn nack_case(mads: &[Vec<u8>], want: RmppStatus) {
        let now = Instant::now();
        let mut t = ReceiverTable::new(ReceiverConfig::default());
        let mut all = Vec::new();
        for m in mads {
            t.handle(m, SRC.0, SRC.1, now);
            all.extend(outputs(&mut t));
        }
        let s = sent(&all);
        let last = s.last().copied().unwrap();
        let rtype = if want == RmppStatus::RESX {
            RmppType::STOP
        } else {
            RmppType::ABORT
        };
        assert_eq!((last.0, last.1), (rtype, want), "{s:?}");
        assert_eq!(t.active(), 0, "no active transfer is left behind");
        // The owner learns that the transfer ended, with that status.
        assert_eq!(ended(&all), Some(Outcome::Aborted(want)), "{all:?}");
        // The far side ends the transfer with that status.
        let mut reply = None;
        for o in &all {
            if let Output::Send { mad, .. } = o {
                reply = Some(mad.clone());
            }
        }
        let mut tx =
            Sender::new(&mads[0][..56], &[0u8; 5000], SenderConfig::default(), now).unwrap();
        let _ = tx.poll_transmit(now);
        tx.handle_reply(&reply.unwrap(), now);
        assert_eq!(
            tx.poll_event(),
            Some(SendEvent::Finished(Outcome::Aborted(want)))
        );
    }

    #[test]
    fn segment_one_without_first_is_bad_seg() {
        nack_case(&[seg(1, 0, 0)], RmppStatus::BAD_SEG);
    }

    #[test]
    fn first_flag_on_a_later_segment_is_bad_seg() {
        nack_case(
            &[seg(1, FLAG_FIRST, 660), seg(2, FLAG_FIRST, 0)],
            RmppStatus::BAD_SEG,
        );
    }

    #[test]
    fn unsupported_version_is_unv() {
        let mut m = seg(1, FLAG_FIRST, 440);
        m[24] = 2;
        nack_case(&[m], RmppStatus::UNV);
    }

    #[test]
    fn illegal_type_is_badt() {
        let mut m = seg(1, FLAG_FIRST, 440);
        m[25] = 9;
        nack_case(&[m], RmppStatus::BADT);
    }

    #[test]
    fn data_with_a_status_is_bad_status() {
        let mut m = seg(1, FLAG_FIRST, 440);
        m[27] = 3;
        nack_case(&[m], RmppStatus::BAD_STATUS);
    }

    #[test]
    fn a_segment_beyond_the_last_is_s2b() {
        // Segment 3 says Last while 2 is missing; segment 4 then lies beyond it.
        nack_case(
            &[
                seg(1, FLAG_FIRST, 660),
                seg(3, FLAG_LAST, 100),
                seg(4, 0, 0),
            ],
            RmppStatus::S2B,
        );
    }

    #[test]
    fn last_length_over_220_is_bad_len() {
        nack_case(
            &[seg(1, FLAG_FIRST, 440), seg(2, FLAG_LAST, 221)],
            RmppStatus::BAD_LEN,
        );
    }

    #[test]
    fn a_continuation_segment_shorter_than_a_mad_is_bad_len_not_a_panic() {
        let mut short = seg(2, FLAG_LAST, 220);
        short.truncate(100);
        nack_case(&[seg(1, FLAG_FIRST, 440), short], RmppStatus::BAD_LEN);
    }

    #[test]
    fn first_total_disagreeing_with_the_last_is_bad_len() {
        nack_case(
            &[seg(1, FLAG_FIRST, 999), seg(2, FLAG_LAST, 220)],
            RmppStatus::BAD_LEN,
        );
    }

    #[test]
    fn a_message_past_the_bound_is_stopped_with_resx_and_allocates_no_more() {
        let now = Instant::now();
        let cfg = ReceiverConfig {
            max_message_len: 1000,
            ..ReceiverConfig::default()
        };
        let mut t = ReceiverTable::new(cfg);
        // The first segment claims 4 GiB: nothing is allocated for that.
        t.handle(&seg(1, FLAG_FIRST, u32::MAX), SRC.0, SRC.1, now);
        let mut all = outputs(&mut t);
        for n in 2..=10 {
            t.handle(&seg(n, 0, 0), SRC.0, SRC.1, now);
            all.extend(outputs(&mut t));
        }
        assert!(sent(&all).contains(&(RmppType::STOP, RmppStatus::RESX, 0, 0)));
        assert_eq!(ended(&all), Some(Outcome::Aborted(RmppStatus::RESX)));
        assert!(t.is_empty());
    }

    #[test]
    fn too_many_concurrent_transfers_from_one_source_are_stopped() {
        let now = Instant::now();
        let cfg = ReceiverConfig {
            max_per_source: 2,
            ..ReceiverConfig::default()
        };
        let mut t = ReceiverTable::new(cfg);
        for tid in 0..3u64 {
            let mut m = seg(1, FLAG_FIRST, 660);
            m[8..16].copy_from_slice(&tid.to_be_bytes());
            t.handle(&m, SRC.0, SRC.1, now);
        }
        let all = outputs(&mut t);
        assert_eq!(t.active(), 2);
        assert_eq!(
            sent(&all).last().map(|s| (s.0, s.1)),
            Some((RmppType::STOP, RmppStatus::RESX))
        );
        // Another source is not affected.
        t.handle(&seg(1, FLAG_FIRST, 660), 10, 1, now);
        assert_eq!(t.active(), 3);
    }

    #[test]
    fn an_idle_transfer_ends_after_the_total_time_with_abort_t2l() {
        let now = Instant::now();
        let mut t = ReceiverTable::new(ReceiverConfig::default());
        t.handle(&seg(1, FLAG_FIRST, 660), SRC.0, SRC.1, now);
        outputs(&mut t);
        t.handle_timeout(now + Duration::from_secs(39));
        assert_eq!(t.active(), 1, "an early timeout does nothing");
        t.handle_timeout(now + Duration::from_secs(40));
        let all = outputs(&mut t);
        assert_eq!(sent(&all), vec![(RmppType::ABORT, RmppStatus::T2L, 0, 0)]);
        assert_eq!(ended(&all), Some(Outcome::TimedOut));
        assert!(t.is_empty());
    }

    #[test]
    fn duplicates_are_re_acked_and_out_of_window_segments_dropped() {
        let now = Instant::now();
        let mut t = ReceiverTable::new(ReceiverConfig {
            window: 4,
            ..ReceiverConfig::default()
        });
        t.handle(&seg(1, FLAG_FIRST, 20 * 220), SRC.0, SRC.1, now);
        assert_eq!(
            sent(&outputs(&mut t)),
            vec![(RmppType::ACK, RmppStatus::SUCCESS, 1, 5)]
        );
        t.handle(&seg(1, FLAG_FIRST, 20 * 220), SRC.0, SRC.1, now);
        assert_eq!(
            sent(&outputs(&mut t)),
            vec![(RmppType::ACK, RmppStatus::SUCCESS, 1, 5)]
        );
        t.handle(&seg(9, 0, 0), SRC.0, SRC.1, now);
        assert!(outputs(&mut t).is_empty());
        assert_eq!(t.dropped, 1);
        // Out of order inside the window: no ACK until the window fills.
        for n in [3, 5, 4] {
            t.handle(&seg(n, 0, 0), SRC.0, SRC.1, now);
            assert!(outputs(&mut t).is_empty());
        }
        t.handle(&seg(2, 0, 0), SRC.0, SRC.1, now);
        assert_eq!(
            sent(&outputs(&mut t)),
            vec![(RmppType::ACK, RmppStatus::SUCCESS, 5, 9)]
        );
    }

    #[test]
    fn a_finished_transfer_lingers_then_is_forgotten() {
        let now = Instant::now();
        let mut t = ReceiverTable::new(ReceiverConfig::default());
        t.handle(&seg(1, FLAG_FIRST | FLAG_LAST, 120), SRC.0, SRC.1, now);
        let all = outputs(&mut t);
        assert!(all
            .iter()
            .any(|o| matches!(o, Output::Delivered { message, .. } if message.len() == 156)));
        assert_eq!(t.len(), 1);
        t.handle(&seg(1, FLAG_FIRST | FLAG_LAST, 120), SRC.0, SRC.1, now);
        let again = outputs(&mut t);
        assert_eq!(sent(&again).len(), 1, "re-ACKed, not delivered twice");
        assert!(!again.iter().any(|o| matches!(o, Output::Delivered { .. })));
        t.handle_timeout(now + Duration::from_secs(10));
        assert!(t.is_empty());
    }

    #[test]
    fn a_ds_ack_sets_the_response_window_of_the_completed_request() {
        let now = Instant::now();
        let mut t = ReceiverTable::new(ReceiverConfig::default());
        // A one-segment request (method GetMulti 0x14) completes here.
        let mut req = seg(1, FLAG_FIRST | FLAG_LAST, 120);
        req[3] = 0x14;
        t.handle(&req, SRC.0, SRC.1, now);
        let key = TransferKey::of(&req, SRC.0, SRC.1).unwrap();
        let acks = outputs(&mut t);
        let Some(Output::Send { mad: final_ack, .. }) =
            acks.iter().find(|o| matches!(o, Output::Send { .. }))
        else {
            panic!("no final ACK: {acks:?}");
        };
        assert_eq!(final_ack[3], 0x94, "the ACK flips the response bit");
        assert_eq!(t.response_window(&key), Some(1));
        // The requester's sender answers the final ACK with a DS ACK.
        let mut tx = Sender::new(
            &req[..56],
            &[0u8; 100],
            SenderConfig {
                expects_response: true,
                ..SenderConfig::default()
            },
            now,
        )
        .unwrap();
        let _ = tx.poll_transmit(now);
        tx.handle_reply(final_ack, now);
        let mut ds = tx.poll_transmit(now).unwrap();
        assert_eq!(ds[3], 0x14, "the DS ACK carries the request method");
        // Advertise a bigger window than 1 to see it taken.
        write_header(
            &header(RmppType::ACK, 0x1F, FLAG_ACTIVE, RmppStatus::SUCCESS, 0, 32),
            &mut ds,
        );
        t.handle(&ds, SRC.0, SRC.1, now);
        assert_eq!(t.response_window(&key), Some(32));
    }
}
