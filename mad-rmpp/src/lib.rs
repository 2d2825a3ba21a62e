//! # mad-rmpp
//!
//! Sans-IO RMPP (Reliable Multi-Packet Protocol) for InfiniBand MADs: a
//! [`Sender`] that segments a message and runs the ACK window, and a
//! [`ReceiverTable`] that reassembles inbound transfers, both as pure state
//! machines. They never perform I/O and never read a clock: every call takes
//! `now`, and each exposes `poll_timeout()` for the next deadline, so they
//! run the same under a virtual clock in tests as under the real runtime.
//!
//! The behaviour follows the Linux kernel's `mad_rmpp.c` (window of 64
//! granted by the receiver, first sender window 1, ACKs at window
//! boundaries / duplicates / completion, 2 s ACK wait, 40 s total receive
//! time, 10 s linger after completion, go-back-N on timeout) with these
//! deliberate departures, each documented where it happens:
//! - reassembly places a segment in O(1) (a bitmap and a flat buffer), not
//!   by a sorted-list walk;
//! - the receiver checks lengths (BAD_LEN) and segment numbers beyond the
//!   Last segment (S2B), which the kernel does not;
//! - a reassembly never grows past a configured bound, whatever the first
//!   segment claims, and the number of concurrent reassemblies per source
//!   and in total is bounded (STOP with RESX past either);
//! - transfers are keyed by the source's GID when the MAD came with a GRH
//!   (a [`Peer`]), not only by LID: on RoCE every peer is LID 0, and the
//!   kernel's LID key would merge their transfers. Replies go to the
//!   whole source address, GRH included ([`Output::Send`]);
//! - a malformed STOP / ABORT for a transfer being received is answered
//!   with ABORT(BAD_STATUS) and ends it; a sender whose segments are all
//!   acknowledged ignores a late STOP / ABORT (answering a malformed one);
//!   a repeated or stale ACK never extends a sender's ACK timer.
//!
//! # Memory under a hostile peer
//!
//! A [`ReceiverTable`] bounds everything a peer can make it hold, however
//! many sources it pretends to be (GIDs are cheap to forge):
//!
//! | what | bound | refused / evicted past it |
//! |---|---|---|
//! | reassembly buffers of active transfers | [`ReceiverConfig::max_bytes`] (default 256 MiB), [`ReceiverConfig::max_bytes_per_source`] (64 MiB) | STOP(RESX), [`ReceiverStats::refused_bytes`] |
//! | active transfers | [`ReceiverConfig::max_total`] (1024), [`ReceiverConfig::max_per_source`] (16) | STOP(RESX), [`ReceiverStats::refused_busy`] |
//! | finished transfers remembered | [`ReceiverConfig::max_lingering`] (4096), [`ReceiverConfig::max_lingering_per_source`] (256) | oldest forgotten, [`ReceiverStats::evicted_lingering`] |
//! | pooled buffers | [`ReceiverConfig::pool_bytes`] (16 MiB) | smallest dropped |
//!
//! Each transfer, active or finished, also costs a fixed record (the first
//! MAD kept as the ACK template, the reply address, the map and deadline
//! entries: under 600 bytes), and an active one a bitmap of one bit per
//! segment within its window (at most `max_bytes / 200 / 8` bytes over
//! the table). Worst case of one table, in bytes:
//!
//! `max_bytes + pool_bytes + (max_total + max_lingering) × 600 + max_bytes / 1600`
//!
//! which with the defaults is 256 MiB + 16 MiB + 3 MiB + 0.2 MiB, about
//! 275 MiB, whatever the peers send (before the kernel-like defaults a few
//! dozen unfinished large transfers could hold over a gigabyte, and
//! lingering finished transfers were unbounded). Delivered messages
//! belong to the owner and are not counted here. The test
//! `a_hostile_flood_stays_within_the_documented_worst_case` floods a table
//! from many sources with every kind of transfer and checks each bound.
//!
//! Buffers: a long-running user reuses its memory instead of paying the
//! kernel's page faults on fresh megabyte buffers for every transfer. The
//! sender owns its message ([`Sender::from_message`] takes the `Vec`
//! without copying it) and gives it back with [`Sender::into_message`], to
//! resend or to build the next message in; the receiver delivers each
//! message in its reassembly buffer, and [`ReceiverTable::recycle`] hands
//! that buffer back to a small bounded pool
//! ([`ReceiverConfig::pool_buffers`], [`ReceiverConfig::pool_bytes`]) that
//! the next large transfer is reassembled into.
//!
//! ```
//! use mad_rmpp::{Sender, SenderConfig, ReceiverTable, ReceiverConfig, Output};
//! use mad_wire::addr::Address;
//! use std::time::{Duration, Instant};
//!
//! // A 1,000-byte SA payload behind a 56-byte SA header.
//! let mut header = [0u8; 56];
//! header[0] = 1; header[1] = 0x03; header[2] = 2; header[3] = 0x92; // GetTableResp
//! header[8..16].copy_from_slice(&7u64.to_be_bytes());
//! let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
//! let now = Instant::now();
//! let mut tx = Sender::new(&header, &data, SenderConfig::default(), now).unwrap();
//! let mut rx = ReceiverTable::new(ReceiverConfig::default());
//! let mut delivered = None;
//! for _ in 0..100 {
//!     while let Some(seg) = tx.poll_transmit(now) {
//!         rx.handle(&seg, &Address::gsi(1), now);
//!     }
//!     while let Some(out) = rx.poll_output() {
//!         match out {
//!             Output::Send { mad, .. } => tx.handle_reply(&mad, now),
//!             Output::Delivered { message, .. } => delivered = Some(message),
//!             _ => {}
//!         }
//!     }
//!     if tx.is_finished() { break; }
//! }
//! let message = delivered.unwrap();
//! assert_eq!(&message[56..], &data[..]);
//! assert!(tx.is_finished());
//! ```
#![forbid(unsafe_code)]

