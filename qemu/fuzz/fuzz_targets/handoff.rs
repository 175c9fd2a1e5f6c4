#![no_main]
//! The handoff block's gates and `entry_func`'s sequence: see `neuroncustomop_fuzz::handoff`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neuroncustomop_fuzz::handoff::check(data));
