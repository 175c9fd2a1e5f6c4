//! Host side of the simulated device: everything the real device's toolchain, loader
//! and DMA engine would do around the runtime, so it can be built, run and tested under
//! QEMU.
//!
//! - [`toolchain`]: where the Xtensa tools are, and what to do when they are missing;
//! - [`images`]: building the 8 per-core images of an example or firmware program;
//! - [`machine`]: booting images under `qemu-system-xtensa`;
//! - [`job`] and [`device`]: the simulated loader's job, and what it reports;
//! - [`elf`]: the little of ELF the checks need;
//! - [`ucode_lib`]: the `ucode_lib.json` library package description;
//! - [`package`]: packaging a library (8 images and `ucode_lib.json`);
//! - [`project`]: an op author's library anywhere on disk (the examples are ones);
//! - [`library`]: the host API: load a library, call its kernels with [`array`]s,
//!   read and write them as NumPy files ([`npy`]), [`generate`] inputs, and
//!   [`compare`] outputs;
//! - [`cli`]: the commands of the `ncop` and `sim` tools.
pub mod array;
pub mod cli;
pub mod compare;
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
pub mod toolchain;
pub mod ucode_lib;
