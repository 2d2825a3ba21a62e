//! The table's pool of cleared reassembly buffers (see the [module
//! documentation](super)).

use super::ReceiverTable;

impl ReceiverTable {
    /// Hands a delivered message's buffer back for reuse by a later
    /// transfer. The buffer is cleared (its capacity is kept). It is kept
    /// only within [`ReceiverConfig::pool_buffers`](super::ReceiverConfig::pool_buffers) and
    /// [`ReceiverConfig::pool_bytes`](super::ReceiverConfig::pool_bytes): when the pool would exceed either,
    /// its smallest buffers (possibly this one) are dropped. A buffer of
    /// at most [`ReceiverConfig::pool_min_len`](super::ReceiverConfig::pool_min_len) bytes of capacity, or more
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
    /// claim) of at most `room` bytes of capacity: the smallest that
    /// holds the claim, else the largest (it grows as segments arrive, as
    /// a fresh one would). Claims up to `pool_min_len` get none.
    pub(super) fn take_buffer(&mut self, claim: Option<usize>, room: usize) -> Option<Vec<u8>> {
        let cap = |i: &usize| self.pool[*i].capacity();
        let fits = |i: &usize| cap(i) <= room;
        let i = match claim {
            Some(c) if c <= self.cfg.pool_min_len => None,
            Some(c) => (0..self.pool.len())
                .filter(|i| fits(i) && cap(i) >= c)
                .min_by_key(cap)
                .or_else(|| (0..self.pool.len()).filter(fits).max_by_key(cap)),
            None => (0..self.pool.len()).filter(fits).max_by_key(cap),
        }?;
        let buf = self.pool.swap_remove(i);
        self.pool_capacity -= buf.capacity();
        Some(buf)
    }
}
