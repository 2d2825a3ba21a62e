//! parse -> emit -> compare for `TraceRecord`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::repr_roundtrip::<
    mad_wire::wire::sa_records::TraceRecord,
>(data));
