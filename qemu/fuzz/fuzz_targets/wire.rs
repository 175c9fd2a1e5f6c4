#![no_main]
//! The 0x85/0x86 word decoder and encoder: see `neuroncustomop_fuzz::wire`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neuroncustomop_fuzz::wire::check(data));
