//! Bit-field machinery shared by every `Repr` in [`crate::wire`].
//!
//! IBA layouts are given as big-endian bit ranges: a field starts at a bit
//! offset counted from the most significant bit of the structure's first byte
//! and spans `len` bits (this is the numbering libibmad's `fields.c` uses
//! once its 32-bit-word shuffle is undone). [`get_bits`] and [`set_bits`]
//! read and write such ranges; the [`wire_struct!`](crate::wire_struct) macro
//! builds a plain struct plus `parse` / `emit` and a field table from a list
//! of those ranges.
//!
//! Every struct declared with the macro covers **every bit** of its wire
//! length with exactly one field (reserved ranges are fields too, named
//! `reserved*` with no print label), so `emit(parse(bytes)) == bytes` holds
//! for any input, and a unit test per struct checks the coverage.

pub use super::bytes::{be_u16, be_u32, be_u64, get_bits, set_bits};
use super::Error;

/// How a field of a `wire_struct` is laid out, for generic walkers (the
/// `mad decode` printer, the interop tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// An unsigned integer (or wire enum) of `bit_len` bits.
    Uint,
    /// A run of whole bytes (GIDs, strings, paths).
    Bytes,
    /// `count` integers of `elem_bits` bits each, packed MSB-first.
    Array {
        /// Width of one element in bits.
        elem_bits: u32,
        /// Number of elements.
        count: u32,
    },
    /// Another `wire_struct` embedded at a byte boundary.
    Nested,
}

/// Static description of one field of a `wire_struct`.
#[derive(Debug, Clone, Copy)]
pub struct FieldDesc {
    /// The Rust field name (snake case).
    pub name: &'static str,
    /// The label infiniband-diags / libibmad print for it, if it has one.
    /// `None` marks a reserved field.
    pub label: Option<&'static str>,
    /// Offset in bits from the MSB of the structure's first byte.
    pub bit_offset: u32,
    /// Total width in bits.
    pub bit_len: u32,
    /// Layout kind.
    pub kind: FieldKind,
    /// For wire-enum fields: the symbolic name of a value, if known.
    pub value_name: Option<fn(u64) -> Option<&'static str>>,
}

impl FieldDesc {
    /// True for reserved ranges (no label).
    #[must_use]
    pub fn is_reserved(&self) -> bool {
        self.label.is_none()
    }
}

/// A field's value, borrowed from its struct.
#[derive(Debug)]
pub enum FieldValue<'a> {
    /// Integer / enum / flag value.
    Uint(u64),
    /// Raw bytes.
    Bytes(&'a [u8]),
    /// Packed integer array, widened.
    Array(Vec<u64>),
    /// An embedded structure.
    Nested(&'a dyn Fields),
}

/// Generic, reflective access to the fields of a wire structure.
pub trait Fields: core::fmt::Debug {
    /// The structure's name (`"NodeInfo"`).
    fn struct_name(&self) -> &'static str;
    /// The field table, in wire order.
    fn field_descs(&self) -> &'static [FieldDesc];
    /// The value of field `index` of [`Fields::field_descs`].
    fn field_value(&self, index: usize) -> Option<FieldValue<'_>>;
}

/// A fixed-size wire structure with lossless parse and emit.
pub trait Repr: Sized {
    /// Name used in error messages.
    const NAME: &'static str;
    /// Length on the wire in bytes.
    const LEN: usize;

    /// Parses the first [`Repr::LEN`] bytes of `buf`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is shorter than `LEN`.
    fn parse(buf: &[u8]) -> Result<Self, Error>;

    /// Writes the structure into the first [`Repr::LEN`] bytes of `buf`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is too short, [`Error::FieldOverflow`]
    /// when a field holds a value wider than its bit range.
    fn emit(&self, buf: &mut [u8]) -> Result<(), Error>;

    /// Bytes needed by [`Repr::emit`].
    fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Emits into a fresh vector of [`Repr::LEN`] bytes.
    ///
    /// # Errors
    /// As [`Repr::emit`].
    fn to_vec(&self) -> Result<Vec<u8>, Error> {
        let mut v = vec![0u8; Self::LEN];
        self.emit(&mut v)?;
        Ok(v)
    }
}

/// A type that can live in an integer bit range of a `wire_struct`.
pub trait FieldInt: Copy {
    /// Widens to `u64`.
    fn to_u64(self) -> u64;
    /// Narrows from `u64` (the caller passes at most the field's width).
    fn from_u64(v: u64) -> Self;
    /// Symbolic names of values, for wire enums.
    const VALUE_NAME: Option<fn(u64) -> Option<&'static str>> = None;
}

macro_rules! impl_field_int {
    ($($t:ty),*) => {$(
        impl FieldInt for $t {
            #[inline(always)]
            fn to_u64(self) -> u64 { self as u64 }
            #[inline(always)]
            fn from_u64(v: u64) -> Self { v as $t }
        }
    )*};
}
impl_field_int!(u8, u16, u32, u64);

impl FieldInt for bool {
    #[inline(always)]
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v != 0
    }
}

