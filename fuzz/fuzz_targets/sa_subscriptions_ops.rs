//! See `madstack_fuzz::sa_subscriptions::run`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::sa_subscriptions::run(data));
