//! Which simulated core a thread is: what the loader sets up and what runs on a core's
//! thread asks (the runtime's callbacks in `loader`, the sanitizers' heap observer in
//! `sanitize`).

use std::cell::Cell;

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
