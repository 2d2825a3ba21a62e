//! What the zero-copy views ([`Mad`](super::Mad), `RmppView`, `SaMad`,
//! `Smp`, `PerfMad`, `VendorMad`) share: panic-free big-endian readers and
//! writers over a byte slice, and [`view_methods!`] for their constructors.
//!
//! A view built with `new_unchecked` may wrap a buffer that ends before
//! some of its fields. These helpers keep every accessor total: a read past
//! the end gives zero and a write past the end is dropped.

use core::slice::SliceIndex;

use super::Error;

/// Byte `i` of `b`, or 0 past the end.
#[inline(always)]
pub(crate) fn byte(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// The big-endian `u16` at `i`; each of its bytes past the end reads as 0.
#[inline(always)]
pub(crate) fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([byte(b, i), byte(b, i.saturating_add(1))])
}

/// The `N` bytes at `i`, or `None` unless all of them are in `b`.
#[inline(always)]
pub(crate) fn array<const N: usize>(b: &[u8], i: usize) -> Option<[u8; N]> {
    b.get(i..i.checked_add(N)?)?.try_into().ok()
}

/// The big-endian `u32` at `i`, or 0 unless all four bytes are in `b`.
#[inline(always)]
pub(crate) fn be32(b: &[u8], i: usize) -> u32 {
    array(b, i).map_or(0, u32::from_be_bytes)
}

/// The big-endian `u64` at `i`, or 0 unless all eight bytes are in `b`.
#[inline(always)]
pub(crate) fn be64(b: &[u8], i: usize) -> u64 {
    array(b, i).map_or(0, u64::from_be_bytes)
}

/// Copies `bytes` into `b` at `i`; does nothing unless all of them fit.
#[inline(always)]
pub(crate) fn put(b: &mut [u8], i: usize, bytes: &[u8]) {
    let dst = i.checked_add(bytes.len()).and_then(|end| b.get_mut(i..end));
    if let Some(d) = dst {
        d.copy_from_slice(bytes);
    }
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
    fn reads_inside_the_buffer_are_big_endian() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(byte(&b, 8), 9);
        assert_eq!(be16(&b, 1), 0x0203);
        assert_eq!(be32(&b, 2), 0x0304_0506);
        assert_eq!(be64(&b, 1), 0x0203_0405_0607_0809);
        assert_eq!(array::<3>(&b, 6), Some([7, 8, 9]));
    }

    #[test]
    fn be16_reads_each_missing_byte_as_zero() {
        assert_eq!(be16(&[0xAB], 0), 0xAB00);
        assert_eq!(be16(&[0xAB], 1), 0);
        assert_eq!(byte(&[0xAB], 1), 0);
    }

    #[test]
    fn wider_reads_are_zero_unless_the_whole_field_is_there() {
        let b = [0xFFu8; 7];
        assert_eq!(be32(&b, 4), 0);
        assert_eq!(be32(&b, 3), 0xFFFF_FFFF);
        assert_eq!(be64(&b, 0), 0);
        assert_eq!(array::<2>(&b, 6), None);
    }

    #[test]
    fn offsets_near_usize_max_read_zero_and_write_nothing() {
        let mut b = [0xFFu8; 8];
        assert_eq!(byte(&b, usize::MAX), 0);
        assert_eq!(be16(&b, usize::MAX), 0);
        assert_eq!(be32(&b, usize::MAX - 1), 0);
        assert_eq!(be64(&b, usize::MAX), 0);
        put(&mut b, usize::MAX, &[0, 0]);
        assert_eq!(b, [0xFF; 8]);
    }

    #[test]
    fn put_writes_only_a_whole_field() {
        let mut b = [0u8; 4];
        put(&mut b, 2, &[1, 2, 3]);
        assert_eq!(b, [0; 4], "a field running past the end is dropped");
        put(&mut b, 1, &[1, 2, 3]);
        assert_eq!(b, [0, 1, 2, 3]);
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
