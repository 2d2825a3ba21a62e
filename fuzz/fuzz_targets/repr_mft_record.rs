//! parse -> emit -> compare for `MftRecord`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::repr_roundtrip::<
    mad_core::wire::sa_records::MftRecord,
>(data));
