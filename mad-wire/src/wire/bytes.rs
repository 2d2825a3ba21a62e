//! Reading and writing bit ranges of a byte slice, for the `Repr`s and the
//! zero-copy views alike.
//!
//! - [`get_bits`] / [`set_bits`]: any big-endian bit range (re-exported
//!   as `wire::field::get_bits` / `set_bits`); `wire_struct!`'s `parse`
//!   and `emit` use them after checking the length.
//! - [`be_u16`] / [`be_u32`] / [`be_u64`] (re-exported from `wire::field`):
//!   a whole big-endian integer at a byte offset, 0 unless it is all
//!   there.
//! - `get` / `set` / `run` / `run_mut`: the same for the views' field
//!   accessors (the ones [`wire_struct!`](crate::wire_struct)'s `view`
//!   clause generates for [`Mad`](super::Mad), `RmppView`, `SaMad`, `Smp`
//!   and `VendorMad`), which must stay total over any buffer.
//! - [`view_methods!`]: the views' constructors.
//!
//! A view built with `new_unchecked` may wrap a buffer that ends before
//! some of its fields. These helpers keep every accessor total: a field
//! not wholly in the buffer reads as zero and a write to it is dropped.

use core::slice::SliceIndex;

use super::Error;

/// Reads `len` (1..=64) bits starting `off` bits from the MSB of `buf[0]`.
///
/// Bits beyond the end of `buf` read as zero, so this never panics; the
/// `Repr` parsers check the buffer length before reading.
#[inline(always)]
#[must_use]
pub fn get_bits(buf: &[u8], off: usize, len: usize) -> u64 {
    if len == 0 {
        return 0;
    }
    if off.is_multiple_of(8) && len.is_multiple_of(8) {
        // Byte-aligned: the common case, and the fast one.
        let start = off / 8;
        let n = len / 8;
        if let (true, Some(field)) = (n <= 8, buf.get(start..start + n)) {
            // Wholly inside: one big-endian load (with the width a constant
            // after inlining, a load and a byte swap instead of a loop).
            let mut w = [0u8; 8];
            w[8 - n..].copy_from_slice(field);
            return u64::from_be_bytes(w);
        }
        let mut acc = 0u64;
        for i in 0..n {
            acc = (acc << 8) | u64::from(buf.get(start + i).copied().unwrap_or(0));
        }
        return acc;
    }
    let first = off / 8;
    let last = (off + len - 1) / 8;
    let mut acc = 0u128;
    for i in first..=last {
        acc = (acc << 8) | u128::from(buf.get(i).copied().unwrap_or(0));
    }
    let shift = (last + 1) * 8 - (off + len);
    ((acc >> shift) & mask128(len)) as u64
}

/// Writes the low `len` bits of `value` at bit offset `off` (MSB-first),
/// leaving every other bit of `buf` untouched. Bits beyond the end of `buf`
/// are dropped; callers check the length first.
#[inline(always)]
pub fn set_bits(buf: &mut [u8], off: usize, len: usize, value: u64) {
    if len == 0 {
        return;
    }
    if off.is_multiple_of(8) && len.is_multiple_of(8) {
        let start = off / 8;
        let n = len / 8;
        if let (true, Some(field)) = (n <= 8, buf.get_mut(start..start + n)) {
            // Wholly inside: one big-endian store (see `get_bits`).
            field.copy_from_slice(&value.to_be_bytes()[8 - n..]);
            return;
        }
        for i in 0..n {
            if let Some(b) = buf.get_mut(start + i) {
                *b = (value >> (8 * (n - 1 - i))) as u8;
            }
        }
        return;
    }
    let first = off / 8;
    let last = (off + len - 1) / 8;
    let shift = (last + 1) * 8 - (off + len);
    let m = mask128(len) << shift;
    let v = (u128::from(value) << shift) & m;
    let nbytes = last - first + 1;
    for i in 0..nbytes {
        let byte_shift = 8 * (nbytes - 1 - i);
        let bm = (m >> byte_shift) as u8;
        let bv = (v >> byte_shift) as u8;
        if let Some(b) = buf.get_mut(first + i) {
            *b = (*b & !bm) | bv;
        }
    }
}

