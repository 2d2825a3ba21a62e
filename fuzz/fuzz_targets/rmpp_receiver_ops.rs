//! See `madstack_fuzz::rmpp_receiver_ops`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::rmpp_receiver_ops(data));
