//! See `madstack_fuzz::mad_debug_line`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::mad_debug_line(data));
