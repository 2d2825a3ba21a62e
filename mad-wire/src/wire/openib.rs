//! The OpenIB vendor classes' requests and answers, OUI 0x001405:
//! infiniband-diags' `ibping` (class 0x32: a Get of attribute 0 whose
//! answer carries the server's `host.domain` text as a NUL-terminated
//! string in the vendor data area, bytes 40–255) and `ibsysstat` (class
//! 0x33: attributes ping, host and cpu, the host's text or its CPUs'
//! lines as a C string).

use super::vendor::{
    VendorMad, IB_OPENIB_OUI, IB_VENDOR_OPENIB_PING_CLASS, IB_VENDOR_OPENIB_SYSSTAT_CLASS,
};
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
    is_openib(mad, IB_VENDOR_OPENIB_PING_CLASS)
}

/// True when `mad` is a request of the OpenIB sysstat class with the
/// OpenIB OUI.
#[must_use]
pub fn is_openib_sysstat(mad: &[u8]) -> bool {
    is_openib(mad, IB_VENDOR_OPENIB_SYSSTAT_CLASS)
}

fn is_openib(mad: &[u8], class: MgmtClass) -> bool {
    let Ok(v) = VendorMad::new_checked(mad) else {
        return false;
    };
    v.mad().mgmt_class() == class && v.oui() == IB_OPENIB_OUI
}

/// True when `mad` is of an OpenIB vendor class (ibping's 0x32,
/// ibsysstat's 0x33) with the OpenIB OUI: its data is a C string.
#[must_use]
pub fn is_openib_text(mad: &[u8]) -> bool {
    is_openib_ping(mad) || is_openib_sysstat(mad)
}

crate::wire_struct! {
    /// The data area of an OpenIB vendor MAD (bytes 40–255): the host's
    /// `host.domain`, or ibsysstat's host or CPU lines, as a C string.
    pub struct OpenIbText ("OpenIBText", 216) {
        /// The text, NUL-terminated and zero-filled.
        string: bytes [u8; 216] [0] => "String",
    }
}

/// ibsysstat's attributes (`enum ib_sysstat_attr_t`).
pub mod sysstat_attr {
    /// `ping`: answered with nothing but the header.
    pub const PING: u16 = 0x10;
    /// `host`: the server's `host.domain`.
    pub const HOST_INFO: u16 = 0x11;
    /// `cpu`: a `cpu N: model M MHZ F` line per CPU.
    pub const CPU_INFO: u16 = 0x12;
}

/// ibsysstat's op names (`match_attr`: exact, case sensitive).
#[must_use]
pub fn sysstat_op(name: &str) -> Option<u16> {
    match name {
        "ping" => Some(sysstat_attr::PING),
        "host" => Some(sysstat_attr::HOST_INFO),
        "cpu" => Some(sysstat_attr::CPU_INFO),
        _ => None,
    }
}

/// `build_cpuinfo` and the cpu answer of `mk_reply`: from the text of
/// `/proc/cpuinfo`, a `cpu N: model MODEL MHZ MHZ` line per `processor`
/// entry (up to 256), each value the text after its `:` (leading space
/// kept, `(null)` when the entry has none).
#[must_use]
pub fn cpu_info_text(cpuinfo: &str) -> String {
    let mut cpus: Vec<(Option<&str>, Option<&str>)> = Vec::new();
    for line in cpuinfo.lines() {
        if line.starts_with("processor\t") {
            if cpus.len() == 256 {
                break;
            }
            cpus.push((None, None));
            continue;
        }
        let (Some(cpu), Some((_, v))) = (cpus.last_mut(), line.split_once(':')) else {
            continue;
        };
        if line.starts_with("model name\t") {
            cpu.0 = Some(v);
        } else if line.starts_with("cpu MHz\t") {
            cpu.1 = Some(v);
        }
    }
    let mut out = String::new();
    for (i, (model, mhz)) in cpus.iter().enumerate() {
        out.push_str(&format!(
            "cpu {i}: model {} MHZ {}\n",
            model.unwrap_or("(null)"),
            mhz.unwrap_or("(null)")
        ));
    }
    out
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

    crate::repr_roundtrip_tests!(OpenIbText);
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
    fn cpu_lines_come_from_proc_cpuinfo_entries() {
        let t = "processor\t: 0\nmodel name\t: Fast CPU\ncpu MHz\t\t: 2000.000\n\n\
                 processor\t: 1\nmodel name\t: Fast CPU\n";
        assert_eq!(
            cpu_info_text(t),
            "cpu 0: model  Fast CPU MHZ  2000.000\ncpu 1: model  Fast CPU MHZ (null)\n"
        );
        assert_eq!(cpu_info_text("model name\t: x\n"), "");
        assert_eq!(sysstat_op("cpu"), Some(sysstat_attr::CPU_INFO));
        assert_eq!(sysstat_op("Host"), None);
        let m = vendor_get(IB_VENDOR_OPENIB_SYSSTAT_CLASS, IB_OPENIB_OUI, (0x11, 0)).unwrap();
        assert!(is_openib_sysstat(&m) && !is_openib_ping(&m));
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
