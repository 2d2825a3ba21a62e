//! parse -> emit -> compare for `OpenIbText`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::repr_roundtrip::<
    mad_wire::wire::openib::OpenIbText,
>(data));
