//! What the table holds per source and in total, against the byte
//! budgets and lingering limits of [`ReceiverConfig`].

use super::{ReceiverConfig, TransferKey};
use crate::peer::Peer;
use crate::segment::MAD_LEN;
use crate::FastMap;
use std::collections::VecDeque;

/// What one source holds in the table.
#[derive(Debug, Default)]
pub(super) struct SourceUse {
    /// Active reassemblies.
    pub(super) active: usize,
    /// Buffer capacity of its active reassemblies.
    pub(super) bytes: usize,
    /// Its finished transfers still remembered, oldest first.
    pub(super) lingering: VecDeque<TransferKey>,
}

impl SourceUse {
    pub(super) fn is_idle(&self) -> bool {
        self.active == 0 && self.bytes == 0 && self.lingering.is_empty()
    }
}

/// Per-source and total use of the table, against the byte budgets.
#[derive(Debug, Default)]
pub(super) struct Usage {
    /// Buffer capacity of every active reassembly.
    pub(super) bytes: usize,
    pub(super) sources: FastMap<Peer, SourceUse>,
}

impl Usage {
    pub(super) fn source(&mut self, p: Peer) -> &mut SourceUse {
        self.sources.entry(p).or_default()
    }

    pub(super) fn tidy(&mut self, p: Peer) {
        if self.sources.get(&p).is_some_and(SourceUse::is_idle) {
            self.sources.remove(&p);
        }
    }

    /// Capacity `cap` of a buffer of `p` is no longer held.
    pub(super) fn release(&mut self, p: Peer, cap: usize) {
        self.bytes = self.bytes.saturating_sub(cap);
        if let Some(s) = self.sources.get_mut(&p) {
            s.bytes = s.bytes.saturating_sub(cap);
        }
        self.tidy(p);
    }

    /// Capacity `cap` of a buffer of `p` is now held.
    pub(super) fn take(&mut self, p: Peer, cap: usize) {
        self.bytes += cap;
        self.source(p).bytes += cap;
    }

    /// How many more bytes `p` may take within both budgets.
    pub(super) fn room(&self, p: Peer, cfg: &ReceiverConfig) -> usize {
        let src = self.sources.get(&p).map_or(0, |s| s.bytes);
        cfg.max_bytes
            .saturating_sub(self.bytes)
            .min(cfg.max_bytes_per_source.saturating_sub(src))
    }

    /// Grows `data` (of `p`) to hold at least `needed` bytes, doubling
    /// where the budgets allow, never past them. A doubling stops at
    /// `hint` (the size the transfer claims to end with) when that holds
    /// `needed`: an honest transfer's last growth is then to its final
    /// size, not to twice the one before (a reallocation, and for a
    /// message of a megabyte a copy and fresh pages, fewer). A hint below
    /// `needed` is ignored, so a false claim only ever allocates less.
    /// False if `needed` does not fit.
    pub(super) fn grow(
        &mut self,
        p: Peer,
        cfg: &ReceiverConfig,
        data: &mut Vec<u8>,
        (needed, hint): (usize, Option<usize>),
    ) -> bool {
        let cap = data.capacity();
        if needed <= cap {
            return true;
        }
        let limit = cap + self.room(p, cfg);
        if needed > limit {
            return false;
        }
        let doubled = cap.saturating_mul(2).max(MAD_LEN);
        let doubled = hint
            .filter(|&h| h >= needed)
            .map_or(doubled, |h| doubled.min(h));
        let target = doubled
            .max(needed)
            .min(limit)
            .min(cfg.max_message_len.saturating_add(MAD_LEN).max(needed));
        data.reserve_exact(target - data.len());
        // The allocator may round up: count what it gave.
        let grown = data.capacity();
        self.take(p, grown - cap);
        true
    }
}

/// Removes `key` from `q`: at the front in the usual (oldest-first) case.
pub(super) fn forget(q: &mut VecDeque<TransferKey>, key: &TransferKey) {
    if q.front() == Some(key) {
        q.pop_front();
    } else if let Some(i) = q.iter().position(|k| k == key) {
        q.remove(i);
    }
}
