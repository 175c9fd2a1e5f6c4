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
