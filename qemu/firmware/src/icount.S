/*
 * Per-core instruction counting and the instruction budget, on the Debug option's
 * ICOUNT register (see qemu/firmware/src/icount.rs for how the loader uses them).
 *
 * ICOUNT counts the instructions this core retires while CINTLEVEL < ICOUNTLEVEL; it
 * is set to 6 (the debug level), so everything but this file's handler and code with
 * interrupts masked at level 15 (the runtime's critical-section implementation) is
 * counted. When
 * ICOUNT would pass 0xFFFFFFFF a debug exception (DEBUGCAUSE.IC) is raised instead:
 * __neuron_debug_exception counts the wrap, and once `budget_wraps` wraps have passed
 * it sends the core to loader_over_budget instead of back.
 */

/*
 * LLVM 22's assembler knows the level-6 registers (EPC6, EPS6, EXCSAVE6) only with
 * +highpriinterrupts-level7, which the target does not list, so the instructions that
 * use them are spelled as their encodings (checked with llvm-objdump).
 *
 * icount_state, one per core (it is in each core's own loader image), by offset:
 *   0  wraps since icount_start
 *   4  the wrap at which the budget is spent (0xFFFFFFFF: none)
 *   8  where the core was when the budget stopped it
 *  12  a2 and (16) a3 of the interrupted code, while the handler runs
 */

    .section .bss.icount_state, "aw", @nobits
    .align 4
    .global icount_state
icount_state:
    .space 20

/*
 * void icount_start(u32 start, u32 budget_wraps): ICOUNT = start, no wraps yet, the
 * budget spent at wrap number budget_wraps + 1 (0xFFFFFFFF: never); counting on.
 */
    .section .text.icount_start, "ax"
    .global icount_start
    .type icount_start, @function
    .align 4
icount_start:
    entry   a1, 16
    movi    a4, icount_state
    movi    a5, 0
    s32i    a5, a4, 0
    s32i    a3, a4, 4
    movi    a5, 6
    wsr     a5, icountlevel
    isync
    wsr     a2, icount
    retw

/* u32 icount_read(void): ICOUNT now. */
    .section .text.icount_read, "ax"
    .global icount_read
    .type icount_read, @function
    .align 4
icount_read:
    entry   a1, 16
    rsr     a2, icount
    retw

/*
 * The debug exception handler (vectors.S jumps here with a0 in EXCSAVE6, at level 6).
 * Only an ICOUNT wrap is expected; any other cause is the runtime's fault report.
 */
    .section .text.__neuron_debug_exception, "ax"
    .global __neuron_debug_exception
    .align 4
__neuron_debug_exception:
    rsr     a0, debugcause
    bbci    a0, 0, .Lnot_icount          /* DEBUGCAUSE.IC */
    movi    a0, icount_state
    s32i    a2, a0, 12
    s32i    a3, a0, 16
    movi    a2, 0
    wsr     a2, icount
    l32i    a2, a0, 0
    addi    a2, a2, 1
    s32i    a2, a0, 0
    l32i    a3, a0, 4
    bltu    a3, a2, .Lover_budget
.Lback:
    l32i    a2, a0, 12
    l32i    a3, a0, 16
    .byte   0x00, 0xd6, 0x03    /* rsr a0, excsave6 */
    rfi     6
.Lover_budget:
    /* Never again for this kernel; return into loader_over_budget with a clean PS
     * (WOE, user vector mode, level 0, EXCM clear): it discards the kernel's frames. */
    movi    a2, -1
    s32i    a2, a0, 4
    .byte   0x20, 0xb6, 0x03    /* rsr a2, epc6 */
    s32i    a2, a0, 8
    movi    a2, loader_over_budget_entry
    .byte   0x20, 0xb6, 0x13    /* wsr a2, epc6 */
    movi    a2, 0x00040020
    .byte   0x20, 0xc6, 0x13    /* wsr a2, eps6 */
    j       .Lback
.Lnot_icount:
    /* The default handler takes a0 back from EXCSAVE6 itself; jx, not j, reaches the
     * vectors however much code lies between (big_code has 496 KiB). */
    movi    a0, __neuron_default_debug_exception
    jx      a0
/* Where the handler ends: the host's TCG plugin leaves the handler (and the debug
 * vector) out of its counts, as ICOUNT does (qemu/plugin/src/lib.rs). */
    .global icount_handler_end
icount_handler_end:

/*
 * Where the budget sends a core: discards every register window but the current one,
 * moves to the loader's stack and calls loader_over_budget (never returns).
 */
    .section .text.loader_over_budget_entry, "ax"
    .align 4
loader_over_budget_entry:
    rsr     a2, windowbase
    movi    a3, 1
    ssl     a2
    sll     a3, a3
    wsr     a3, windowstart
    rsync
    movi    a1, _stack_top
    movi    a0, 0               /* no return address: ends backtraces */
    movi    a4, loader_over_budget
    callx4  a4
1:  j       1b
