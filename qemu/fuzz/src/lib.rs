//! Fuzz targets for every input boundary of the runtime and the simulated loader, each
//! checked against an invariant or a reference model, so a target fails on a wrong
//! answer, not only on a crash.
//!
//! | target | boundary | checked against |
//! |---|---|---|
//! | [`handoff`] | `SUNDA_UCODE_LIB::from_raw` / `callbacks`, `enter` → `run_entry` | a model of the gates and of the call sequence |
//! | [`descriptor`] | `ArgTensor::from_bytes` + `validate`, the encoders | a validator over raw byte offsets; re-encoding |
//! | [`pull_stream`] | `Invocation` (C calls and Rust `Args`), random call orders | a model of the state machine, the windows and aliasing |
//! | [`translate`] | `translate::configure` / `translate`, the C ABI | exact (u128) arithmetic over the record list |
//! | [`heap`] | `allocators::Heap` operation sequences | a granule-flag model of first fit, contents kept |
//! | [`wire`] | `neuroncustomop_wire::decode` / `decode_prefix` | a byte-level acceptor; re-encoding gives the same bytes |
//! | [`ucode_lib`] | `UcodeLib::from_json` | the schema's rules; write and read back |
//!
//! The reference models of `descriptor`, `translate`, `heap` and `pull_stream` (its
//! state machine and fake platform) are `neuroncustomop::test_models` (the
//! `test-models` feature): the same models the runtime's unit and property tests check
//! against.
//!
//! Each module's `check(data)` is the whole target: `fuzz_targets/<name>.rs` only hands
//! it libFuzzer's bytes, and the unit tests below hand it pseudo-random ones, so the
//! harnesses build and run with plain `cargo test` on stable too.
//!
//! The crate is its own workspace (`[workspace]` in its `Cargo.toml`): `cargo fuzz`
//! compiles it and everything it depends on with sanitizer and coverage flags, which the
//! main workspace's tests and Xtensa builds must never see, and `libfuzzer-sys` (a C++
//! build) stays out of the main lock file. Run it with `qemu/fuzz/run.sh` (README.md).

pub mod descriptor;
pub mod handoff;
pub mod heap;
pub mod pull_stream;
pub mod translate;
pub mod ucode_lib;
pub mod wire;

/// Panics, which libFuzzer records as a crash, when the two values differ; the message
/// names the check and shows both values.
#[macro_export]
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($what:tt)+) => {{
        let (left, right) = (&$left, &$right);
        if left != right {
            panic!("{}: {:?} != {:?}", format_args!($($what)+), left, right);
        }
    }};
}

#[cfg(test)]
mod smoke {
    /// A small xorshift generator: deterministic inputs without a dependency.
    pub(crate) fn inputs(count: usize, max_len: usize) -> impl Iterator<Item = Vec<u8>> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..count).map(move |_| {
            let len = (next() as usize) % (max_len + 1);
            (0..len).map(|_| next() as u8).collect()
        })
    }

    /// Hands a target's `check` `count` pseudo-random inputs of up to `max_len` bytes.
    pub(crate) fn check_inputs(check: fn(&[u8]), count: usize, max_len: usize) {
        for input in inputs(count, max_len) {
            check(&input);
        }
    }
}
