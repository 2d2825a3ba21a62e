//! See `madstack_fuzz::rmpp_view`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::rmpp_view(data));
