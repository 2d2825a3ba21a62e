//! See `madstack_fuzz::mad_view`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::mad_view(data));
