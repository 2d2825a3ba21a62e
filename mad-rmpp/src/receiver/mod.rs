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
mod reassembly;
mod replies;
mod transfer;

use crate::peer::{reply_address, Peer, PeerAddr};
use crate::segment::{read_header, Header, RmppStatus, RmppType};
use crate::FastMap;
use crate::Outcome;
use budget::Usage;
use mad_wire::addr::Address;
use mad_wire::wire::{Mad, MgmtClass};
use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};
use transfer::{State, Transfer};

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
    /// Hashes the TID and one word of the LID (16 bits), the QP number
    /// (24 bits on the wire) and the three class bytes as a single 128-bit
    /// write (foldhash mixes it with one multiplication), and a GID as a
    /// second one: the table is looked up once per received segment, so
    /// this is on the reassembly hot path. Equal keys give equal hashes.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let class = (u64::from(self.class) << 16)
            | (u64::from(self.class_version) << 8)
            | u64::from(self.method);
        let mut word = (u64::from(self.src.qpn) << 24) ^ class;
        if let PeerAddr::Lid(lid) = self.src.addr {
            word ^= u64::from(lid) << 48;
        }
        state.write_u128((u128::from(self.tid) << 64) | u128::from(word));
        if let PeerAddr::Gid(gid) = self.src.addr {
            state.write_u128(u128::from_be_bytes(gid));
        }
    }
}

impl TransferKey {
    /// The key of `mad` received from `src`.
    #[must_use]
    pub fn of(mad: &[u8], src: Peer) -> Option<Self> {
        if mad.len() < 16 {
            return None;
        }
        // Bytes 0..16 are there: every field read below is.
        let m = Mad::new_unchecked(mad);
        Some(Self {
            tid: m.tid(),
            src,
            class: m.mgmt_class().0,
            class_version: m.class_version(),
            method: m.raw_method(),
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

    /// True if `mad`, received from `src`, belongs to a transfer being
    /// received (same TID, class, method and peer as its segments): a
    /// STOP or ABORT that concerns that reassembly, not a transfer of
    /// ours with the same TID.
    #[must_use]
    pub fn receives(&self, mad: &[u8], src: &Address) -> bool {
        TransferKey::of(mad, Peer::of(src)).is_some_and(|k| self.is_active(&k))
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

    /// Takes one MAD received from `src` (its whole source address, GRH
    /// included): an RMPP-active DATA segment, or an ABORT / STOP / DS ACK
    /// for an inbound transfer. Transfers are told apart by
    /// [`Peer::of`]`(src)`: the source GID when there is a GRH, else the
    /// LID, and the QP. Returns `false` if the MAD is not RMPP-active (the
    /// caller delivers it as an ordinary MAD).
    pub fn handle(&mut self, mad: &[u8], src: &Address, now: Instant) -> bool {
        match read_header(mad) {
            Ok(h) => self.handle_parsed(mad, &h, src, now),
            Err(_) => false,
        }
    }

    /// [`handle`](Self::handle) for a caller that has already parsed the
    /// MAD's RMPP header (`h`, bytes 24..36 of `mad`), as the port layer
    /// does for every inbound MAD of an RMPP class: the header is not read
    /// a second time.
    pub fn handle_parsed(&mut self, mad: &[u8], h: &Header, src: &Address, now: Instant) -> bool {
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
            RmppType::DATA => {
                let seg = reassembly::Segment { key, src, mad, h };
                self.handle_data(seg, now);
            }
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
