//! See `madstack_fuzz::lft_balance`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::lft_balance(data));
