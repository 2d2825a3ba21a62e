//! A MAD's common header as a `Repr`, for tests: read it whole
//! ([`of`]) and compare `MadHeader`s or typed fields, or change it
//! ([`edit`]) without knowing where its bytes go.
//!
//! ```
//! use mad_wire::wire::{AttributeId, MgmtClass, Method};
//! use mad_testkit_wire::{header, MadBuilder};
//!
//! let mut mad = MadBuilder::smp_get(AttributeId::NODE_INFO).tid(3).build();
//! header::edit(&mut mad, |h| h.mgmt_class = MgmtClass(0x99));
//! assert_eq!(header::of(&mad).mgmt_class, MgmtClass(0x99));
//! assert_eq!(header::of(&mad).tid, 3, "the rest is kept");
//! ```

use mad_wire::wire::{MadHeader, Method, Repr, MAD_HEADER_LEN, METHOD_RESPONSE_BIT};

/// The common header of `mad`.
///
/// # Panics
/// `mad` is shorter than the 24-byte header (a test's own mistake; the
/// message says so).
#[must_use]
#[track_caller]
pub fn of(mad: &[u8]) -> MadHeader {
    match MadHeader::parse(mad) {
        Ok(h) => h,
        Err(e) => panic!("not a MAD ({} bytes): {e}", mad.len()),
    }
}

/// Rewrites the common header of `mad` through `f` (the bytes after the
/// header are kept).
///
/// # Panics
/// `mad` is shorter than the 24-byte header.
#[track_caller]
pub fn edit(mad: &mut [u8], f: impl FnOnce(&mut MadHeader)) {
    let mut h = of(mad);
    f(&mut h);
    if let Err(e) = h.emit(&mut mad[..MAD_HEADER_LEN]) {
        panic!("header does not fit: {e}");
    }
}

/// Sets `h`'s method and response bit from `raw`, byte 3 as sent (a
/// method drawn from a fuzzer's or a hostile peer's bytes).
pub fn set_method_byte(h: &mut MadHeader, raw: u8) {
    h.response = raw & METHOD_RESPONSE_BIT != 0;
    h.method = Method(raw & !METHOD_RESPONSE_BIT);
}

/// Byte 3 as sent: `h`'s method with its response bit.
#[must_use]
pub fn method_byte(h: &MadHeader) -> u8 {
    h.method.0 | if h.response { METHOD_RESPONSE_BIT } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_wire::wire::{Mad, MadStatus, Method, MgmtClass};

    #[test]
    fn edit_changes_only_what_it_is_told() {
        let mut m = [0u8; 256];
        m[30] = 0xab;
        edit(&mut m, |h| {
            h.base_version = 1;
            h.mgmt_class = MgmtClass::PERF_MGT;
            h.method = Method::GET;
            h.response = true;
            h.status = MadStatus::INVALID_FIELD;
            h.tid = 9;
        });
        let v = Mad::new_unchecked(&m[..]);
        assert_eq!(v.mgmt_class(), MgmtClass::PERF_MGT);
        assert!(v.is_response());
        assert_eq!(v.status(), MadStatus::INVALID_FIELD);
        assert_eq!(v.tid(), 9);
        assert_eq!(m[30], 0xab, "the payload is kept");
        assert_eq!(of(&m), v.header().expect("24 bytes"));
    }

    #[test]
    fn the_method_byte_splits_into_method_and_response_bit_and_back() {
        let mut h = MadHeader::default();
        set_method_byte(&mut h, 0x92);
        assert_eq!((h.method, h.response), (Method::GET_TABLE, true));
        assert_eq!(method_byte(&h), 0x92);
        set_method_byte(&mut h, 0x03);
        assert_eq!(
            (h.method, h.response, method_byte(&h)),
            (Method(3), false, 3)
        );
    }

    #[test]
    #[should_panic(expected = "not a MAD (10 bytes)")]
    fn a_short_buffer_is_named() {
        let _ = of(&[0; 10]);
    }
}
