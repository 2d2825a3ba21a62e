//! The state of one inbound transfer: its reassembly buffer, the bitmap
//! of segments placed, and the window.

use mad_wire::addr::Address;
use std::time::Instant;

use crate::segment::{RmppStatus, MAD_LEN, RMPP_DATA};

/// What placing a segment asks the table to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Placed {
    Nothing,
    Ack,
    Complete,
    Fail(RmppStatus),
    /// The segment does not fit the byte budgets: STOP(RESX).
    RefusedBytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Active,
    Complete,
}

#[derive(Debug)]
pub(super) struct Transfer {
    /// The first segment's first 256 bytes (header template for ACKs and
    /// for the delivered message).
    pub(super) first: [u8; MAD_LEN],
    /// Where replies go: segment 1's source address ([`reply_address`]).
    pub(super) reply: Address,
    pub(super) hdr_len: usize,
    pub(super) seg_size: usize,
    /// The class header (segment 1's first `hdr_len` bytes) followed by
    /// the payloads placed so far: the delivered message is this buffer.
    /// Its capacity is counted in the table's [`Usage`].
    pub(super) data: Vec<u8>,
    /// `data` came from the pool: it is delivered at its capacity (the
    /// owner is expected to recycle it), not shrunk.
    pub(super) pooled: bool,
    pub(super) have: Vec<u64>,
    /// Highest in-order segment.
    pub(super) seg_num: u32,
    /// Highest segment received at all.
    pub(super) max_seen: u32,
    pub(super) newwin: u32,
    pub(super) last_seg: Option<u32>,
    pub(super) last_len: u32,
    pub(super) first_total: u32,
    pub(super) state: State,
    pub(super) deadline: Instant,
    /// Window the requester advertised in a DS ACK (double-sided).
    pub(super) repwin: u32,
}

impl Transfer {
    /// The buffer an honest transfer ends with, from segment 1's
    /// PayloadLength (`first_total`: every segment's bytes after the RMPP
    /// header, the last one's padding excluded): the class header and
    /// that many whole segment payloads. `None` without a claim. Only
    /// ever used to stop doubling short of it, never to allocate more.
    pub(super) fn size_hint(&self) -> Option<usize> {
        let segments = self.first_total.div_ceil(RMPP_DATA) as usize;
        (segments > 0).then(|| {
            segments
                .saturating_mul(self.seg_size)
                .saturating_add(self.hdr_len)
        })
    }

    pub(super) fn has(&self, n: u32) -> bool {
        let i = (n - 1) as usize;
        self.have
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    pub(super) fn set(&mut self, n: u32) {
        let i = (n - 1) as usize;
        if self.have.len() <= i / 64 {
            self.have.resize(i / 64 + 1, 0);
        }
        self.have[i / 64] |= 1 << (i % 64);
    }
}
