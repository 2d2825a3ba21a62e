//! See `madstack_fuzz::decode`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::decode(data));
