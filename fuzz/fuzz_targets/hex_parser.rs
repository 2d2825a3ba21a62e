//! See `madstack_fuzz::hex`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::hex(data));
