#![no_main]
//! The pull stream under random call orders: see `neuroncustomop_fuzz::pull_stream`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neuroncustomop_fuzz::pull_stream::check(data));
