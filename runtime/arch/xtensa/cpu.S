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
     * interrupt already pending is taken there, and returns after the waiti. */
    rsil    a4, 15
    rsr     a5, ccount
    add     a5, a5, a2
    /* Arms timer 0, and clears its pending interrupt. */
    wsr     a5, ccompare0
    movi    a6, 0x40            /* 1 << XCHAL_TIMER0_INTERRUPT (6) */
    or      a3, a3, a6
    wsr     a3, intenable
    rsync
    waiti   0
    wsr     a4, ps
    rsync
    retw
