//! See `madstack_fuzz::cm_peers::run`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::cm_peers::run(data));
