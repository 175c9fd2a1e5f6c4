//! Xtensa: safe wrappers over the `.S` helpers, the standalone start path, the fault
//! reporter the exception vectors call (with the stack check and backtraces), and the
//! `critical-section` implementation.
//!
//! `xtensa-lx` and `xtensa-lx-rt` would provide most of this, but neither builds with
//! upstream rustc (docs/toolchain.md); the names here follow theirs.

mod critical_section_impl;
mod fault;
pub mod platform;

pub use fault::{MAX_FRAMES, STACK_RED_ZONE, arm_stack_limit, report_abort};

unsafe extern "C" {
    fn xtensa_get_processor_id() -> u32;
    fn xtensa_get_cycle_count() -> u32;
    fn xtensa_memw();
    fn xtensa_mask_interrupts() -> u32;
    fn xtensa_restore_ps(ps: u32);
    fn xtensa_get_ps() -> u32;
    fn xtensa_wait_for_interrupt(ticks: u32, interrupts: u32);
}

/// The interrupts that end a [`wait_for_interrupt`] besides its timer: the core's
/// edge-triggered external interrupts (de233_fpu: 15 to 20), the ones a platform can
/// pulse to say "something changed" without the core having to acknowledge it.
const WAKE_INTERRUPTS: u32 = 0x001F_8000;

/// Sleeps (`waiti`) until an external edge interrupt arrives or `ticks` CCOUNT ticks
/// have passed, whichever is first. For waits on memory another agent writes (a DMA
/// engine, another core): the caller re-checks after every return. The timer makes it
/// correct with no interrupt at all (it is then a slow poll); an agent that raises an
/// edge interrupt when it writes wakes the core at once. Uses timer 0 (CCOMPARE0).
pub fn wait_for_interrupt(ticks: u32) {
    // SAFETY: arms timer 0 and enables interrupts only for the waiti; the vectors'
    // level-1 path disables them again and returns here, with the caller's PS.
    unsafe { xtensa_wait_for_interrupt(ticks, WAKE_INTERRUPTS) }
}

/// The processor id (PRID): the core's index in the cluster.
pub fn prid() -> u32 {
    // SAFETY: reads a special register; no memory is touched.
    unsafe { xtensa_get_processor_id() }
}

/// The cycle counter (CCOUNT). Under QEMU with `-icount shift=0` it advances exactly
/// once per guest instruction, which makes it an instruction counter.
pub fn get_cycle_count() -> u32 {
    // SAFETY: reads a special register; no memory is touched.
    unsafe { xtensa_get_cycle_count() }
}

/// `memw`: every earlier load and store completes before any later one.
pub fn memw() {
    // SAFETY: a barrier instruction; no memory is touched.
    unsafe { xtensa_memw() }
}

/// The current interrupt level (PS.INTLEVEL).
pub fn interrupt_level() -> u32 {
    // SAFETY: reads a special register; no memory is touched.
    unsafe { xtensa_get_ps() & 0xF }
}

/// Masks every interrupt (INTLEVEL 15) and returns the previous PS for
/// [`restore_interrupts`].
pub fn mask_interrupts() -> u32 {
    // SAFETY: `rsil` only changes the interrupt level, which the caller restores.
    unsafe { xtensa_mask_interrupts() }
}

/// Restores the PS returned by [`mask_interrupts`].
///
/// # Safety
/// `ps` must come from [`mask_interrupts`] on this core, restored in LIFO order, so the
/// window and exception state it carries is the current one.
pub unsafe fn restore_interrupts(ps: u32) {
    // SAFETY: forwarded from this function's contract.
    unsafe { xtensa_restore_ps(ps) }
}
