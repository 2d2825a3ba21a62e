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

mod budget;
mod pool;

use crate::peer::{reply_address, Peer};
use crate::segment::{
    flip_response_bit, header, message_len, read_header, write_header, Header, RmppStatus,
    RmppType, FLAG_ACTIVE, MAD_LEN, RMPP_DATA, RMPP_HEADER_END,
};
use crate::FastMap;
use crate::Outcome;
use budget::{forget, Usage};
use mad_wire::addr::Address;
use mad_wire::wire::MgmtClass;
use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

/// Identifies one inbound transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TransferKey {
    /// Transaction ID.
    pub tid: u64,
    /// Where it comes from: the source GID when the MAD had a GRH, else
    /// the source LID, and the source QP.
    pub src: Peer,
    /// Management class.
    pub class: u8,
    /// Class version.
    pub class_version: u8,
    /// Method byte (with the response bit).
    pub method: u8,
}

impl std::hash::Hash for TransferKey {
    /// Hashes the TID, the peer and the three class bytes packed in one
    /// word: the table is looked up once per received segment, so this is
    /// on the reassembly hot path. Equal keys give equal hashes.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.tid);
        self.src.hash(state);
        state.write_u32(
            (u32::from(self.class) << 16)
                | (u32::from(self.class_version) << 8)
                | u32::from(self.method),
        );
    }
}

impl TransferKey {
    /// The key of `mad` received from `src`.
    #[must_use]
    pub fn of(mad: &[u8], src: Peer) -> Option<Self> {
        if mad.len() < 16 {
            return None;
        }
        let mut t = [0u8; 8];
        t.copy_from_slice(&mad[8..16]);
        Some(Self {
            tid: u64::from_be_bytes(t),
            src,
            class: mad[1],
            class_version: mad[2],
            method: mad[3],
        })
    }
}

/// Receiver parameters.
///
/// Every limit that protects the table from a hostile peer has a counter
/// in [`ReceiverStats`] that counts what it refused; the crate
/// documentation gives the worst-case memory they add up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Segments granted per window (kernel: 64).
    pub window: u32,
    /// Total time a transfer may take from segment 1 (kernel: 40 s).
    pub total_timeout: Duration,
    /// How long a finished transfer is remembered to re-ACK duplicates
    /// (kernel: 10 s).
    pub linger: Duration,
    /// Largest reassembled message, header included (default 64 MiB).
    pub max_message_len: usize,
    /// Concurrent active reassemblies from one source ([`Peer`]: GID or
    /// LID, and QP) (default 16).
    pub max_per_source: usize,
    /// Concurrent active reassemblies in the table (default 1024).
    pub max_total: usize,
    /// Most finished transfers remembered (lingering) in the table
    /// (default 4096). Past it the oldest is forgotten early
    /// ([`ReceiverStats::evicted_lingering`]): a duplicate of it is then
    /// treated as a new transfer.
    pub max_lingering: usize,
    /// Most finished transfers of one source remembered (default 256);
    /// past it that source's oldest is forgotten early.
    pub max_lingering_per_source: usize,
    /// Most bytes (buffer capacity) all active reassemblies of the table
    /// may hold together (default 256 MiB). A segment that would need
    /// more stops its transfer with STOP(RESX)
    /// ([`ReceiverStats::refused_bytes`]).
    pub max_bytes: usize,
    /// Most bytes the active reassemblies of one source may hold together
    /// (default 64 MiB, one message of the default `max_message_len`).
    pub max_bytes_per_source: usize,
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
            max_lingering: 4096,
            max_lingering_per_source: 256,
            max_bytes: 256 << 20,
            max_bytes_per_source: 64 << 20,
            pool_buffers: 4,
            pool_bytes: 16 << 20,
            pool_min_len: 4096,
        }
    }
}

/// What one source holds in a [`ReceiverTable`]
/// ([`ReceiverTable::source_usage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceUsage {
    /// Active reassemblies: at most [`ReceiverConfig::max_per_source`].
    pub active: usize,
    /// Buffer capacity of its active reassemblies: at most
    /// [`ReceiverConfig::max_bytes_per_source`].
    pub bytes: usize,
    /// Its finished transfers still remembered: at most
    /// [`ReceiverConfig::max_lingering_per_source`].
    pub lingering: usize,
}

/// What a [`ReceiverTable`] refused or dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Segments dropped as out of window or for unknown transfers.
    pub dropped: u64,
    /// New transfers stopped (RESX) because the table or their source
    /// had [`ReceiverConfig::max_total`] / [`ReceiverConfig::max_per_source`]
    /// active reassemblies.
    pub refused_busy: u64,
    /// Transfers stopped (RESX) because a segment would have taken the
    /// table or its source past [`ReceiverConfig::max_bytes`] /
    /// [`ReceiverConfig::max_bytes_per_source`].
    pub refused_bytes: u64,
    /// Finished transfers forgotten before their linger ended, to stay
    /// within [`ReceiverConfig::max_lingering`] /
    /// [`ReceiverConfig::max_lingering_per_source`].
    pub evicted_lingering: u64,
    /// Malformed STOP / ABORT MADs answered with ABORT(BAD_STATUS).
    pub bad_status: u64,
}

