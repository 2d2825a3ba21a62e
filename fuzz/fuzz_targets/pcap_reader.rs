//! See `madstack_fuzz::pcap`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::pcap(data));
