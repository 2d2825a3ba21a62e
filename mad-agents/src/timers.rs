//! [`Deadlines`]: the engine's one timer table, and [`Timer`], what each
//! of its entries is for (a send's response timer, a send's RMPP timer,
//! an agent's RMPP reassembly timers). The next deadline of the engine is
//! [`Deadlines::first`], one lookup; an entry is set, moved and cleared by
//! its key, and the table holds each key's deadline
//! ([`Deadlines::get`]), so no send keeps a copy of it. (quinn-proto's
//! `TimerTable` keeps one slot per kind of a connection's timers; here a
//! kind times one of many sends, so the slots are keyed by send too.)
//!
//! Sends mostly share one timeout, so their deadlines arrive in order; a
//! send with a shorter timeout than the others is the earliest of all.
//! Entries are kept in a sorted deque when they fit at either end
//! (not earlier than its back, or not later than its front: O(1)), any
//! other in an ordered tree. A removal from the deque only clears the
//! entry's ticket (kept per send index): the stale entry is dropped when it
//! reaches the front, or when stale entries outnumber live ones (the deque
//! is then compacted, amortized O(1) per removal). The front of the deque
//! is always live, so [`Deadlines::first`] compares two candidates.
//!
//! In the common cases (a response arrives for a send with the agent's
//! usual timeout, or for one with a shorter timeout) an insert is a push
//! and a removal is a store; deadlines that land in the middle cost a tree
//! operation, O(log n). The cost per operation stays flat as outstanding
//! sends grow.

use std::collections::{BTreeSet, VecDeque};
use std::time::Instant;

/// Stale deque entries tolerated beyond the live count before compaction.
const SLACK: usize = 64;

/// Marks a send index whose entry is in the tree.
const IN_TREE: u64 = 1 << 63;

/// What an entry of the engine's timer table is for. Its key in
/// [`Deadlines`] packs the kind with the send's or agent's slab index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The response timer of send `idx` (wait, retry, give up).
    Response(usize),
    /// The RMPP timer of send `idx`'s transfer (ACK timeout, absolute
    /// deadline).
    RmppSend(usize),
    /// The earliest timer of agent `idx`'s RMPP reassemblies.
    RmppRecv(usize),
}

impl Timer {
    const KINDS: usize = 3;

    /// Its key in the table.
    pub(crate) fn key(self) -> usize {
        match self {
            Timer::Response(i) => i * Self::KINDS,
            Timer::RmppSend(i) => i * Self::KINDS + 1,
            Timer::RmppRecv(i) => i * Self::KINDS + 2,
        }
    }

    /// The timer a key names.
    pub(crate) fn of(key: usize) -> Self {
        let i = key / Self::KINDS;
        match key % Self::KINDS {
            0 => Timer::Response(i),
            1 => Timer::RmppSend(i),
            _ => Timer::RmppRecv(i),
        }
    }
}

/// A set of `(deadline, index)` ordered by deadline then index, with at
/// most one entry per index.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    /// Sorted entries that fit at an end: (deadline, index, ticket).
    sorted: VecDeque<(Instant, usize, u64)>,
    sorted_live: usize,
    /// Entries that fit at neither end.
    tree: BTreeSet<(Instant, usize)>,
    /// The tree's first entry, kept so that [`Deadlines::first`] does not
    /// walk the tree (it is asked on every poll).
    tree_first: Option<(Instant, usize)>,
    /// Per index: 0 (no entry), `IN_TREE`, or the ticket of its deque
    /// entry; and its deadline.
    slots: Vec<(u64, Instant)>,
    next: u64,
}

