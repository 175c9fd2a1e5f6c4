//! Exact per-core instruction counts, and the instruction budget that stops a kernel
//! that runs too long, on the Debug option's `ICOUNT` register (`icount.S`).
//!
//! `ICOUNT` counts the instructions this core retires, whatever the other cores do and
//! whatever QEMU's scheduler does, so a count is exact on 1 core or 8, under `-icount`
//! or not. It is 32 bits wide: each time it would pass `0xFFFFFFFF`, a debug exception
//! lets `icount.S` count the wrap, and the budget is checked there. Not counted:
//! instructions run with interrupts masked at level 15 (the runtime's
//! `critical-section` implementation, which none of its own paths uses) and the debug
//! handler itself.
//!
//! ```text
//! icount::start(budget);   // before the kernel
//! kernel();
//! let instructions = icount::stop();
//! ```

use core::ptr::{addr_of, read_volatile, write_volatile};
use core::sync::atomic::{AtomicU32, Ordering};
use neuroncustomop_wire::job::{icount_plan, icount_total};

unsafe extern "C" {
    /// `ICOUNT = start`, no wraps yet, the budget spent at wrap `budget_wraps + 1`.
    fn icount_start(start: u32, budget_wraps: u32);
    /// `ICOUNT` now.
    fn icount_read() -> u32;
    /// `icount.S`'s per-core words: wraps, budget wrap, stopped PC, two saved registers.
    static mut icount_state: [u32; 5];
}

/// `icount_state[1]` when no budget is armed.
const NO_BUDGET: u32 = u32::MAX;

/// Where `ICOUNT` started for the kernel now running.
static START: AtomicU32 = AtomicU32::new(0);

/// Starts counting a kernel's instructions; after `budget` of them (0: no budget) the
/// kernel is stopped and the loader's `loader_over_budget` runs instead.
pub fn start(budget: u64) {
    let (start, budget_wraps) = icount_plan(budget);
    START.store(start, Ordering::Relaxed);
    // SAFETY: icount.S's words are this core's; the handler only runs on this core.
    unsafe { icount_start(start, budget_wraps) };
}

/// Stops the budget and returns the instructions since [`start`].
pub fn stop() -> u64 {
    // SAFETY: reads ICOUNT, then icount.S's words (this core's); a wrap between the
    // two reads would need 4 G instructions.
    let end = unsafe { icount_read() };
    let state = addr_of!(icount_state).cast::<u32>();
    // SAFETY: as in `start`.
    let wraps = unsafe {
        write_volatile(state.cast_mut().add(1), NO_BUDGET);
        read_volatile(state)
    };
    icount_total(START.load(Ordering::Relaxed), wraps, end)
}

/// Where the budget stopped the last kernel.
pub fn stopped_pc() -> u32 {
    // SAFETY: as in `start`.
    unsafe { read_volatile(addr_of!(icount_state).cast::<u32>().add(2)) }
}
