//! `critical-section` for one Xtensa core: mask interrupts, restore the old PS.
//!
//! Cores do not share runtime state (each has its own image), so masking interrupts
//! on this core is enough.

struct MaskInterrupts;
critical_section::set_impl!(MaskInterrupts);

// SAFETY: acquire masks every interrupt on this core and returns the PS to restore;
// release restores it. Nesting works because each level restores its own saved PS.
unsafe impl critical_section::Impl for MaskInterrupts {
    unsafe fn acquire() -> critical_section::RawRestoreState {
        super::mask_interrupts()
    }

    unsafe fn release(restore: critical_section::RawRestoreState) {
        // SAFETY: `restore` came from `acquire` on this core (the crate's contract).
        unsafe { super::restore_interrupts(restore) }
    }
}
