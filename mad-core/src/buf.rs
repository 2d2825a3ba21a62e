//! [`MadBuf`]: the bytes of one MAD in a fixed 256-byte buffer, or of a
//! longer message (an RMPP transfer) in a `Vec`.
//!
//! A MAD is at most 256 bytes, so the stack keeps it in a fixed-size
//! buffer the way the kernel keeps MADs in a slab cache: a buffer whose
//! `MadBuf` is dropped goes back to a small per-thread pool, and the next
//! MAD received or sent on that thread takes it from there instead of
//! asking the allocator. The pool is bounded ([`POOL_BUFFERS`] buffers per
//! thread); beyond it buffers are freed. Messages longer than one MAD (an
//! RMPP request or a reassembled RMPP answer) live in a `Vec`.
//!
//! Moving a `MadBuf` moves a pointer, not 256 bytes.
//!
//! ```
//! use mad_core::MadBuf;
//! let one = MadBuf::from_slice(&[1u8; 256]);
//! assert!(one.is_fixed());
//! assert_eq!(one.len(), 256);
//! let table = MadBuf::from(vec![0u8; 4096]);
//! assert!(!table.is_fixed());
//! assert_eq!(&table[..4], &[0, 0, 0, 0]);
//! assert_eq!(table.into_vec().len(), 4096);
//! ```

use std::cell::RefCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::wire::MAD_LEN;

/// How many free 256-byte buffers each thread keeps for reuse.
pub const POOL_BUFFERS: usize = 256;

type Fixed = Box<[u8; MAD_LEN]>;

thread_local! {
    static POOL: RefCell<Vec<Fixed>> = const { RefCell::new(Vec::new()) };
}

/// A free fixed buffer: from this thread's pool, else a new one. Its
/// bytes are whatever the last user left (only `len` of them are ever
/// visible).
fn take_fixed() -> Fixed {
    POOL.try_with(|p| p.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| Box::new([0u8; MAD_LEN]))
}

/// Gives a fixed buffer back to this thread's pool (freed if it is full
/// or the thread is exiting).
fn give_fixed(b: Fixed) {
    let _ = POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < POOL_BUFFERS {
            p.push(b);
        }
    });
}

/// The bytes of a MAD (a fixed buffer, up to 256) or of a longer message
/// (a `Vec`). Dereferences to `[u8]`; compares, hashes and prints as its
/// bytes.
pub struct MadBuf(Repr);

enum Repr {
    Fixed { len: u16, bytes: Fixed },
    Heap(Vec<u8>),
}

impl MadBuf {
    /// An empty buffer (allocates nothing).
    #[must_use]
    pub const fn new() -> Self {
        Self(Repr::Heap(Vec::new()))
    }

    /// A copy of `bytes`: in a fixed buffer when they fit one MAD, else in
    /// a `Vec`.
    #[must_use]
    pub fn from_slice(bytes: &[u8]) -> Self {
        if bytes.len() <= MAD_LEN {
            let mut b = take_fixed();
            b[..bytes.len()].copy_from_slice(bytes);
            Self(Repr::Fixed {
                // Cannot truncate: at most 256.
                len: bytes.len() as u16,
                bytes: b,
            })
        } else {
            Self(Repr::Heap(bytes.to_vec()))
        }
    }

    /// `len` (at most 256) zero bytes in a fixed buffer, to be filled in.
    #[must_use]
    pub fn zeroed(len: usize) -> Self {
        let len = len.min(MAD_LEN);
        let mut b = take_fixed();
        b[..len].fill(0);
        Self(Repr::Fixed {
            // Cannot truncate: at most 256.
            len: len as u16,
            bytes: b,
        })
    }

    /// A full 256-byte fixed buffer whose bytes are whatever its last
    /// user on this thread left, for a writer that overwrites all of them
    /// (an RMPP sender writing a segment): no copy, no zeroing.
    #[must_use]
    pub fn for_overwrite() -> Self {
        Self(Repr::Fixed {
            // Cannot truncate: 256.
            len: MAD_LEN as u16,
            bytes: take_fixed(),
        })
    }

    /// The bytes.
    #[must_use]
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Fixed { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(v) => v,
        }
    }

    /// The bytes, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Repr::Fixed { len, bytes } => &mut bytes[..usize::from(*len)],
            Repr::Heap(v) => v,
        }
    }

    /// Whether the bytes are in a fixed (pooled) MAD buffer.
    #[must_use]
    pub fn is_fixed(&self) -> bool {
        matches!(self.0, Repr::Fixed { .. })
    }

    /// Shortens the buffer to `len` bytes (nothing if it is not longer).
    pub fn truncate(&mut self, len: usize) {
        match &mut self.0 {
            Repr::Fixed { len: l, .. } => {
                if len < usize::from(*l) {
                    // Cannot truncate: less than the current length.
                    *l = len as u16;
                }
            }
            Repr::Heap(v) => v.truncate(len),
        }
    }

    /// The `Vec` of a message held on the heap, without a copy (to hand a
    /// large buffer back for reuse); `None` for a fixed buffer, which goes
    /// back to the pool.
    #[must_use]
    pub fn into_heap(mut self) -> Option<Vec<u8>> {
        match &mut self.0 {
            Repr::Fixed { .. } => None,
            Repr::Heap(v) => Some(std::mem::take(v)),
        }
    }

    /// The bytes as a `Vec` (a copy for a fixed buffer, which goes back to
    /// the pool; none for a `Vec`).
    #[must_use]
    pub fn into_vec(mut self) -> Vec<u8> {
        match &mut self.0 {
            Repr::Fixed { .. } => self.as_slice().to_vec(),
            Repr::Heap(v) => std::mem::take(v),
        }
    }
}

