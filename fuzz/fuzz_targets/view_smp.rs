//! See `madstack_fuzz::smp_view`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::smp_view(data));
