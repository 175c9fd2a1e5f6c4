//! Host side of the simulated device: everything the real device's toolchain, loader
//! and DMA engine would do around the runtime, so it can be built, run and tested under
//! QEMU.
//!
//! - [`toolchain`]: where the Xtensa tools are, and what to do when they are missing;
//! - [`images`]: building the 8 per-core images of an example or firmware program;
//! - [`machine`]: booting images under `qemu-system-xtensa`;
//! - [`debugger`]: starting QEMU's gdbstub, halted, for a debugger to attach;
//! - [`job`] and [`device`]: the simulated loader's job, and what it reports;
//! - [`elf`]: the little of ELF the checks need;
//! - [`ucode_lib`]: the `ucode_lib.json` library package description;
//! - [`package`]: packaging a library (8 images and `ucode_lib.json`);
//! - [`symbolize`]: device faults as function names, source lines and backtraces;
//! - [`cxx`]: C++ libraries on the AWS torch API: their build and their shape functions;
//! - [`project`]: an op author's library anywhere on disk (the examples are ones);
//! - [`library`]: the host API: load a library, call its kernels with [`array`]s,
//!   read and write them as NumPy files ([`npy`]), [`generate`] inputs, and
//!   [`compare`] outputs;
//! - [`cli`]: the commands of the `ncop` and `sim` tools.
// The errors of the host tools keep what the device said (the loader's lines, the
// package's state) for the author to read; they are returned once per command or call,
// never in a loop, so their size costs nothing worth boxing them for.
#![allow(clippy::result_large_err)]

pub mod array;
pub mod cli;
pub mod compare;
pub mod cxx;
pub mod debugger;
pub mod device;
pub mod elf;
pub mod generate;
pub mod images;
pub mod job;
pub mod library;
pub mod machine;
pub mod npy;
pub mod package;
pub mod project;
pub mod symbolize;
pub mod toolchain;
pub mod ucode_lib;
