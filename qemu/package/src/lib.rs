//! Packaging an op author's library: the author's project anywhere on disk ([`project`]:
//! Rust, C, or C++ on the AWS torch API, [`cxx`]), its device build and per-core link,
//! the `ucode_lib.json` that binds FunctionIds to kernel names ([`ucode_lib`]), and the
//! package folder ([`package`]); [`program`] finds a built-in example or a firmware
//! program of this checkout by name, for `cargo sim` and the tests. It builds on the
//! simulated machine (`neuroncustomop-machine`) and asks it to run through one function
//! only: [`package::registered_kernels`] boots the images with an empty job
//! (`device::run`) to read the kernel names the loader registered. It must NOT know the
//! host API (arrays, `.npy`, calls, comparisons) or the CLIs, which build on it
//! (qemu/README.md).
// The errors keep the package's state and the build's messages for the author to
// read; they are returned once per command, never in a loop, so their size costs
// nothing worth boxing them for.
#![allow(clippy::result_large_err)]

pub mod cxx;
pub mod package;
pub mod program;
pub mod project;
pub mod publish;
pub mod step_cache;
// ucode_lib.json is a crate of its own (`neuroncustomop-ucode-lib`), so that what only
// reads it (the fuzz targets) builds without the machine; here it keeps its place.
pub use neuroncustomop_ucode_lib as ucode_lib;
