//! The OpenIB vendor classes' requests and answers (infiniband-diags'
//! `ibping`, class 0x32, OUI 0x001405): a Get of attribute 0 whose answer
//! carries the server's `host.domain` text as a NUL-terminated string in
//! the vendor data area (bytes 40–255).

use super::vendor::{VendorMad, IB_OPENIB_OUI, IB_VENDOR_OPENIB_PING_CLASS};
use super::{AttributeId, Error, Mad, Method, MgmtClass, MAD_LEN, VENDOR_DATA_OFFSET};

/// The vendor range-2 data area's size (`IB_VENDOR_RANGE2_DATA_SIZE`).
pub const VENDOR_RANGE2_DATA_SIZE: usize = MAD_LEN - VENDOR_DATA_OFFSET;
/// The class version libibmad puts into an OpenIB vendor MAD.
pub const OPENIB_CLASS_VERSION: u8 = 1;

/// A Get of attribute `attr` / `amod` of vendor class `class` with `oui`
/// (the TID left for the sender to set).
///
/// # Errors
/// [`Error::FieldOverflow`] if `oui` is wider than 24 bits.
pub fn vendor_get(
    class: MgmtClass,
    oui: u32,
    (attr, amod): (u16, u32),
) -> Result<[u8; MAD_LEN], Error> {
    let mut mad = [0u8; MAD_LEN];
    Mad::new_unchecked(&mut mad[..]).set_request(
        class,
        OPENIB_CLASS_VERSION,
        Method::GET,
        AttributeId(attr),
        amod,
    );
    VendorMad::new_unchecked(&mut mad[..]).set_oui(oui)?;
    Ok(mad)
}

/// ibping's request (`ib_vendor_call_via` of a Get of attribute 0).
///
/// # Errors
/// [`Error::FieldOverflow`] if `oui` is wider than 24 bits.
pub fn ping_request(oui: u32) -> Result<[u8; MAD_LEN], Error> {
    vendor_get(IB_VENDOR_OPENIB_PING_CLASS, oui, (0, 0))
}

/// True when `mad` is a request of the OpenIB ping class with the OpenIB
/// OUI (what the built-in fabric's CAs answer).
#[must_use]
pub fn is_openib_ping(mad: &[u8]) -> bool {
    let Ok(v) = VendorMad::new_checked(mad) else {
        return false;
    };
    v.mad().mgmt_class() == IB_VENDOR_OPENIB_PING_CLASS && v.oui() == IB_OPENIB_OUI
}

/// The vendor data area holding `text` as a C string (cut to 215 bytes,
/// NUL-terminated, zero-filled).
#[must_use]
pub fn text_data(text: &str) -> [u8; VENDOR_RANGE2_DATA_SIZE] {
    let mut d = [0u8; VENDOR_RANGE2_DATA_SIZE];
    let b = text.as_bytes();
    let n = b.len().min(VENDOR_RANGE2_DATA_SIZE - 1);
    d[..n].copy_from_slice(&b[..n]);
    d
}

/// The C string at the start of a vendor data area (up to its first NUL,
/// invalid UTF-8 replaced), as `printf("%s")` prints it.
#[must_use]
pub fn c_text(data: &[u8]) -> String {
    let end = data.iter().position(|b| *b == 0).unwrap_or(data.len());
    String::from_utf8_lossy(&data[..end]).into_owned()
}

/// `get_host_and_domain`: `host.domain`, or `host` when the domain is
/// empty.
#[must_use]
pub fn host_and_domain(host: &str, domain: &str) -> String {
    if domain.is_empty() {
        host.to_owned()
    } else {
        format!("{host}.{domain}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::vendor::VENDOR_OUI_OFFSET;

    #[test]
    fn ping_request_is_a_get_of_class_0x32_with_the_openib_oui() {
        let m = ping_request(IB_OPENIB_OUI).unwrap();
        assert_eq!(&m[..4], &[1, 0x32, 1, 1]);
        assert_eq!(
            &m[VENDOR_OUI_OFFSET..VENDOR_DATA_OFFSET],
            &[0x00, 0x14, 0x05]
        );
        assert!(is_openib_ping(&m));
        assert!(!is_openib_ping(&ping_request(0x2c9).unwrap()));
        assert!(!is_openib_ping(&m[..39]));
        assert!(ping_request(0x100_0000).is_err());
    }

    #[test]
    fn text_round_trips_through_the_data_area_and_is_cut_to_fit() {
        let d = text_data("node1.example");
        assert_eq!(c_text(&d), "node1.example");
        let long = "x".repeat(400);
        let d = text_data(&long);
        assert_eq!(c_text(&d).len(), VENDOR_RANGE2_DATA_SIZE - 1);
        assert_eq!(c_text(b"ab"), "ab");
        assert_eq!(host_and_domain("h", ""), "h");
        assert_eq!(host_and_domain("h", "(none)"), "h.(none)");
    }
}
