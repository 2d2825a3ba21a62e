//! Linear forwarding tables stored by 64-entry block, identical blocks
//! shared.
//!
//! A big fabric holds switches × LIDs entries twice (what the switches
//! hold, what SM-lite computed): 88 M each on the 30,528-node fat tree.
//! Their blocks repeat a great deal (a fat tree's leaves route every
//! other leaf's LIDs up the same way), so a table is a list of shared
//! blocks ([`Lft`]) and a [`BlockInterner`] hands out one copy of each
//! distinct block.

use std::ops::Index;
use std::sync::Arc;

use mad_core::hash::FastMap;

/// Entries of one LinearForwardingTable block.
pub const BLOCK: usize = 64;

/// One block of a linear forwarding table.
pub type Block = [u8; BLOCK];

/// "No route": an entry never written.
const NONE: u8 = 0xFF;

/// Hands out one shared copy of each distinct block. Blocks nobody holds
/// any more are let go when the table has doubled since it was last
/// cleaned, so it stays within twice the blocks in use.
#[derive(Debug, Default)]
pub struct BlockInterner {
    map: FastMap<Block, Arc<Block>>,
    kept: usize,
}

impl BlockInterner {
    /// The shared copy of `block`.
    pub fn intern(&mut self, block: &Block) -> Arc<Block> {
        if let Some(a) = self.map.get(block) {
            return Arc::clone(a);
        }
        if self.map.len() >= 2 * self.kept.max(1024) {
            self.map.retain(|_, a| Arc::strong_count(a) > 1);
            self.kept = self.map.len();
        }
        let a = Arc::new(*block);
        self.map.insert(*block, Arc::clone(&a));
        a
    }

    /// Distinct blocks held (some may be unused until the next clean-up).
    #[must_use]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no block was interned.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A linear forwarding table (entry = egress port of the LID of that
/// index, 0xFF = none) as shared blocks. Cloning is cheap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lft {
    len: usize,
    blocks: Arc<[Arc<Block>]>,
}

impl Lft {
    /// The table of `entries`, its blocks shared through `interner`.
    pub fn from_entries(entries: &[u8], interner: &mut BlockInterner) -> Self {
        let blocks: Vec<Arc<Block>> = entries
            .chunks(BLOCK)
            .map(|c| {
                let mut b = [NONE; BLOCK];
                b[..c.len()].copy_from_slice(c);
                interner.intern(&b)
            })
            .collect();
        Self {
            len: entries.len(),
            blocks: blocks.into(),
        }
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty table.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entry `i`.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&u8> {
        if i >= self.len {
            return None;
        }
        self.blocks.get(i / BLOCK).map(|b| &b[i % BLOCK])
    }

    /// Every entry in order.
    pub fn iter(&self) -> impl Iterator<Item = &u8> + '_ {
        self.blocks.iter().flat_map(|b| b.iter()).take(self.len)
    }

    /// Block `b` as it is written (entries past the end are 0xFF), the
    /// shared copy; `None` past the end of the table.
    #[must_use]
    pub fn block(&self, b: usize) -> Option<&Arc<Block>> {
        self.blocks.get(b)
    }
}

impl Index<usize> for Lft {
    type Output = u8;

    fn index(&self, i: usize) -> &u8 {
        match self.get(i) {
            Some(e) => e,
            None => panic!("LFT index {i} out of range (length {})", self.len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_blocks_are_shared_and_entries_read_back() {
        let mut int = BlockInterner::default();
        let entries: Vec<u8> = (0..200).map(|i| (i % 3) as u8).collect();
        let a = Lft::from_entries(&entries, &mut int);
        let b = Lft::from_entries(&entries, &mut int);
        assert_eq!(a, b);
        assert_eq!(a.len(), 200);
        assert!(a.iter().copied().eq(entries.iter().copied()));
        assert_eq!((a[199], a.get(200)), (199 % 3, None));
        // The last block is padded with "no route".
        assert_eq!(a.block(3).map(|b| (b[7], b[8])), Some((199 % 3, 0xFF)));
        assert!(Arc::ptr_eq(
            a.block(0).expect("block 0"),
            b.block(0).expect("block 0")
        ));
        // 0..64 and 64..128 differ by phase (64 % 3 = 1); 0 and 192.. too.
        assert_eq!(int.len(), 4);
    }

    #[test]
    fn unused_blocks_are_let_go_once_the_table_doubles() {
        let mut int = BlockInterner::default();
        let held = int.intern(&[1; BLOCK]);
        for i in 0..5000u32 {
            let mut b = [0u8; BLOCK];
            b[..4].copy_from_slice(&i.to_be_bytes());
            drop(int.intern(&b));
        }
        assert!(int.len() <= 2048, "{} blocks kept", int.len());
        // The block still held survived every clean-up.
        assert!(Arc::ptr_eq(&held, &int.intern(&[1; BLOCK])));
    }
}
