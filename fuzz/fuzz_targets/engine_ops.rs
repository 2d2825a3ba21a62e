//! See `madstack_fuzz::engine_ops`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::engine_ops(data));
