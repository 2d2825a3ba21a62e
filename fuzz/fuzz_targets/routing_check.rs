//! See `madstack_fuzz::routing_check`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::routing_check(data));
