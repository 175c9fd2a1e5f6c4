/*
 * Special-register access the Rust side cannot express: upstream rustc has no inline
 * assembly for Xtensa (E0472), so each is a tiny windowed-ABI function.
 * Names follow the xtensa-lx crate's (get_processor_id, get_cycle_count, ...).
 */

    .section .text.xtensa_cpu, "ax"
    .align 4

/* u32 xtensa_get_processor_id(void): PRID. */
    .global xtensa_get_processor_id
    .type xtensa_get_processor_id, @function
xtensa_get_processor_id:
    entry   a1, 16
    rsr     a2, prid
    retw

/* u32 xtensa_get_cycle_count(void): CCOUNT. */
    .global xtensa_get_cycle_count
    .type xtensa_get_cycle_count, @function
    .align 4
xtensa_get_cycle_count:
    entry   a1, 16
    rsr     a2, ccount
    retw

/* void xtensa_memw(void): wait until every earlier load and store has completed. */
    .global xtensa_memw
    .type xtensa_memw, @function
    .align 4
xtensa_memw:
    entry   a1, 16
    memw
    retw

/* u32 xtensa_mask_interrupts(void): raise PS.INTLEVEL to 15, return the old PS. */
    .global xtensa_mask_interrupts
    .type xtensa_mask_interrupts, @function
    .align 4
xtensa_mask_interrupts:
    entry   a1, 16
    rsil    a2, 15
    retw

/* void xtensa_restore_ps(u32 ps): write back a PS from xtensa_mask_interrupts. */
    .global xtensa_restore_ps
    .type xtensa_restore_ps, @function
    .align 4
xtensa_restore_ps:
    entry   a1, 16
    wsr     a2, ps
    rsync
    retw

/* u32 xtensa_get_ps(void): the current PS (its INTLEVEL is the interrupt level). */
    .global xtensa_get_ps
    .type xtensa_get_ps, @function
    .align 4
xtensa_get_ps:
    entry   a1, 16
    rsr     a2, ps
    retw

/* void xtensa_spill_windows(void): writes every register window older than this
 * function's own to its stack save areas, as window overflows do. A chain of call12s
 * claims 72 registers past this frame, so the hardware must spill every older frame
 * (enough for 64 physical registers; QEMU's de233_fpu has 32). Used by the fault path
 * (vectors.S) and by xtensa_backtrace_origin. */
    .global xtensa_spill_windows
    .type xtensa_spill_windows, @function
    .align 4
xtensa_spill_windows:
.Lspill_windows:
    entry   a1, 48
    movi    a14, 4
    call12  .Lspill_chain
    retw

/* .Lspill_chain(u32 depth): call12 itself `depth` more times, then return. */
    .align 4
.Lspill_chain:
    entry   a1, 48
    beqz    a2, 1f
    addi    a14, a2, -1
    call12  .Lspill_chain
1:
    retw

/* void xtensa_backtrace_origin(u32 out[2]): spills every older window, then writes
 * out[0] = this function's return address (into its caller) and out[1] = its stack
 * pointer. From there the caller's frames can be walked in memory (fault.rs) for as
 * long as the caller does not return. */
    .global xtensa_backtrace_origin
    .type xtensa_backtrace_origin, @function
    .align 4
xtensa_backtrace_origin:
    entry   a1, 32
    call8   .Lspill_windows
    s32i    a0, a2, 0
    s32i    a1, a2, 4
    retw

/*
 * void xtensa_wait_for_interrupt(u32 ticks, u32 interrupts): sleeps (waiti) until one
 * of `interrupts` (an INTENABLE mask of level-1 interrupts) is raised, or `ticks`
 * CCOUNT ticks have passed (timer 0, CCOMPARE0, is armed for it), whichever is first.
 * The level-1 path of the exception vectors (vectors.S) disables every interrupt
 * again and clears the edge-triggered ones before this returns, at the caller's PS.
 * An interrupt raised before the waiti is not lost: it is pending, and waiti returns
 * at once. The caller's PS (its interrupt level) is restored on return.
 */
    .global xtensa_wait_for_interrupt
    .type xtensa_wait_for_interrupt, @function
    .align 4
xtensa_wait_for_interrupt:
    entry   a1, 16
    /* Masked until the waiti, which lowers the level and sleeps in one step: an
     * interrupt already pending is taken there, and returns after the waiti. Level 1
     * masks every interrupt that wakes a waiti (all are level-1: the vectors' .Lwake)
     * and stays below ICOUNTLEVEL (6): at level 15 ICOUNT did not count the 11 to 13
     * instructions from here to the one that lowers the level again, and the TCG
     * plugin, which cannot see the level, did (docs/simulation.md, "Counting
     * instructions"). */
    rsil    a4, 1
    rsr     a5, ccount
    add     a5, a5, a2
    /* Arms timer 0, and clears its pending interrupt. */
    wsr     a5, ccompare0
    movi    a6, 0x40            /* 1 << XCHAL_TIMER0_INTERRUPT (6) */
    or      a3, a3, a6
    wsr     a3, intenable
    rsync
    /* Skip the sleep if CCOUNT already passed CCOMPARE0: the timer would then fire only
     * when CCOUNT comes round again (2^32 ticks, 107 s at 40 MHz). A real core runs the
     * two instructions between the `rsr` and the `wsr` back to back, but QEMU may pause
     * a simulated one between them while other cores run (under -icount each core runs
     * in turn, for a slice of the time to the next timer), and a DMA engine that missed
     * its nap that way slept until every waiting core timed out (docs/simulation.md,
     * "Why -icount stopped working on QEMU 10"). Past the check the timer is armed, so
     * a later pause only leaves its interrupt pending, and waiti returns at once. */
    rsr     a6, ccount
    /* The ticks left to CCOMPARE0: more than asked once it has passed. (llvm-mc takes
     * no comment after a register operand.) */
    sub     a6, a5, a6
    bltu    a2, a6, 1f
    waiti   0
    j       2f
1:  movi    a6, 0               /* as the wake path leaves it (vectors.S, .Lwake) */
    wsr     a6, intenable
2:  wsr     a4, ps
    rsync
    retw
