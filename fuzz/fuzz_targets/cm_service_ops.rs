//! See `madstack_fuzz::cm_service::run`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::cm_service::run(data));
