//! See `madstack_fuzz::openib_view`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::openib_view(data));
