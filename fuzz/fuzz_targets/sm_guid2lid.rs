//! See `madstack_fuzz::sm_guid2lid`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::sm_guid2lid(data));
