//! `neuroncustomop`: an open `no_std` device runtime for custom-op kernels on the
//! 8-core Xtensa GPSIMD cluster of AWS Trainium / Inferentia2.
//!
//! One module per concern, named after the member of the vendor archive it replaces:
//!
//! | module | vendor member | concern |
//! |---|---|---|
//! | [`start_exit`] | `start_exit.o` | `entry_func`, kernel registration, device libc, stdout ring |
//! | [`wrapper_api`] | `wrapper_api.o` | tensor descriptors and the `customop_*` pull stream |
//! | [`translate`] | `translate.o` | `neuron_translate`, the five-region software TLB |
//! | [`allocators`] | `xmem` heaps | first-fit HBM / dataram heaps, TCM scratch |
//! | [`data_transfer`] | `data_transfer.o` | C, vector and DMA memcpy backends |
//! | [`stack_switch`] | `switch_stack.o` | running a kernel on a stack in HBM |
//! | [`multicore`] | `parallel.o` | core id and count |
//! | [`arch`] | — | everything Xtensa-specific, with a host stand-in for tests |
//! | [`ranges`] | — | the author's range markers for profiles (no code, no cost) |
//!
//! All logic outside [`arch`] builds and is unit-tested on the host.
//!
//! # Lint policy
//!
//! Set for every crate of the project in the workspace's `[lints]` table (`Cargo.toml`)
//! and checked by `cargo clippy --workspace --all-targets -- -D warnings` in `.ci/run`:
//!
//! - `unsafe_op_in_unsafe_fn` denied: an `unsafe fn` states its caller's obligations; it
//!   does not license every operation in its body. Each unsafe operation inside one still
//!   needs its own `unsafe` block, so each is seen, and justified, where it happens.
//! - `clippy::undocumented_unsafe_blocks` denied: every `unsafe` block and `unsafe impl`
//!   carries a `// SAFETY:` comment saying why its obligations hold at that spot. The
//!   runtime handles pointers handed in by C, the loader and the DMA engine, so this is
//!   where its memory safety is argued; a block without the argument is a review finding
//!   the build now reports instead of a reader.
//! - `missing_docs`: the runtime's public API is the op author's and the loader's
//!   contract, so each public item says what it does.
#![no_std]
// Cold paths the runtime's `opt-level = 3` would unroll (docs/PERFORMANCE.md, "Text size").
#![cfg_attr(target_os = "none", feature(optimize_attribute))]
// `core::f32::math::mul_add`, the FPU's fused multiply-add (`madd.s`) for the math
// functions (start_exit/fpu_math.rs); on the host `std` has it.
#![cfg_attr(target_os = "none", feature(core_float_math))]

// On the host the library links std, for its tests and for a staticlib that needs a
// panic handler; the runtime's own code uses only `core` (and `alloc` where stated).
#[cfg(not(target_os = "none"))]
extern crate std;

/// This runtime's version, and every tool's of the project (`ncop --version`, the
/// Python package's `__version__`, its wheel, [`start_exit::CUSTOMOP_LIB_VERSION`]):
/// one definition, the workspace's `Cargo.toml` (`[workspace.package]`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod allocators;
pub mod arch;
pub mod data_transfer;
pub mod global;
pub mod multicore;
pub mod ranges;
pub mod stack_switch;
pub mod start_exit;
#[cfg(all(any(test, feature = "test-models"), not(target_os = "none")))]
pub mod test_models;
pub mod translate;
pub mod wrapper_api;
