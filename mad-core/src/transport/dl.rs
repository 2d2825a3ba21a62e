//! What the run-time loaders of libibumad ([`umad`](super::umad)) and
//! libibverbs ([`verbs`](super::verbs)) share: a function of a loaded
//! library, by its C name.
#![allow(unsafe_code)]

/// The function `symbol` (its name with the trailing NUL) of `lib`, loaded
/// from `lib_name`, copied out of the library; or an error naming both.
///
/// # Safety
/// `T` must be the symbol's C function pointer type, and the pointer must
/// be called only while `lib` stays loaded.
pub(crate) unsafe fn symbol<T: Copy>(
    lib: &libloading::Library,
    lib_name: &str,
    symbol: &[u8],
) -> Result<T, String> {
    // SAFETY: the caller's promise: `T` is the symbol's type.
    let s: libloading::Symbol<'_, T> = unsafe { lib.get(symbol) }.map_err(|e| {
        let name = symbol.strip_suffix(b"\0").unwrap_or(symbol);
        format!("{lib_name} lacks {}: {e}", String::from_utf8_lossy(name))
    })?;
    Ok(*s)
}

/// `$lib_ty { field: symbol(prefix + "field"), ..., _lib: lib }`: each
/// listed field of a loader's table filled with the function of `lib`
/// (loaded from `lib_name`) named by the prefix and the field's name; the
/// first missing one is the error (`?`). Use it inside `unsafe`, with the
/// promise [`symbol`] asks for.
macro_rules! symbols {
    ($lib:ident, $lib_name:expr, $prefix:literal, $lib_ty:ident { $($field:ident),* $(,)? }) => {
        $crate::transport::dl::symbols!($lib, $lib_name, $prefix, $lib_ty { $($field),* } with {})
    };
    // The same, with more fields set to given values (optional symbols).
    ($lib:ident, $lib_name:expr, $prefix:literal, $lib_ty:ident { $($field:ident),* $(,)? } with { $($extra:ident: $val:expr),* $(,)? }) => {
        $lib_ty {
            $(
                $field: $crate::transport::dl::symbol(
                    &$lib,
                    $lib_name,
                    concat!($prefix, stringify!($field), "\0").as_bytes(),
                )?,
            )*
            $($extra: $val,)*
            _lib: $lib,
        }
    };
}
pub(crate) use symbols;