/// Zero value of a field type (arrays of any length included, which
/// `Default` does not cover).
pub trait Zero {
    /// The all-zero value.
    fn zero() -> Self;
}

macro_rules! impl_zero {
    ($($t:ty),*) => {$( impl Zero for $t { #[inline] fn zero() -> Self { 0 as $t } } )*};
}
impl_zero!(u8, u16, u32, u64);
impl Zero for bool {
    fn zero() -> Self {
        false
    }
}
impl<T: Zero + Copy, const N: usize> Zero for [T; N] {
    fn zero() -> Self {
        [T::zero(); N]
    }
}

/// Checks that `value` fits in `bits` bits.
#[inline(always)]
#[doc(hidden)]
pub fn check_fits(
    what: &'static str,
    field: &'static str,
    value: u64,
    bits: u32,
) -> Result<(), Error> {
    if bits < 64 && value >> bits != 0 {
        return Err(Error::FieldOverflow {
            what,
            field,
            value,
            bits,
        });
    }
    Ok(())
}

/// Verifies that a field table covers `len_bytes * 8` bits exactly once,
/// in ascending order. Used by the per-struct unit tests.
///
/// # Errors
/// A description of the first gap or overlap.
pub fn check_coverage(descs: &[FieldDesc], len_bytes: usize) -> Result<(), String> {
    let mut pos = 0u32;
    for d in descs {
        if d.bit_offset != pos {
            return Err(format!(
                "field {} starts at bit {} but the previous field ends at bit {}",
                d.name, d.bit_offset, pos
            ));
        }
        if d.bit_len == 0 {
            return Err(format!("field {} has zero width", d.name));
        }
        pos += d.bit_len;
    }
    if pos as usize != len_bytes * 8 {
        return Err(format!(
            "fields cover {} bits but the structure is {} bits",
            pos,
            len_bytes * 8
        ));
    }
    Ok(())
}

/// Declares a fixed-layout wire structure: a plain struct with public fields,
/// `Default`, [`Repr`] (parse/emit) and [`Fields`] (reflection).
///
/// Field kinds:
/// - `name: uint TYPE [bit_offset, bit_len] => "Label" | _,`: an integer,
///   `bool` or wire enum (any [`FieldInt`]) in a bit range;
/// - `name: bytes [u8; N] [byte_offset] => ...,`: whole bytes;
/// - `name: array [T; N] [bit_offset, elem_bits] => ...,`: packed integers;
/// - `name: nested TYPE [byte_offset] => ...,`: another `wire_struct`.
///
/// A label of `_` marks a reserved field.
///
/// **Views.** Inside this crate, `pub struct Name ("Name", LEN) view View
/// at BASE { ... }` also gives the zero-copy view `View<T>` (a struct with
/// a `buf: T` field, defined in the same module, whose buffer holds this
/// structure at byte `BASE`) accessors for the fields that end in
/// `view [vis] getter [/ [vis] setter]`: a `uint` field's getter returns
/// its type and its setter writes the low bits of a value that fit; a
/// `bytes` field's getter returns the slice and its "setter" the mutable
/// slice. A field not wholly in the buffer reads as zero (an empty slice)
/// and a write to it is dropped. So each field's bit range is written
/// once, for the `Repr` and the view alike.
///
/// ```
/// use mad_wire::wire::{Repr, field::Fields};
/// mad_wire::wire_struct! {
///     /// Example.
///     pub struct Pair ("Pair", 2) {
///         /// High nibble.
///         hi: uint u8 [0, 4] => "Hi",
///         /// Low 12 bits.
///         lo: uint u16 [4, 12] => "Lo",
///     }
/// }
/// let p = Pair::parse(&[0xAB, 0xCD]).unwrap();
/// assert_eq!((p.hi, p.lo), (0xA, 0xBCD));
/// assert_eq!(p.to_vec().unwrap(), vec![0xAB, 0xCD]);
/// assert_eq!(p.field_descs()[1].label, Some("Lo"));
/// ```
#[macro_export]
macro_rules! wire_struct {
    (
        $(#[$sm:meta])*
        pub struct $name:ident ($sname:literal, $len:expr) view $view:ident at $base:tt {
            $(
                $(#[$fm:meta])*
                $fname:ident : $kind:ident $fty:ty [ $($arg:expr),* ] => $label:tt
                $( view $gvis:vis $vget:ident $( / $svis:vis $vset:ident )? )?
            ),* $(,)?
        }
    ) => {
        $crate::wire_struct! {
            $(#[$sm])*
            pub struct $name ($sname, $len) {
                $( $(#[$fm])* $fname : $kind $fty [ $($arg),* ] => $label, )*
            }
        }
        $(
            $crate::wire_struct!(@view $view $base [$(#[$fm])*] $kind $fty [$($arg),*]
                $( $gvis $vget $( / $svis $vset )? )?);
        )*
    };
    (
        $(#[$sm:meta])*
        pub struct $name:ident ($sname:literal, $len:expr) {
            $(
                $(#[$fm:meta])*
                $fname:ident : $kind:ident $fty:ty [ $($arg:expr),* ] => $label:tt
            ),* $(,)?
        }
    ) => {
        $(#[$sm])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fm])* pub $fname: $fty, )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                Self { $( $fname: $crate::wire_struct!(@zero $kind $fty), )* }
            }
        }

        impl $crate::wire::field::Zero for $name {
            fn zero() -> Self {
                <Self as ::core::default::Default>::default()
            }
        }

        impl $name {
            /// Static field table, in wire order.
            pub const FIELDS: &'static [$crate::wire::field::FieldDesc] = &[
                $( $crate::wire_struct!(@desc $fname $kind $fty [$($arg),*] $label), )*
            ];
        }

        // Every field lies inside the structure.
        const _: () = {
            $( assert!($crate::wire_struct!(@end $kind $fty [$($arg),*]) <= ($len) * 8); )*
        };

        impl $crate::wire::field::Repr for $name {
            const NAME: &'static str = $sname;
            const LEN: usize = $len;

            #[inline]
            fn parse(buf: &[u8]) -> ::core::result::Result<Self, $crate::wire::Error> {
                if buf.len() < $len {
                    return Err($crate::wire::Error::Truncated {
                        what: $sname,
                        need: $len,
                        got: buf.len(),
                    });
                }
                Ok(Self {
                    $( $fname: $crate::wire_struct!(@get buf $kind $fty [$($arg),*]), )*
                })
            }

            #[inline]
            fn emit(&self, buf: &mut [u8]) -> ::core::result::Result<(), $crate::wire::Error> {
                if buf.len() < $len {
                    return Err($crate::wire::Error::Truncated {
                        what: $sname,
                        need: $len,
                        got: buf.len(),
                    });
                }
                $( $crate::wire_struct!(@set self buf $sname $fname $kind $fty [$($arg),*]); )*
                Ok(())
            }
        }

        impl $crate::wire::field::Fields for $name {
            fn struct_name(&self) -> &'static str { $sname }
            fn field_descs(&self) -> &'static [$crate::wire::field::FieldDesc] { Self::FIELDS }
            #[allow(unused_assignments)]
            fn field_value(&self, index: usize) -> Option<$crate::wire::field::FieldValue<'_>> {
                let mut i = 0usize;
                $(
                    if index == i {
                        return Some($crate::wire_struct!(@value self $fname $kind $fty));
                    }
                    i += 1;
                )*
                None
            }
        }
    };

    // ---- zero values
    (@zero nested $fty:ty) => { <$fty as ::core::default::Default>::default() };
    (@zero $kind:ident $fty:ty) => { <$fty as $crate::wire::field::Zero>::zero() };

    // ---- end bit (for the in-bounds assertion)
    (@end uint $fty:ty [$off:expr, $bits:expr]) => { ($off) + ($bits) };
    (@end bytes $fty:ty [$off:expr]) => {
        ($off) * 8 + ::core::mem::size_of::<$fty>() * 8
    };
    (@end array $fty:ty [$off:expr, $ebits:expr]) => {
        ($off) + ($ebits) * $crate::wire::field::array_len::<$fty>()
    };
    (@end nested $fty:ty [$off:expr]) => {
        ($off) * 8 + <$fty as $crate::wire::field::Repr>::LEN * 8
    };

    // ---- descriptors
    (@label _) => { None };
    (@label $l:literal) => { Some($l) };
    (@desc $fname:ident uint $fty:ty [$off:expr, $bits:expr] $label:tt) => {
        $crate::wire::field::FieldDesc {
            name: stringify!($fname),
            label: $crate::wire_struct!(@label $label),
            bit_offset: ($off) as u32,
            bit_len: ($bits) as u32,
            kind: $crate::wire::field::FieldKind::Uint,
            value_name: <$fty as $crate::wire::field::FieldInt>::VALUE_NAME,
        }
    };
    (@desc $fname:ident bytes $fty:ty [$off:expr] $label:tt) => {
        $crate::wire::field::FieldDesc {
            name: stringify!($fname),
            label: $crate::wire_struct!(@label $label),
            bit_offset: (($off) * 8) as u32,
            bit_len: (::core::mem::size_of::<$fty>() * 8) as u32,
            kind: $crate::wire::field::FieldKind::Bytes,
            value_name: None,
        }
    };
    (@desc $fname:ident array $fty:ty [$off:expr, $ebits:expr] $label:tt) => {
        $crate::wire::field::FieldDesc {
            name: stringify!($fname),
            label: $crate::wire_struct!(@label $label),
            bit_offset: ($off) as u32,
            bit_len: (($ebits) * $crate::wire::field::array_len::<$fty>()) as u32,
            kind: $crate::wire::field::FieldKind::Array {
                elem_bits: ($ebits) as u32,
                count: $crate::wire::field::array_len::<$fty>() as u32,
            },
            value_name: None,
        }
    };
    (@desc $fname:ident nested $fty:ty [$off:expr] $label:tt) => {
        $crate::wire::field::FieldDesc {
            name: stringify!($fname),
            label: $crate::wire_struct!(@label $label),
            bit_offset: (($off) * 8) as u32,
            bit_len: (<$fty as $crate::wire::field::Repr>::LEN * 8) as u32,
            kind: $crate::wire::field::FieldKind::Nested,
            value_name: None,
        }
    };

    // ---- parse
    (@get $buf:ident uint $fty:ty [$off:expr, $bits:expr]) => {
        <$fty as $crate::wire::field::FieldInt>::from_u64(
            $crate::wire::field::get_bits($buf, $off, $bits))
    };
    (@get $buf:ident bytes $fty:ty [$off:expr]) => {{
        let mut a: $fty = $crate::wire::field::Zero::zero();
        let n = a.len();
        a.copy_from_slice(&$buf[($off)..($off) + n]);
        a
    }};
    (@get $buf:ident array $fty:ty [$off:expr, $ebits:expr]) => {{
        let mut a: $fty = $crate::wire::field::Zero::zero();
        for (i, e) in a.iter_mut().enumerate() {
            *e = $crate::wire::field::FieldInt::from_u64(
                $crate::wire::field::get_bits($buf, ($off) + i * ($ebits), $ebits));
        }
        a
    }};
    (@get $buf:ident nested $fty:ty [$off:expr]) => {
        <$fty as $crate::wire::field::Repr>::parse(&$buf[($off)..])?
    };

    // ---- emit
    (@set $self:ident $buf:ident $sname:literal $fname:ident uint $fty:ty [$off:expr, $bits:expr]) => {{
        let v = $crate::wire::field::FieldInt::to_u64($self.$fname);
        $crate::wire::field::check_fits($sname, stringify!($fname), v, ($bits) as u32)?;
        $crate::wire::field::set_bits($buf, $off, $bits, v);
    }};
    (@set $self:ident $buf:ident $sname:literal $fname:ident bytes $fty:ty [$off:expr]) => {{
        let n = $self.$fname.len();
        $buf[($off)..($off) + n].copy_from_slice(&$self.$fname);
    }};
    (@set $self:ident $buf:ident $sname:literal $fname:ident array $fty:ty [$off:expr, $ebits:expr]) => {{
        for (i, e) in $self.$fname.iter().enumerate() {
            let v = $crate::wire::field::FieldInt::to_u64(*e);
            $crate::wire::field::check_fits($sname, stringify!($fname), v, ($ebits) as u32)?;
            $crate::wire::field::set_bits($buf, ($off) + i * ($ebits), $ebits, v);
        }
    }};
    (@set $self:ident $buf:ident $sname:literal $fname:ident nested $fty:ty [$off:expr]) => {{
        $crate::wire::field::Repr::emit(&$self.$fname, &mut $buf[($off)..])?;
    }};

    // ---- reflection
    (@value $self:ident $fname:ident uint $fty:ty) => {
        $crate::wire::field::FieldValue::Uint($crate::wire::field::FieldInt::to_u64($self.$fname))
    };
    (@value $self:ident $fname:ident bytes $fty:ty) => {
        $crate::wire::field::FieldValue::Bytes(&$self.$fname[..])
    };
    (@value $self:ident $fname:ident array $fty:ty) => {
        $crate::wire::field::FieldValue::Array(
            $self.$fname.iter().map(|e| $crate::wire::field::FieldInt::to_u64(*e)).collect())
    };
    (@value $self:ident $fname:ident nested $fty:ty) => {
        $crate::wire::field::FieldValue::Nested(&$self.$fname)
    };

    // ---- view accessors: the field's bit range, read in place
    (@view $view:ident $base:tt [$(#[$fm:meta])*] $kind:ident $fty:ty [$($arg:expr),*]) => {};
    (@view $view:ident $base:tt [$(#[$fm:meta])*] uint $fty:ty [$off:expr, $bits:expr]
        $gvis:vis $vget:ident $( / $svis:vis $vset:ident )?) => {
        impl<T: AsRef<[u8]>> $view<T> {
            $(#[$fm])*
            #[inline]
            $gvis fn $vget(&self) -> $fty {
                <$fty as $crate::wire::field::FieldInt>::from_u64(
                    $crate::wire::bytes::get(self.buf.as_ref(), ($base) * 8 + ($off), $bits))
            }
        }
        $(
            impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
                #[doc = concat!("Writes the field [`", stringify!($vget), "`](Self::",
                    stringify!($vget), ") reads: the low bits of `v` that fit.")]
                #[inline]
                $svis fn $vset(&mut self, v: $fty) {
                    $crate::wire::bytes::set(self.buf.as_mut(), ($base) * 8 + ($off), $bits,
                        $crate::wire::field::FieldInt::to_u64(v));
                }
            }
        )?
    };
    (@view $view:ident $base:tt [$(#[$fm:meta])*] bytes $fty:ty [$off:expr]
        $gvis:vis $vget:ident $( / $svis:vis $vset:ident )?) => {
        impl<T: AsRef<[u8]>> $view<T> {
            $(#[$fm])*
            #[doc = ""]
            #[doc = "Empty when the buffer ends before the field's end."]
            #[inline]
            $gvis fn $vget(&self) -> &[u8] {
                $crate::wire::bytes::run(self.buf.as_ref(), ($base) + ($off),
                    ::core::mem::size_of::<$fty>())
            }
        }
        $(
            impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
                #[doc = concat!("The bytes [`", stringify!($vget), "`](Self::",
                    stringify!($vget), ") reads, mutable.")]
                #[inline]
                $svis fn $vset(&mut self) -> &mut [u8] {
                    $crate::wire::bytes::run_mut(self.buf.as_mut(), ($base) + ($off),
                        ::core::mem::size_of::<$fty>())
                }
            }
        )?
    };
}

/// Number of elements of an array type, usable in constants.
#[doc(hidden)]
#[must_use]
pub const fn array_len<A: ArrayLen>() -> usize {
    A::N
}

/// Implemented by `[T; N]`; gives `N` in const context.
#[doc(hidden)]
pub trait ArrayLen {
    /// The length.
    const N: usize;
}
impl<T, const N: usize> ArrayLen for [T; N] {
    const N: usize = N;
}

/// Generates, for each listed `wire_struct` type, tests that its field table
/// covers every bit once and that it round-trips both ways over generated
/// values (proptest): `emit(parse(b)) == b` and `parse(emit(r)) == r`.
/// Also checks that every buffer shorter than `LEN` is refused.
#[cfg(test)]
#[macro_export]
#[doc(hidden)]
macro_rules! repr_roundtrip_tests {
    ($($t:ident),* $(,)?) => {
        #[allow(non_snake_case)]
        mod roundtrip_generated {
            $(
                mod $t {
                    use proptest::prelude::*;
                    use $crate::wire::field::Repr as _;
                    type T = super::super::$t;

                    #[test]
                    fn fields_cover_every_bit_once() {
                        if let Err(e) = $crate::wire::field::check_coverage(T::FIELDS, <T>::LEN) {
                            panic!("{}: {}", stringify!($t), e);
                        }
                    }

                    #[test]
                    fn short_buffers_are_refused() {
                        let buf = vec![0u8; <T>::LEN];
                        for n in 0..<T>::LEN {
                            assert!(<T>::parse(&buf[..n]).is_err());
                        }
                        let mut out = vec![0u8; <T>::LEN.saturating_sub(1)];
                        assert!(<T>::default().emit(&mut out).is_err());
                    }

                    proptest! {
                        #![proptest_config(ProptestConfig::with_cases(256))]
                        #[test]
                        fn round_trips_both_ways(bytes in proptest::collection::vec(any::<u8>(), <T>::LEN)) {
                            let r = <T>::parse(&bytes).unwrap();
                            let out = r.to_vec().unwrap();
                            prop_assert_eq!(&out, &bytes);
                            let again = <T>::parse(&out).unwrap();
                            prop_assert_eq!(again, r);
                        }
                    }
                }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_fits_rejects_values_wider_than_the_field() {
        assert!(check_fits("S", "f", 0xF, 4).is_ok());
        assert!(matches!(
            check_fits("S", "f", 0x10, 4),
            Err(Error::FieldOverflow { bits: 4, .. })
        ));
        assert!(check_fits("S", "f", u64::MAX, 64).is_ok());
    }
}
