#![no_main]
//! `ArgTensor::from_bytes` + `validate` and the encoders: see `neuroncustomop_fuzz::descriptor`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neuroncustomop_fuzz::descriptor::check(data));