#[inline(always)]
fn mask128(len: usize) -> u128 {
    if len >= 128 {
        u128::MAX
    } else {
        (1u128 << len) - 1
    }
}

/// The bytes `[first, end)` that hold the bit range `off..off + len`, or
/// `None` if the range overflows.
#[inline(always)]
fn span(off: usize, len: usize) -> Option<core::ops::Range<usize>> {
    Some(off / 8..off.checked_add(len)?.div_ceil(8))
}

/// The big-endian `u16` at byte `at` of `b`, or 0 unless both of its
/// bytes are in `b`.
#[must_use]
pub fn be_u16(b: &[u8], at: usize) -> u16 {
    b.get(at..)
        .and_then(<[u8]>::first_chunk)
        .map_or(0, |a| u16::from_be_bytes(*a))
}

/// The big-endian `u32` at byte `at` of `b`, or 0 unless all four of its
/// bytes are in `b`.
#[must_use]
pub fn be_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..)
        .and_then(<[u8]>::first_chunk)
        .map_or(0, |a| u32::from_be_bytes(*a))
}

/// The big-endian `u64` at byte `at` of `b`, or 0 unless all eight of its
/// bytes are in `b`.
#[must_use]
pub fn be_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..)
        .and_then(<[u8]>::first_chunk)
        .map_or(0, |a| u64::from_be_bytes(*a))
}

/// A view's field: `len` (1..=64) bits at bit `off` of `b` (MSB first,
/// as [`get_bits`] counts them), or 0 unless every byte of the field is
/// in `b`.
#[inline(always)]
pub(crate) fn get(b: &[u8], off: usize, len: usize) -> u64 {
    span(off, len)
        .and_then(|r| b.get(r))
        .map_or(0, |f| get_bits(f, off % 8, len))
}

/// Writes the low `len` bits of `v` into a view's field at bit `off`,
/// leaving the other bits of its bytes alone; does nothing unless every
/// byte of the field is in `b`.
#[inline(always)]
pub(crate) fn set(b: &mut [u8], off: usize, len: usize, v: u64) {
    if let Some(f) = span(off, len).and_then(|r| b.get_mut(r)) {
        set_bits(f, off % 8, len, v);
    }
}

/// The `n` bytes at byte `i`, or an empty slice unless all are in `b`.
#[inline(always)]
pub(crate) fn run(b: &[u8], i: usize, n: usize) -> &[u8] {
    i.checked_add(n).and_then(|e| b.get(i..e)).unwrap_or(&[])
}

/// The `n` bytes at byte `i`, mutable, or an empty slice unless all are
/// in `b`.
#[inline(always)]
pub(crate) fn run_mut(b: &mut [u8], i: usize, n: usize) -> &mut [u8] {
    i.checked_add(n)
        .and_then(|e| b.get_mut(i..e))
        .unwrap_or(&mut [])
}

/// `&b[r]`, or an empty slice when `r` is not inside `b`.
#[inline(always)]
pub(crate) fn sub<R: SliceIndex<[u8], Output = [u8]>>(b: &[u8], r: R) -> &[u8] {
    b.get(r).unwrap_or(&[])
}

/// `&mut b[r]`, or an empty slice when `r` is not inside `b`.
#[inline(always)]
pub(crate) fn sub_mut<R: SliceIndex<[u8], Output = [u8]>>(b: &mut [u8], r: R) -> &mut [u8] {
    b.get_mut(r).unwrap_or(&mut [])
}

/// `Ok` when `b` holds at least `need` bytes, else [`Error::Truncated`]
/// naming `what`.
#[inline]
pub(crate) fn check_len(b: &[u8], need: usize, what: &'static str) -> Result<(), Error> {
    let got = b.len();
    if got < need {
        return Err(Error::Truncated { what, need, got });
    }
    Ok(())
}

