#![no_main]
//! The `ucode_lib.json` reader and writer: see `neuroncustomop_fuzz::ucode_lib`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neuroncustomop_fuzz::ucode_lib::check(data));
