/*
 * _start: the reset entry of a standalone image (the ELF entry point).
 *
 * A library image is normally entered through entry_func by the device's loader, which
 * has already set the core up; _start is for images that boot the core themselves.
 * It puts the core in the state the windowed ABI needs, zeroes .bss, and calls
 * __neuron_start (runtime/arch/xtensa/mod.rs), which never returns.
 */

    .section .text._start, "ax"
    .global _start
    .align 4
_start:
    /* One live window, at physical registers 0..15. */
    movi    a0, 0
    wsr     a0, windowbase
    rsync
    movi    a0, 1
    wsr     a0, windowstart
    /* Vectors: this image's own table. */
    movi    a0, _vector_table
    wsr     a0, vecbase
    /* PS: WOE (window exceptions on), UM, interrupts masked, EXCM clear. */
    movi    a0, 0x0004002F
    wsr     a0, ps
    rsync
    /* ATOMCTL: s32c1i works on plain RAM (internal operation for all cache modes). */
    movi    a0, 0x2A
    wsr     a0, atomctl
    /* CPENABLE: coprocessor 0 is the FPU; with its bit clear the first float
     * instruction raises Coprocessor0Disabled (the target JSON has +fp). */
    movi    a0, 1
    wsr     a0, cpenable
    rsync

    movi    a2, _bss_start
    movi    a3, _bss_end
    movi    a4, 0
.Lzero_bss:
    bgeu    a2, a3, .Lbss_done
    s32i    a4, a2, 0
    addi    a2, a2, 4
    j       .Lzero_bss
.Lbss_done:

    movi    a1, _stack_top
    movi    a0, 0           /* no return address: ends backtraces */
    movi    a4, __neuron_start
    callx4  a4
1:  j       1b
