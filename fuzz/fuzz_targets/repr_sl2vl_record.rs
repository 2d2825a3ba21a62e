//! parse -> emit -> compare for `Sl2VlRecord`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::repr_roundtrip::<
    mad_wire::wire::sa_records::Sl2VlRecord,
>(data));
