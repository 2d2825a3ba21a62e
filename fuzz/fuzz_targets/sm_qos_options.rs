//! See `madstack_fuzz::sm_qos_options`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::sm_qos_options(data));
