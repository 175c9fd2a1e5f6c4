//! The simulated machine: everything the real device's toolchain, loader and DMA engine
//! would do around the runtime, so a set of per-core images can be built, booted under
//! QEMU, given jobs and explained. Its modules:
//!
//! - [`toolchain`]: finding the Xtensa tools, and the system's packages they come from
//!   (versions, install lines); [`process`]: running one and saying why
//!   it failed; [`home`]: where the tools' data lives, and their cache; [`lock`]:
//!   locks between processes;
//! - [`images`]: building the firmware programs and reading a folder of per-core
//!   images; [`elf`]: the little of ELF the others need;
//! - [`machine`]: booting them under QEMU, with its gdbstub ([`debugger`]) and the TCG
//!   plugin ([`plugin`]: building it, its arguments, its lines);
//! - [`job`] and [`device`]: the loader's job, and what it reports;
//! - [`findings`]: what the memory checks found; [`symbolize`]: device faults and
//!   findings as function names and source lines; [`ranges`]: the author's range
//!   markers in an image, for the profile.
//!
//! It must NOT know op authors' projects, packages, `ucode_lib.json` or the host API:
//! it takes images (paths to ELF files) and jobs, and never finds a library by name;
//! the crates above it (`neuroncustomop-package`, `neuroncustomop-host`, the CLIs in
//! `neuroncustomop-sim`) depend on it, never the reverse (qemu/README.md).
// The errors keep what the device said (the loader's lines) for the author to read;
// they are returned once per command or call, never in a loop, so their size costs
// nothing worth boxing them for.
#![allow(clippy::result_large_err)]

pub mod debugger;
pub mod device;
pub mod elf;
pub mod findings;
pub mod home;
pub mod images;
pub mod job;
pub mod lock;
pub mod machine;
pub mod plugin;
pub mod process;
pub mod ranges;
pub mod symbolize;
pub mod toolchain;
