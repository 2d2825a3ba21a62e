//! parse -> emit -> compare for `CcKey`.
#![no_main]
libfuzzer_sys::fuzz_target!(
    |data: &[u8]| madstack_fuzz::repr_roundtrip::<mad_wire::wire::cc::CcKey>(data)
);
