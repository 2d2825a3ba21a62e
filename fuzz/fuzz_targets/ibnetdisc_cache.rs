//! See `madstack_fuzz::ibnetdisc_cache`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::ibnetdisc_cache(data));