impl Drop for MadBuf {
    fn drop(&mut self) {
        if let Repr::Fixed { .. } = self.0 {
            if let Repr::Fixed { bytes, .. } =
                std::mem::replace(&mut self.0, Repr::Heap(Vec::new()))
            {
                give_fixed(bytes);
            }
        }
    }
}

impl Clone for MadBuf {
    fn clone(&self) -> Self {
        match &self.0 {
            Repr::Fixed { .. } => Self::from_slice(self.as_slice()),
            Repr::Heap(v) => Self(Repr::Heap(v.clone())),
        }
    }
}

impl Default for MadBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for MadBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl DerefMut for MadBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl AsRef<[u8]> for MadBuf {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsMut<[u8]> for MadBuf {
    #[inline]
    fn as_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

/// Keeps the vector (no copy), whatever its length.
impl From<Vec<u8>> for MadBuf {
    fn from(v: Vec<u8>) -> Self {
        Self(Repr::Heap(v))
    }
}

impl From<&[u8]> for MadBuf {
    fn from(b: &[u8]) -> Self {
        Self::from_slice(b)
    }
}

impl<const N: usize> From<[u8; N]> for MadBuf {
    fn from(b: [u8; N]) -> Self {
        Self::from_slice(&b)
    }
}

impl<const N: usize> From<&[u8; N]> for MadBuf {
    fn from(b: &[u8; N]) -> Self {
        Self::from_slice(b)
    }
}

impl From<MadBuf> for Vec<u8> {
    fn from(b: MadBuf) -> Self {
        b.into_vec()
    }
}

impl fmt::Debug for MadBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl PartialEq for MadBuf {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for MadBuf {}

impl std::hash::Hash for MadBuf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl PartialEq<[u8]> for MadBuf {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<&[u8]> for MadBuf {
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_slice() == *other
    }
}

impl PartialEq<Vec<u8>> for MadBuf {
    fn eq(&self, other: &Vec<u8>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<const N: usize> PartialEq<[u8; N]> for MadBuf {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.as_slice() == other.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled() -> usize {
        POOL.with(|p| p.borrow().len())
    }

    #[test]
    fn a_mad_sized_slice_is_held_in_a_fixed_buffer_and_reads_back_exactly() {
        for len in [0usize, 1, 24, 255, 256] {
            let bytes: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let b = MadBuf::from_slice(&bytes);
            assert!(b.is_fixed(), "{len} bytes");
            assert_eq!(b.len(), len);
            assert_eq!(b, bytes);
            assert_eq!(b.clone().into_vec(), bytes);
        }
    }

    #[test]
    fn a_longer_message_goes_to_a_vec_and_a_vec_is_kept_without_a_copy() {
        let long = vec![7u8; 257];
        let b = MadBuf::from_slice(&long);
        assert!(!b.is_fixed());
        assert_eq!(b, long);
        let v = vec![1u8, 2, 3];
        let ptr = v.as_ptr();
        let b = MadBuf::from(v);
        assert!(!b.is_fixed());
        let back = b.into_vec();
        assert_eq!(back.as_ptr(), ptr, "the Vec came back untouched");
        let again = MadBuf::from(back).into_heap().expect("heap-held");
        assert_eq!(again.as_ptr(), ptr, "into_heap gives the same Vec");
        assert_eq!(MadBuf::from_slice(&[1, 2]).into_heap(), None);
    }

    #[test]
    fn a_dropped_buffer_is_reused_without_showing_its_old_bytes() {
        let first = MadBuf::from_slice(&[0xAA; 256]);
        let addr = first.as_ptr();
        drop(first);
        let second = MadBuf::from_slice(&[1, 2, 3]);
        assert_eq!(second.as_ptr(), addr, "the pooled buffer is taken again");
        assert_eq!(second, [1u8, 2, 3], "only the new bytes are visible");
        let z = MadBuf::zeroed(256);
        assert!(z.iter().all(|&b| b == 0), "zeroed clears a reused buffer");
    }

    #[test]
    fn the_pool_keeps_at_most_its_bound_of_buffers() {
        let many: Vec<MadBuf> = (0..POOL_BUFFERS + 50)
            .map(|_| MadBuf::from_slice(&[0u8; 256]))
            .collect();
        drop(many);
        assert_eq!(pooled(), POOL_BUFFERS);
    }

    #[test]
    fn writes_and_truncation_affect_only_the_visible_bytes() {
        let mut b = MadBuf::from_slice(&[0u8; 256]);
        b[3] = 0x81;
        b.truncate(24);
        assert_eq!(b.len(), 24);
        assert_eq!(b[3], 0x81);
        b.truncate(100);
        assert_eq!(b.len(), 24, "truncate never grows");
        let mut h = MadBuf::from(vec![9u8; 300]);
        h.truncate(10);
        assert_eq!(h, vec![9u8; 10]);
    }

    #[test]
    fn equality_and_hash_follow_the_bytes_not_the_storage() {
        use std::collections::hash_map::DefaultHasher;
        use std::hash::{Hash, Hasher};
        let a = MadBuf::from_slice(&[5u8; 40]);
        let b = MadBuf::from(vec![5u8; 40]);
        assert_eq!(a, b);
        let h = |x: &MadBuf| {
            let mut s = DefaultHasher::new();
            x.hash(&mut s);
            s.finish()
        };
        assert_eq!(h(&a), h(&b));
        assert_eq!(format!("{a:?}"), format!("{:?}", vec![5u8; 40]));
    }
}
