//! Which simulated core a thread is, and where each core's data RAM scratch lies: what
//! the loader sets up and what runs on a core's thread asks (the runtime's callbacks in
//! `loader`, the sanitizers' heap observer in `sanitize`).

use std::cell::Cell;

/// Core i's dataram scratch, as the device loader hands it out:
/// `DATA_SCRATCH_BASE + i * DATA_SCRATCH_SIZE` (qemu/firmware/src/loader.rs).
pub(crate) const DATA_SCRATCH_BASE: u32 = 0x7F80_0000;
/// The size of each core's dataram scratch.
pub(crate) const DATA_SCRATCH_SIZE: u32 = 0x1_0000;

thread_local! {
    /// This thread's core.
    static CORE: Cell<u32> = const { Cell::new(0) };
}

/// Makes this thread core `core`'s.
pub(crate) fn set_core(core: u32) {
    CORE.with(|c| c.set(core));
}

/// The core whose thread this is.
pub(crate) fn core() -> u32 {
    CORE.with(Cell::get)
}