impl Deadlines {
    /// Live entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.sorted_live + self.tree.len()
    }

    /// The deadline of `idx`'s entry, if it has one.
    pub(crate) fn get(&self, idx: usize) -> Option<Instant> {
        self.slots
            .get(idx)
            .filter(|&&(t, _)| t != 0)
            .map(|&(_, d)| d)
    }

    /// True if `idx` has an entry.
    pub(crate) fn contains(&self, idx: usize) -> bool {
        self.slots.get(idx).is_some_and(|&(t, _)| t != 0)
    }

    /// The earliest entry (smallest deadline, then smallest index).
    pub(crate) fn first(&self) -> Option<(Instant, usize)> {
        let f = self.sorted.front().map(|&(d, i, _)| (d, i));
        let t = self.tree_first;
        match (f, t) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Adds `idx` due at `d`, replacing the entry `idx` had.
    pub(crate) fn insert(&mut self, d: Instant, idx: usize) {
        if self.take(idx) {
            self.settle();
        }
        if idx >= self.slots.len() {
            self.slots.resize(idx + 1, (0, d));
        }
        let key = (d, idx);
        let at_back = self
            .sorted
            .back()
            .is_none_or(|&(bd, bi, _)| key >= (bd, bi));
        let at_front = !at_back
            && self
                .sorted
                .front()
                .is_some_and(|&(fd, fi, _)| key <= (fd, fi));
        if at_back || at_front {
            self.next += 1;
            let e = (d, idx, self.next);
            if at_back {
                self.sorted.push_back(e);
            } else {
                self.sorted.push_front(e);
            }
            self.sorted_live += 1;
            self.slots[idx] = (self.next, d);
        } else {
            self.tree.insert(key);
            if self.tree_first.is_none_or(|f| key < f) {
                self.tree_first = Some(key);
            }
            self.slots[idx] = (IN_TREE, d);
        }
    }

    /// Removes the entry of `idx`; false if it had none.
    pub(crate) fn remove(&mut self, idx: usize) -> bool {
        let had = self.take(idx);
        if had {
            self.settle();
        }
        had
    }

    /// Drops the entry of `idx`, if any, without restoring invariants.
    fn take(&mut self, idx: usize) -> bool {
        let Some(slot) = self.slots.get_mut(idx) else {
            return false;
        };
        let (t, d) = *slot;
        *slot = (0, d);
        match t {
            0 => false,
            IN_TREE => {
                self.tree.remove(&(d, idx));
                if self.tree_first == Some((d, idx)) {
                    self.tree_first = self.tree.first().copied();
                }
                true
            }
            _ => {
                self.sorted_live -= 1;
                true
            }
        }
    }

    fn live(&self, &(_, i, t): &(Instant, usize, u64)) -> bool {
        self.slots.get(i).is_some_and(|s| s.0 == t)
    }

    /// Restores the invariants: live deque ends, stale entries bounded,
    /// nothing held when empty.
    fn settle(&mut self) {
        if self.sorted_live == 0 {
            self.sorted.clear();
            if self.tree.is_empty() {
                self.slots.clear();
            }
            return;
        }
        while let Some(front) = self.sorted.front() {
            if self.live(front) {
                break;
            }
            self.sorted.pop_front();
        }
        while let Some(back) = self.sorted.back() {
            if self.live(back) {
                break;
            }
            self.sorted.pop_back();
        }
        if self.sorted.len() > 2 * self.sorted_live + SLACK {
            let slots = &self.slots;
            self.sorted
                .retain(|&(_, i, t)| slots.get(i).is_some_and(|s| s.0 == t));
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
                    d.insert(when, idx);
                }
                2 => {
                    let had = of[idx].take();
                    if let Some(old) = had {
                        model.remove(&(old, idx));
                    }
                    assert_eq!(d.remove(idx), had.is_some());
                }
                _ => {
                    if let Some(&(w, i)) = model.first() {
                        model.remove(&(w, i));
                        of[i] = None;
                        assert_eq!(d.first(), Some((w, i)));
                        assert!(d.remove(i));
                    }
                }
            }
            assert_eq!(d.first(), model.first().copied());
            assert_eq!(d.len(), model.len());
            assert!(
                d.sorted.len() <= 2 * d.sorted_live + SLACK + 1,
                "stale entries stay bounded"
            );
        }
    }

    #[test]
    fn replacing_the_only_entry_keeps_the_new_one() {
        let t0 = Instant::now();
        let mut d = Deadlines::default();
        d.insert(t0 + Duration::from_millis(5), 3);
        d.insert(t0 + Duration::from_millis(1), 3);
        assert_eq!(d.first(), Some((t0 + Duration::from_millis(1), 3)));
        assert_eq!(d.len(), 1);
        d.insert(t0 + Duration::from_millis(9), 3);
        assert_eq!(d.first(), Some((t0 + Duration::from_millis(9), 3)));
        assert!(d.remove(3));
        assert_eq!(d.first(), None);
    }

    #[test]
    fn emptied_lists_hold_nothing() {
        let t0 = Instant::now();
        let mut d = Deadlines::default();
        for i in 0..1000 {
            d.insert(t0 + Duration::from_millis(i as u64), i);
        }
        for i in (0..1000).rev() {
            assert!(d.remove(i));
        }
        assert_eq!(d.first(), None);
        assert!(d.sorted.is_empty() && d.tree.is_empty() && d.slots.is_empty());
        assert!(!d.remove(5), "nothing left to remove");
    }
}
