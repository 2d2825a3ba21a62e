//! See `madstack_fuzz::sa_view`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::sa_view(data));
