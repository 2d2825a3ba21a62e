//! parse -> emit -> compare for `CmDreq`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::repr_roundtrip::<
    mad_wire::wire::cm::CmDreq,
>(data));
