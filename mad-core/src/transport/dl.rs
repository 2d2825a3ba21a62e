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