/// Writes the methods every view `V<T> { buf: T }` repeats. Invoke it
/// inside the view's `impl<T: AsRef<[u8]>>` block (`mad_mut` and
/// `rmpp_mut` inside the `AsMut` one) with one entry per method:
///
/// - `new_unchecked;` and `new_checked(MIN_LEN, "What");` take the docs
///   written above them; `new_checked` fails with [`Error::Truncated`]
///   `{ what: "What", need: MIN_LEN, .. }` on a shorter buffer.
/// - `into_inner;`, `as_bytes;`, `mad;`, `mad_mut;`, `rmpp;` and
///   `rmpp_mut;` bring their usual one-line docs and take none.
///
/// `Error`, `Mad` and `RmppView` are the names in scope where it is used.
macro_rules! view_methods {
    ($( $(#[$doc:meta])* $method:ident $(($($arg:tt)*))?; )*) => {
        $( $crate::wire::bytes::view_methods!(@$method [$(#[$doc])*] $(($($arg)*))?); )*
    };
    (@new_unchecked [$($doc:tt)+]) => {
        $($doc)+
        pub fn new_unchecked(buf: T) -> Self {
            Self { buf }
        }
    };
    (@new_checked [$($doc:tt)+] ($need:expr, $what:literal)) => {
        $($doc)+
        pub fn new_checked(buf: T) -> Result<Self, Error> {
            $crate::wire::bytes::check_len(buf.as_ref(), $need, $what)?;
            Ok(Self { buf })
        }
    };
    (@into_inner []) => {
        /// The wrapped buffer.
        pub fn into_inner(self) -> T {
            self.buf
        }
    };
    (@as_bytes []) => {
        /// The whole buffer.
        pub fn as_bytes(&self) -> &[u8] {
            self.buf.as_ref()
        }
    };
    (@mad []) => {
        /// The common header as a view.
        pub fn mad(&self) -> Mad<&[u8]> {
            Mad::new_unchecked(self.buf.as_ref())
        }
    };
    (@mad_mut []) => {
        /// The common header as a mutable view.
        pub fn mad_mut(&mut self) -> Mad<&mut [u8]> {
            Mad::new_unchecked(self.buf.as_mut())
        }
    };
    (@rmpp []) => {
        /// The RMPP header as a view.
        pub fn rmpp(&self) -> RmppView<&[u8]> {
            RmppView::new_unchecked(self.buf.as_ref())
        }
    };
    (@rmpp_mut []) => {
        /// The RMPP header as a mutable view.
        pub fn rmpp_mut(&mut self) -> RmppView<&mut [u8]> {
            RmppView::new_unchecked(self.buf.as_mut())
        }
    };
}
pub(crate) use view_methods;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_integers_read_big_endian_or_zero_unless_all_there() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(be_u16(&b, 7), 0x0809);
        assert_eq!(be_u32(&b, 1), 0x0203_0405);
        assert_eq!(be_u64(&b, 1), 0x0203_0405_0607_0809);
        assert_eq!((be_u16(&b, 8), be_u32(&b, 6), be_u64(&b, 2)), (0, 0, 0));
        assert_eq!(be_u32(&b, usize::MAX), 0);
    }

    #[test]
    fn get_and_set_bits_agree_on_every_offset_and_width() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        for off in 0..40 {
            for len in 1..=64 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let v = if len == 64 {
                    seed
                } else {
                    seed & ((1 << len) - 1)
                };
                let mut buf = [0xA5u8; 16];
                let before = buf;
                set_bits(&mut buf, off, len, v);
                assert_eq!(get_bits(&buf, off, len), v, "off {off} len {len}");
                // Bits outside the range are untouched.
                for bit in (0..128).filter(|b| *b < off || *b >= off + len) {
                    assert_eq!(get_bits(&buf, bit, 1), get_bits(&before, bit, 1));
                }
            }
        }
    }

    #[test]
    fn get_bits_past_the_end_reads_zero_instead_of_panicking() {
        assert_eq!(get_bits(&[0xFF], 4, 12), 0xF00);
        assert_eq!(get_bits(&[], 0, 64), 0);
        let mut b = [0u8; 1];
        set_bits(&mut b, 4, 12, 0xFFF);
        assert_eq!(b, [0x0F]);
    }

    #[test]
    fn reads_inside_the_buffer_are_big_endian() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(get(&b, 64, 8), 9);
        assert_eq!(get(&b, 8, 16), 0x0203);
        assert_eq!(get(&b, 16, 32), 0x0304_0506);
        assert_eq!(get(&b, 8, 64), 0x0203_0405_0607_0809);
        assert_eq!(get(&b, 4, 8), 0x10, "unaligned: low nibble of 1, high of 2");
        assert_eq!(run(&b, 6, 3), &[7, 8, 9]);
    }

    #[test]
    fn a_field_not_wholly_in_the_buffer_reads_zero() {
        assert_eq!(get(&[0xAB], 0, 16), 0);
        assert_eq!(get(&[0xAB], 8, 8), 0);
        let b = [0xFFu8; 7];
        assert_eq!(get(&b, 32, 32), 0);
        assert_eq!(get(&b, 24, 32), 0xFFFF_FFFF);
        assert_eq!(get(&b, 0, 64), 0);
        assert_eq!(get(&b, 52, 5), 0, "bits 52..57 end in byte 7");
        assert_eq!(get(&b, 51, 5), 0x1F);
        assert!(run(&b, 6, 2).is_empty());
    }

    #[test]
    fn offsets_near_usize_max_read_zero_and_write_nothing() {
        let mut b = [0xFFu8; 8];
        assert_eq!(get(&b, usize::MAX, 1), 0);
        assert_eq!(get(&b, usize::MAX - 8, 16), 0);
        assert_eq!(get(&b, usize::MAX - 63, 64), 0);
        set(&mut b, usize::MAX - 15, 16, 0);
        assert!(run(&b, usize::MAX, 2).is_empty());
        assert!(run_mut(&mut b, usize::MAX, 2).is_empty());
        assert_eq!(b, [0xFF; 8]);
    }

    #[test]
    fn set_writes_only_a_whole_field_and_only_its_bits() {
        let mut b = [0u8; 4];
        set(&mut b, 16, 24, 0x01_0203);
        assert_eq!(b, [0; 4], "a field running past the end is dropped");
        set(&mut b, 8, 24, 0x01_0203);
        assert_eq!(b, [0, 1, 2, 3]);
        let mut b = [0xFFu8; 2];
        set(&mut b, 5, 3, 0);
        assert_eq!(b, [0xF8, 0xFF], "the other bits of the byte are kept");
        set(&mut b, 0, 5, 0x3F);
        assert_eq!(b, [0xF8, 0xFF], "only the low 5 bits of the value");
        run_mut(&mut b, 1, 1)[0] = 7;
        assert_eq!(b, [0xF8, 7]);
    }

    #[test]
    fn sub_slices_are_empty_outside_the_buffer() {
        let mut b = [1u8, 2, 3];
        assert_eq!(sub(&b, 1..), &[2, 3]);
        assert!(sub(&b, 4..).is_empty());
        assert!(sub(&b, 2..5).is_empty());
        sub_mut(&mut b, 2..)[0] = 9;
        assert!(sub_mut(&mut b, 5..).is_empty());
        assert_eq!(b, [1, 2, 9]);
    }

    #[test]
    fn check_len_names_the_structure_and_both_lengths() {
        assert_eq!(check_len(&[0; 24], 24, "MadHeader"), Ok(()));
        assert_eq!(
            check_len(&[0; 23], 24, "MadHeader"),
            Err(Error::Truncated {
                what: "MadHeader",
                need: 24,
                got: 23
            })
        );
    }
}