/// What the table asks its owner to do or reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send this MAD (ACK, ABORT or STOP) to `to`: the transfer's source
    /// address as received, GRH included, with the Q_Key of its QP
    /// ([`crate::reply_address`]).
    Send {
        /// The transfer.
        key: TransferKey,
        /// Where the MAD goes.
        to: Address,
        /// 256 bytes.
        mad: Vec<u8>,
    },
    /// A message was reassembled: its header (once) followed by its data.
    Delivered {
        /// The transfer.
        key: TransferKey,
        /// The source address of its first segment, GRH included.
        src: Address,
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
    /// The segment does not fit the byte budgets: STOP(RESX).
    RefusedBytes,
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
    /// Where replies go: segment 1's source address ([`reply_address`]).
    reply: Address,
    hdr_len: usize,
    seg_size: usize,
    /// The class header (segment 1's first `hdr_len` bytes) followed by
    /// the payloads placed so far: the delivered message is this buffer.
    /// Its capacity is counted in the table's [`Usage`].
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
    usage: Usage,
    active: usize,
    /// Finished transfers still remembered, oldest first.
    lingering: VecDeque<TransferKey>,
    out: VecDeque<Output>,
    /// Cleared buffers kept for reuse, bounded by the configuration.
    pool: Vec<Vec<u8>>,
    /// Sum of the capacities in `pool`.
    pool_capacity: usize,
    /// Segments dropped as out of window or for unknown transfers (also
    /// in [`ReceiverTable::stats`]).
    pub dropped: u64,
    stats: ReceiverStats,
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
            usage: Usage::default(),
            active: 0,
            lingering: VecDeque::new(),
            out: VecDeque::new(),
            pool: Vec::new(),
            pool_capacity: 0,
            dropped: 0,
            stats: ReceiverStats::default(),
        }
    }

    /// What the table refused or dropped so far.
    #[must_use]
    pub fn stats(&self) -> ReceiverStats {
        ReceiverStats {
            dropped: self.dropped,
            ..self.stats
        }
    }

    /// Bytes (buffer capacity) the active reassemblies hold now: at most
    /// [`ReceiverConfig::max_bytes`].
    #[must_use]
    pub fn held_bytes(&self) -> usize {
        self.usage.bytes
    }

    /// Finished transfers remembered now: at most
    /// [`ReceiverConfig::max_lingering`].
    #[must_use]
    pub fn lingering(&self) -> usize {
        self.lingering.len()
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

    /// What `src` holds in the table now: each field within its
    /// per-source bound of [`ReceiverConfig`] (all zero for a source the
    /// table holds nothing of).
    #[must_use]
    pub fn source_usage(&self, src: &Peer) -> SourceUsage {
        self.usage
            .sources
            .get(src)
            .map_or_else(SourceUsage::default, |s| SourceUsage {
                active: s.active,
                bytes: s.bytes,
                lingering: s.lingering.len(),
            })
    }

    /// Sources the table holds something of (an active or lingering
    /// transfer, or buffer bytes); 0 when the table is empty.
    #[must_use]
    pub fn sources(&self) -> usize {
        self.usage.sources.len()
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

    /// True while a transfer whose TID equals `tid` in the bits of
    /// `tid_mask`, of `class`, from `src` is being received (not yet
    /// complete): a requester whose answer is arriving this way lets the
    /// transfer's own timers govern it, as the kernel stops a request's
    /// timer at the answer's first segment.
    #[must_use]
    pub fn is_receiving(&self, tid: u64, tid_mask: u64, class: u8, src: &Peer) -> bool {
        self.transfers.iter().any(|(k, t)| {
            t.state == State::Active
                && k.tid & tid_mask == tid & tid_mask
                && k.class == class
                && k.src == *src
        })
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
            // ABORT/STOP carry no class data. The RMPP header stays, also
            // for a class with no class header (data at byte 24).
            let h = hdr_len_of(m[1]).clamp(RMPP_HEADER_END, MAD_LEN);
            m[h..].iter_mut().for_each(|b| *b = 0);
        }
        m
    }

    /// Sends ABORT with `st` (STOP for RESX), built on `mad`, to `to`.
    fn nack(&mut self, key: TransferKey, to: Address, mad: &[u8], st: RmppStatus) {
        let rtype = if st == RmppStatus::RESX {
            RmppType::STOP
        } else {
            RmppType::ABORT
        };
        self.out.push_back(Output::Send {
            key,
            to,
            mad: Self::reply(mad, rtype, st, 0, 0),
        });
    }

    /// Refuses a MAD received from `src` with `st` (ABORT, or STOP for
    /// RESX) and ends the transfer it belongs to: an active one is
    /// dropped; for a segment that belongs to no transfer,
    /// [`Output::Ended`] is still reported so that the owner of a waiting
    /// send learns at once that its response failed.
    fn reject(&mut self, key: TransferKey, src: &Address, mad: &[u8], st: RmppStatus) {
        self.nack(key, reply_address(src), mad, st);
        if self.is_active(&key) {
            self.fail(key, None, Outcome::Aborted(st));
        } else {
            self.out.push_back(Output::Ended {
                key,
                outcome: Outcome::Aborted(st),
            });
        }
    }

    fn is_active(&self, key: &TransferKey) -> bool {
        self.transfers
            .get(key)
            .is_some_and(|t| t.state == State::Active)
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
            let to = t.reply;
            self.out.push_back(Output::Send { key, to, mad: m });
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
        let data = std::mem::take(&mut t.data);
        self.usage.release(key.src, data.capacity());
        // A failed or canceled reassembly's buffer serves the next one.
        self.recycle(data);
        match t.state {
            State::Active => {
                self.active -= 1;
                if let Some(s) = self.usage.sources.get_mut(&key.src) {
                    s.active = s.active.saturating_sub(1);
                }
            }
            State::Complete => {
                forget(&mut self.lingering, key);
                if let Some(s) = self.usage.sources.get_mut(&key.src) {
                    forget(&mut s.lingering, key);
                }
            }
        }
        self.usage.tidy(key.src);
        Some(t)
    }

    /// Ends an active transfer with `outcome`, telling the sender with
    /// `nack` (an RMPP status) when given.
    fn fail(&mut self, key: TransferKey, nack: Option<RmppStatus>, outcome: Outcome) {
        if let Some(t) = self.remove(&key) {
            if let Some(st) = nack {
                let first = t.first;
                self.nack(key, t.reply, &first, st);
            }
            self.out.push_back(Output::Ended { key, outcome });
        }
    }

    /// Takes one MAD received from `src` (its whole source address, GRH
    /// included): an RMPP-active DATA segment, or an ABORT / STOP / DS ACK
    /// for an inbound transfer. Transfers are told apart by
    /// [`Peer::of`]`(src)`: the source GID when there is a GRH, else the
    /// LID, and the QP. Returns `false` if the MAD is not RMPP-active (the
    /// caller delivers it as an ordinary MAD).
    pub fn handle(&mut self, mad: &[u8], src: &Address, now: Instant) -> bool {
        let Ok(h) = read_header(mad) else {
            return false;
        };
        if !h.is_active() {
            return false;
        }
        let Some(key) = TransferKey::of(mad, Peer::of(src)) else {
            return false;
        };
        if h.version != crate::RMPP_VERSION {
            self.reject(key, src, mad, RmppStatus::UNV);
            return true;
        }
        match h.rmpp_type {
            RmppType::DATA => self.handle_data(key, src, mad, &h, now),
            RmppType::ABORT | RmppType::STOP => {
                if !h.status.is_valid_for(h.rmpp_type) {
                    // The kernel answers every malformed STOP / ABORT with
                    // ABORT(BAD_STATUS) (RMPP.md §4 steps 6, 7); the
                    // transfer it names is over for its sender too.
                    self.stats.bad_status += 1;
                    self.nack(key, reply_address(src), mad, RmppStatus::BAD_STATUS);
                    if self.is_active(&key) {
                        self.fail(key, None, Outcome::Aborted(RmppStatus::BAD_STATUS));
                    }
                } else if self.is_active(&key) {
                    // The sender gave up on an inbound transfer.
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
                self.reject(key, src, mad, RmppStatus::BADT);
            }
        }
        true
    }

    fn handle_data(
        &mut self,
        key: TransferKey,
        src: &Address,
        mad: &[u8],
        h: &Header,
        now: Instant,
    ) {
        if h.status != RmppStatus::SUCCESS {
            self.reject(key, src, mad, RmppStatus::BAD_STATUS);
            return;
        }
        if h.data1 == 0 || (h.data1 == 1) != h.is_first() {
            self.reject(key, src, mad, RmppStatus::BAD_SEG);
            return;
        }
        if h.data1 == 1 && !self.transfers.contains_key(&key) {
            self.start(key, src, mad, h, now);
        } else {
            self.continue_transfer(key, mad, h, now);
        }
    }

    fn start(&mut self, key: TransferKey, src: &Address, mad: &[u8], h: &Header, now: Instant) {
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
        if !self.usage.grow(key.src, &self.cfg, &mut data, hdr_len) {
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

    fn continue_transfer(&mut self, key: TransferKey, mad: &[u8], h: &Header, now: Instant) {
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

    fn place(&mut self, key: TransferKey, mad: &[u8], h: &Header, now: Instant) {
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
    fn place_in(
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
        if !usage.grow(src, cfg, &mut t.data, off + t.seg_size) {
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

    fn after_place(&mut self, key: TransferKey, placed: Placed, now: Instant) {
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
    fn bound_lingering(&mut self, src: Peer) {
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

    /// Ends expired transfers: active ones with ABORT(T2L) to the sender
    /// and [`Outcome::TimedOut`]; finished ones are forgotten. Does nothing
    /// before the earliest deadline.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(at, key)) = self.deadlines.first() {
            if at > now {
                break;
            }
            if self.is_active(&key) {
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
mod tests;
