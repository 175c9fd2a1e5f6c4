//! Device-side firmware of the simulated device, under QEMU.
//!
//! - [`board`]: the QEMU board: semihosting behind the runtime's platform hooks.
//! - [`bench`]: the instruction-count harness (`-icount shift=0` makes CCOUNT count
//!   guest instructions).
//! - [`loader`] and [`dma_engine`]: the simulated device loader and DMA engine;
//!   [`dispatch`], the op hand-off the host tier's loader shares.
//! - [`icount`]: exact per-core instruction counts and the instruction budget.
//! - `src/bin/`: self-test images, and the loader's and the engine's images.
//!
//! Linking this crate into an image is what makes it a simulation image; the runtime
//! itself only ever calls its platform hooks.
#![no_std]

pub mod bench;
pub mod board;
pub mod callbacks;
pub mod dispatch;
pub mod dma_engine;
pub mod icount;
pub mod loader;

pub use neuroncustomop;
