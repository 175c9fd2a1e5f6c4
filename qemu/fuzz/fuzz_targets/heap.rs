#![no_main]
//! `allocators::Heap` operation sequences against a model: see `neuroncustomop_fuzz::heap`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neuroncustomop_fuzz::heap::check(data));
