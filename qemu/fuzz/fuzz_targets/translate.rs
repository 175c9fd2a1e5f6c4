#![no_main]
//! `translate::configure` / `translate` and the C ABI: see `neuroncustomop_fuzz::translate`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neuroncustomop_fuzz::translate::check(data));
