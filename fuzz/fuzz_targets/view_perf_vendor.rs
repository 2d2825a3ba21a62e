//! See `madstack_fuzz::perf_vendor_view`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::perf_vendor_view(data));
