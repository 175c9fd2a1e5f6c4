/*
 * The vector table: VECBASE points here (set by _start, or by whoever boots the core).
 *
 * One section, so every branch and literal inside it is resolved by the assembler:
 * the vectors sit at fixed offsets, and a literal placed after them could not be
 * reached (l32r only reaches backwards).
 *
 *   0x000 .. 0x17F  window overflow / underflow handlers for call4, call8, call12
 *   0x180 .. 0x27F  literals used by the exception path (the level 2-5 interrupt
 *                   vectors' slots: no interrupt of those levels is ever enabled)
 *   0x280           debug exception vector (XCHAL_DEBUG_VECOFS, level 6)
 *   0x300           kernel exception vector
 *   0x340           user exception vector
 *   0x3C0           double exception vector
 *
 * An exception is fatal here: the core reports EXCCAUSE, EPC1 and EXCVADDR through
 * __neuron_fault (runtime/arch/xtensa/mod.rs), which never returns. To be able to call
 * that windowed Rust function whatever state the faulting code left, the path discards
 * every other live register window, switches to its own stack and clears PS.EXCM.
 *
 * Two things are not faults:
 * - a level-1 interrupt (EXCCAUSE 4) is the end of a `waiti` sleep (xtensa_wait_for_
 *   interrupt in cpu.S enables interrupts only around its `waiti`): the handler
 *   disables them again, clears the edge-triggered and software ones, and returns;
 * - a debug exception goes to __neuron_debug_exception, which an image may define
 *   (the simulation's instruction budget does); by default it is a fault.
 */

    .section .vectors, "ax"
    .global _vector_table
_vector_table:

/* Spill/refill a0-a3 of the oldest frame; a5 is its callee's stack pointer. */
    .org 0x00
    .global _WindowOverflow4
_WindowOverflow4:
    s32e    a0, a5, -16
    s32e    a1, a5, -12
    s32e    a2, a5, -8
    s32e    a3, a5, -4
    rfwo

    .org 0x40
    .global _WindowUnderflow4
_WindowUnderflow4:
    l32e    a0, a5, -16
    l32e    a1, a5, -12
    l32e    a2, a5, -8
    l32e    a3, a5, -4
    rfwu

/* a0-a3 go below the callee's sp (a9); a4-a7 below this frame's own caller's sp,
 * which is found in the save area of the frame above (a1 - 12). */
    .org 0x80
    .global _WindowOverflow8
_WindowOverflow8:
    s32e    a0, a9, -16
    l32e    a0, a1, -12
    s32e    a1, a9, -12
    s32e    a2, a9, -8
    s32e    a3, a9, -4
    s32e    a4, a0, -32
    s32e    a5, a0, -28
    s32e    a6, a0, -24
    s32e    a7, a0, -20
    rfwo

    .org 0xC0
    .global _WindowUnderflow8
_WindowUnderflow8:
    l32e    a1, a9, -12
    l32e    a0, a9, -16
    l32e    a7, a1, -12
    l32e    a2, a9, -8
    l32e    a4, a7, -32
    l32e    a3, a9, -4
    l32e    a5, a7, -28
    l32e    a6, a7, -24
    l32e    a7, a7, -20
    rfwu

    .org 0x100
    .global _WindowOverflow12
_WindowOverflow12:
    s32e    a0, a13, -16
    l32e    a0, a1, -12
    s32e    a1, a13, -12
    s32e    a2, a13, -8
    s32e    a3, a13, -4
    s32e    a4, a0, -48
    s32e    a5, a0, -44
    s32e    a6, a0, -40
    s32e    a7, a0, -36
    s32e    a8, a0, -32
    s32e    a9, a0, -28
    s32e    a10, a0, -24
    s32e    a11, a0, -20
    rfwo

    .org 0x140
    .global _WindowUnderflow12
_WindowUnderflow12:
    l32e    a1, a13, -12
    l32e    a0, a13, -16
    l32e    a11, a1, -12
    l32e    a2, a13, -8
    l32e    a4, a11, -48
    l32e    a8, a11, -32
    l32e    a3, a13, -4
    l32e    a5, a11, -44
    l32e    a6, a11, -40
    l32e    a7, a11, -36
    l32e    a9, a11, -28
    l32e    a10, a11, -24
    l32e    a11, a11, -20
    rfwu

    .org 0x180
    .align 4
.Lfault_fn:
    .4byte  __neuron_fault
.Lfault_stack_top:
    .4byte  _fault_stack_top
.Lfault_ps:
    /* PS for the report: WOE, user vector mode, interrupts masked, EXCM clear. */
    .4byte  0x0004002F
.Ldebug_handler:
    .4byte  __neuron_debug_exception

/* Debug exception (an ICOUNT overflow, a breakpoint): to the image's handler, with a0
 * in EXCSAVE6 and every other register as the interrupted code left it. LLVM 22's
 * assembler knows EXCSAVE6 and EPC6 only with +highpriinterrupts-level7, which the
 * target does not list: those instructions are spelled as their encodings. */
    .org 0x280
    .global _DebugExceptionVector
_DebugExceptionVector:
    .byte   0x00, 0xd6, 0x13    /* wsr a0, excsave6: see below */
    l32r    a0, .Ldebug_handler
    jx      a0

/* Each vector loads its kind (FAULT_KINDS in fault.rs) and the faulting PC (EPC1, or
 * DEPC for a double exception), then joins the common path. */
    .org 0x300
    .global _KernelExceptionVector
_KernelExceptionVector:
    wsr     a0, excsave1
    rsr     a0, exccause
    beqi    a0, 4, .Lwake
    rsr     a0, excsave1
    movi    a6, 1
    rsr     a8, epc1
    j       .Lfault_common

    .org 0x340
    .global _UserExceptionVector
_UserExceptionVector:
    wsr     a0, excsave1
    rsr     a0, exccause
    beqi    a0, 4, .Lwake
    rsr     a0, excsave1
    movi    a6, 0
    rsr     a8, epc1
    j       .Lfault_common

/* A level-1 interrupt ended a waiti: interrupts off again, edge and software ones
 * cleared (a level one stays until its source drops; it is masked now), then back. */
.Lwake:
    movi    a0, 0
    wsr     a0, intenable
    rsr     a0, interrupt
    wsr     a0, intclear
    rsr     a0, excsave1
    rfe

    .org 0x3C0
    .global _DoubleExceptionVector
_DoubleExceptionVector:
    movi    a6, 2
    rsr     a8, depc

.Lfault_common:
    rsr     a7, exccause
    rsr     a9, excvaddr
    /* Keep only the current window: older frames may sit on a broken stack. */
    rsr     a10, windowbase
    movi    a11, 1
    ssl     a10
    sll     a11, a11
    wsr     a11, windowstart
    l32r    a1, .Lfault_stack_top
    l32r    a10, .Lfault_ps
    wsr     a10, ps
    rsync
    /* __neuron_fault(kind = a6, cause = a7, pc = a8, vaddr = a9) never returns. */
    l32r    a4, .Lfault_fn
    callx4  a4
1:  j       1b

/* The default debug exception handler: a fault of kind 3 at EPC6. */
    .global __neuron_default_debug_exception
__neuron_default_debug_exception:
    movi    a6, 3
    .byte   0x80, 0xb6, 0x03    /* rsr a8, epc6 */
    j       .Lfault_common

/* The fault path's own stack: the faulting code's stack may be the broken thing. */
    .section .bss.fault_stack, "aw", @nobits
    .align 16
    .space 1024
    .global _fault_stack_top
_fault_stack_top:
