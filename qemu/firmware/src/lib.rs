//! Device-side firmware of the simulated device, under QEMU.
//!
//! - [`board`]: the QEMU board: semihosting behind the runtime's platform hooks.
//! - [`bench`]: the instruction-count harness (`-icount shift=0` makes CCOUNT count
//!   guest instructions).
//! - `src/bin/`: self-test images and the simulated loader.
//!
//! Linking this crate into an image is what makes it a simulation image; the runtime
//! itself only ever calls its platform hooks.
#![no_std]

pub mod bench;
pub mod board;
pub mod loader;

pub use neuroncustomop;