pub mod peer;
pub mod receiver;
pub mod segment;
pub mod sender;

pub use peer::{reply_address, Peer, PeerAddr};
pub use receiver::{
    Output, ReceiverConfig, ReceiverStats, ReceiverTable, SourceUsage, TransferKey,
};
pub use sender::{SendEvent, Sender, SenderConfig};

/// `RMPP_VERSION` is the RMPP version this crate speaks.
pub use mad_wire::wire::rmpp::{RmppStatus, RmppType, RMPP_VERSION};

/// The maps of the receiver's transfer and per-source tables: foldhash's
/// seeded `RandomState` (not `FixedState`), so a peer cannot compute
/// colliding (source, TID) keys offline; both tables are capped by
/// [`ReceiverConfig`] as well.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Why a transfer could not be set up.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Input that is not a usable RMPP message or segment.
    #[error("malformed RMPP input: {reason} ({value})")]
    Malformed {
        /// What is wrong.
        reason: &'static str,
        /// The offending value.
        value: u64,
    },
    /// A message larger than the configured bound.
    #[error("message of {len} bytes exceeds the {max}-byte bound")]
    TooLong {
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
    },
}

/// How a transfer ended, as seen by one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Every segment was acknowledged (sender) or delivered (receiver).
    Success,
    /// The peer stopped or aborted the transfer with this RMPP status, or
    /// this side aborted it (and told the peer) with this status.
    Aborted(RmppStatus),
    /// No ACK (sender) or no progress (receiver) within the retries / the
    /// total time.
    TimedOut,
    /// Canceled by the owner.
    Canceled,
}

impl core::fmt::Display for Outcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Outcome::Success => f.write_str("success"),
            Outcome::Aborted(s) => write!(f, "aborted with RMPP status {} ({s})", s.0),
            Outcome::TimedOut => f.write_str("timed out"),
            Outcome::Canceled => f.write_str("canceled"),
        }
    }
}
