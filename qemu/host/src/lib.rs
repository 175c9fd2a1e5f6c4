//! The host API an op author tests kernels with: load a library once ([`library`]: a
//! project folder, a package or a built-in example), call its kernels by name with
//! typed [`array`](mod@array)s, read and write them as NumPy files ([`npy`]), [`generate`] inputs
//! and [`compare`] outputs; check kernels on generated calls (`testing`, on proptest,
//! with the feature `testing`) and diff the two tiers ([`tiers`]). It owns the calling
//! convention of a call (placing inputs, the output's shape, the named status, the per-core counts) on top of the package
//! crate (`neuroncustomop-package`) and the simulated machine
//! (`neuroncustomop-machine`). It must NOT know the CLIs (`ncop`, `sim` in
//! `neuroncustomop-sim`) or the Python bindings (`qemu/python`), which build on it
//! (qemu/README.md).
// The errors keep what the device said (the loader's lines, the package's state) for
// the author to read; they are returned once per call, never in a loop, so their size
// costs nothing worth boxing them for.
#![allow(clippy::result_large_err)]

// Arrays and .npy files are a crate of their own (`neuroncustomop-array`), so that what
// only reads files (the fuzz targets) builds without the host stack; here they keep
// their place in the host API.
pub use neuroncustomop_array as array;
pub mod compare;
pub mod generate;
pub mod library;
pub use neuroncustomop_array::npy;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tiers;
