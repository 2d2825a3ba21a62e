//! See `madstack_fuzz::perl_topology`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::perl_topology(data));
