//! [`Deadlines`]: the agent layer's timeout lists (one per agent for
//! response timeouts, one for RMPP sender timers).
//!
//! A min-heap of `(deadline, send index)` with lazy deletion. Each send
//! index has at most one live entry, named by a ticket kept per index;
//! removing an entry only clears its ticket, and the stale heap entry is
//! dropped when it reaches the top or when stale entries outnumber live
//! ones (the heap is then rebuilt from the live ones, amortized O(1) per
//! removal). The top of the heap is always live, so [`Deadlines::first`]
//! is a peek.
//!
//! Why not a `BTreeSet`: sends of one agent mostly share one timeout, so
//! their deadlines arrive in order and a push is one comparison, and a
//! response (the common end of a send) is a store of 0 instead of a tree
//! removal that walks and rebalances nodes. Both stay O(log n) at worst,
//! so the cost per operation stays flat as outstanding sends grow.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// Stale entries tolerated beyond the live count before a rebuild.
const SLACK: usize = 64;

/// A set of `(deadline, index)` ordered by deadline then index, with at
/// most one entry per index.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    heap: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    /// Ticket of each index's live entry (0: none).
    tickets: Vec<u64>,
    next: u64,
    live: usize,
}

impl Deadlines {
    /// Live entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// The earliest entry (smallest deadline, then smallest index).
    pub(crate) fn first(&self) -> Option<(Instant, usize)> {
        self.heap.peek().map(|Reverse((d, i, _))| (*d, *i))
    }

    /// Adds `idx` due at `d`, replacing the entry `idx` had.
    pub(crate) fn insert(&mut self, (d, idx): (Instant, usize)) {
        if idx >= self.tickets.len() {
            self.tickets.resize(idx + 1, 0);
        }
        if self.tickets[idx] != 0 {
            self.live -= 1;
        }
        self.next += 1;
        self.tickets[idx] = self.next;
        self.live += 1;
        self.heap.push(Reverse((d, idx, self.next)));
        self.settle();
    }

    /// Removes the entry of `idx` (the deadline is the caller's record of
    /// it and is not needed to find it); false if it had none.
    pub(crate) fn remove(&mut self, &(_, idx): &(Instant, usize)) -> bool {
        match self.tickets.get_mut(idx) {
            Some(t) if *t != 0 => {
                *t = 0;
                self.live -= 1;
                self.settle();
                true
            }
            _ => false,
        }
    }

    /// Restores the invariants: a live top, stale entries bounded.
    fn settle(&mut self) {
        if self.live == 0 {
            self.heap.clear();
            self.tickets.clear();
            return;
        }
        while let Some(Reverse((_, i, t))) = self.heap.peek() {
            if self.tickets.get(*i) == Some(t) {
                break;
            }
            self.heap.pop();
        }
        if self.heap.len() > 2 * self.live + SLACK {
            let tickets = &self.tickets;
            self.heap
                .retain(|Reverse((_, i, t))| tickets.get(*i) == Some(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::time::Duration;

    /// Same answers as a `BTreeSet<(Instant, usize)>` under a seeded
    /// random mix of inserts, replacements, removals and pops.
    #[test]
    fn behaves_like_an_ordered_set_with_one_entry_per_index() {
        let t0 = Instant::now();
        let mut model: BTreeSet<(Instant, usize)> = BTreeSet::new();
        let mut of: Vec<Option<Instant>> = vec![None; 300];
        let mut d = Deadlines::default();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let idx = (x % 300) as usize;
            let when = t0 + Duration::from_micros((x >> 20) % 5_000);
            match (x >> 40) % 4 {
                0 | 1 => {
                    if let Some(old) = of[idx].take() {
                        model.remove(&(old, idx));
                    }
                    model.insert((when, idx));
                    of[idx] = Some(when);
                    d.insert((when, idx));
                }
                2 => {
                    let had = of[idx].take();
                    if let Some(old) = had {
                        model.remove(&(old, idx));
                    }
                    assert_eq!(d.remove(&(when, idx)), had.is_some());
                }
                _ => {
                    if let Some(&(w, i)) = model.first() {
                        model.remove(&(w, i));
                        of[i] = None;
                        assert_eq!(d.first(), Some((w, i)));
                        assert!(d.remove(&(w, i)));
                    }
                }
            }
            assert_eq!(d.first(), model.first().copied());
            assert_eq!(d.len(), model.len());
            assert!(
                d.heap.len() <= 2 * d.live + SLACK + 1,
                "stale entries stay bounded"
            );
        }
    }

    #[test]
    fn emptied_lists_hold_nothing() {
        let t0 = Instant::now();
        let mut d = Deadlines::default();
        for i in 0..1000 {
            d.insert((t0 + Duration::from_millis(i as u64), i));
        }
        for i in (0..1000).rev() {
            assert!(d.remove(&(t0, i)));
        }
        assert_eq!(d.first(), None);
        assert!(d.heap.is_empty() && d.tickets.is_empty());
        assert!(!d.remove(&(t0, 5)), "nothing left to remove");
    }
}
