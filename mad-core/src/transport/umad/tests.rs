//! Layout and unit tests of the umad transport.

use super::ca::{load_lib_from, UmadCaRaw, UmadPortRaw};
use super::*;

#[test]
fn user_mad_header_layout_matches_rdma_core() {
    // struct ib_user_mad is 5 x u32 + 44-byte ib_mad_addr = 64 bytes,
    // umad_port_t 112 and umad_ca_t 208 on LP64.
    assert_eq!(USER_MAD_HDR, 64);
    assert_eq!(std::mem::size_of::<UmadPortRaw>(), 112);
    assert_eq!(std::mem::size_of::<UmadCaRaw>(), 208);
}

#[test]
fn a_refused_registration_lists_its_methods_in_hex() {
    assert_eq!(method_list(0), "none");
    assert_eq!(method_list(1 << 2 | 1 << 0x12), "0x02, 0x12");
}

#[test]
fn a_missing_libibumad_is_named_with_its_package() {
    let err = load_lib_from("libibumad-not-here.so.3")
        .err()
        .unwrap_or_default();
    assert!(err.contains("libibumad-not-here.so.3"), "{err}");
    assert!(err.contains("apt-get install libibumad3"), "{err}");
}

#[test]
fn a_library_without_umads_functions_is_named_with_the_first_it_lacks() {
    let err = load_lib_from("libc.so.6").err().unwrap_or_default();
    assert!(err.starts_with("libibumad.so.3 lacks umad_init: "), "{err}");
}

#[test]
fn a_missing_ca_is_a_clear_error() {
    if !is_available() {
        let err = UmadTransport::open(Some("mlx5_0"), 1)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(LIBIBUMAD) && err.contains(LIBIBUMAD_PACKAGE),
            "{err}"
        );
        return;
    }
    let err = UmadTransport::open(Some("no_such_ca_xyz"), 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no_such_ca_xyz"), "{err}");
}
