/*
 * The vector table: VECBASE points here (set by _start, or by whoever boots the core).
 *
 * One section, so every branch and literal inside it is resolved by the assembler:
 * the vectors sit at fixed offsets, and a literal placed after them could not be
 * reached (l32r only reaches backwards).
 *
 *   0x000 .. 0x17F  window overflow / underflow handlers for call4, call8, call12
 *   0x180           the stack limit (_neuron_stack_limit), then the fault path's
 *                   literals and the stack-overflow exits of the overflow handlers
 *   0x280           debug exception vector (XCHAL_DEBUG_VECOFS, level 6)
 *   0x300           kernel exception vector
 *   0x340           user exception vector
 *   0x3C0           double exception vector, then the fault path
 *
 * Stack check. Each window overflow handler, before it spills a frame, compares the
 * stack pointer it spills below (the spilled frame's callee's, a5 / a9 / a13) with
 * the stack limit word at VECBASE + 0x180: a stack pointer inside this image
 * (VECBASE and up) but below the limit is a stack overflow. Stacks outside the image
 * (an HBM stack of the stack switch) are not this table's to check. The limit is 0,
 * which disables the check, until firmware arms it (fault.rs, `arm_stack_limit`):
 * then it is the image stack's bottom plus a red zone. Cost on the normal path:
 * rsr, bltu, l32i, bgeu: 4 instructions per overflow (docs/PERFORMANCE.md).
 *
 * An exception, or a stack overflow, is fatal here: the core fills the fault record
 * (fault.rs, FaultRecord), spills every older register window to its stack so the
 * backtrace can be read from memory (an exception in ordinary code only), then
 * discards the windows, switches to its own stack, clears PS.EXCM and calls
 * __neuron_fault (fault.rs), which never returns. A fault while that is under way
 * (a spill into a broken stack) is reported as the first fault, without frames.
 *
 * Two things are not faults:
 * - a level-1 interrupt (EXCCAUSE 4) is the end of a `waiti` sleep (xtensa_wait_for_
 *   interrupt in cpu.S enables interrupts only around its `waiti`): the handler
 *   disables them again, clears the edge-triggered and software ones, and returns;
 * - a debug exception goes to __neuron_debug_exception, which an image may define
 *   (the simulation's instruction budget does); by default it is a fault (kind 4).
 */

/* Numbers, not .set symbols: llvm-mc would turn `movi` of a symbol into a literal.
 * fault.rs's FaultRecord, byte offsets: 0 state, 4 kind, 8 cause, 12 pc, 16 vaddr,
 * 20 ra, 24 sp. FaultRecord::state: 1 spilling, 2 frames in memory, 3 no frames.
 * Kinds (FAULT_KINDS): 0 user, 1 kernel, 2 double exception, 3 stack overflow, 4 debug.
 * The stack limit: _neuron_stack_limit, at offset 0x180 of the table. */

    .section .vectors, "ax"
    .global _vector_table
_vector_table:

/* Spill/refill a0-a3 of the oldest frame; a5 is its callee's stack pointer. */
    .org 0x00
    .global _WindowOverflow4
_WindowOverflow4:
    s32e    a0, a5, -16
    rsr     a0, vecbase
    bltu    a5, a0, 1f
    l32i    a0, a0, 0x180
    bgeu    a5, a0, 1f
    j       .Lstack_overflow4
1:  s32e    a1, a5, -12
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
    rsr     a0, vecbase
    bltu    a9, a0, 1f
    l32i    a0, a0, 0x180
    bgeu    a9, a0, 1f
    j       .Lstack_overflow8
1:  l32e    a0, a1, -12
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
    rsr     a0, vecbase
    bltu    a13, a0, 1f
    l32i    a0, a0, 0x180
    bgeu    a13, a0, 1f
    j       .Lstack_overflow12
1:  l32e    a0, a1, -12
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
    .global _neuron_stack_limit
_neuron_stack_limit:
    .4byte  0
.Lfault_fn:
    .4byte  __neuron_fault
.Lfault_record:
    .4byte  __neuron_fault_record
.Lspill_fn:
    .4byte  xtensa_spill_windows
.Lfault_stack_top:
    .4byte  _fault_stack_top
.Lfault_ps:
    /* PS for the report: WOE, user vector mode, interrupts masked, EXCM clear. */
    .4byte  0x0004002F
.Ldebug_handler:
    .4byte  __neuron_debug_exception

/* A window overflow found the stack pointer below the limit. The window is the frame
 * being spilled (the oldest live one: every frame older than it is in memory); its
 * callee's a0 and a1 are its a4/a5, a8/a9 or a12/a13. Its own a0 was saved below the
 * callee's stack pointer before the check. Newer frames, all below the limit, are
 * discarded. Reported: the PC that overflowed (EPC1), the stack pointer (as vaddr),
 * and, in the cause word, the return address into the spilled frame. */
.Lstack_overflow4:
    l32e    a0, a5, -16
    mov     a7, a4
    mov     a9, a5
    j       .Lstack_overflow
.Lstack_overflow8:
    l32e    a0, a9, -16
    mov     a7, a8
    j       .Lstack_overflow
.Lstack_overflow12:
    l32e    a0, a13, -16
    mov     a7, a12
    mov     a9, a13
.Lstack_overflow:
    movi    a6, 3
    rsr     a8, epc1
    j       .Lfault_report

/* Debug exception (an ICOUNT overflow, a breakpoint): to the image's handler, with a0
 * in EXCSAVE6 and every other register as the interrupted code left it. LLVM 22's
 * assembler knows EXCSAVE6 and EPC6 only with +highpriinterrupts-level7, which the
 * target does not list: those instructions are spelled as their encodings. */
    .org 0x280
    .global _DebugExceptionVector
_DebugExceptionVector:
    .byte   0x00, 0xd6, 0x13    /* wsr a0, excsave6 */
    l32r    a0, .Ldebug_handler
    jx      a0

/* Each vector loads its kind (FAULT_KINDS in fault.rs), EXCCAUSE, the faulting PC
 * (EPC1, or DEPC for a double exception) and EXCVADDR, then joins the fault path;
 * a level-1 interrupt is a waiti's wake-up instead (.Lwake). */
    .org 0x300
    .global _KernelExceptionVector
_KernelExceptionVector:
    wsr     a0, excsave1
    rsr     a0, exccause
    beqi    a0, 4, .Lwake
    rsr     a0, excsave1
    movi    a6, 1
    rsr     a8, epc1
    j       .Lexception

    .org 0x340
    .global _UserExceptionVector
_UserExceptionVector:
    wsr     a0, excsave1
    rsr     a0, exccause
    beqi    a0, 4, .Lwake
    rsr     a0, excsave1
    movi    a6, 0
    rsr     a8, epc1
.Lexception:
    rsr     a7, exccause
    rsr     a9, excvaddr
    j       .Lfault_report

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
    rsr     a7, exccause
    rsr     a9, excvaddr

/* a6 kind, a7 cause, a8 pc, a9 vaddr; a0 and a1 are this window's frame's return
 * address and stack pointer. */
.Lfault_report:
    l32r    a10, .Lfault_record
    l32i    a11, a10, 0
    beqz    a11, 1f
    /* A fault while reporting one: report the first, without frames. */
    movi    a11, 3
    s32i    a11, a10, 0
    j       .Lfault_call
1:  s32i    a6, a10, 4
    s32i    a7, a10, 8
    s32i    a8, a10, 12
    s32i    a9, a10, 16
    s32i    a0, a10, 20
    s32i    a1, a10, 24
    movi    a11, 1
    s32i    a11, a10, 0
    /* No stack check from here on: the fault stack lies inside the image, below it. */
    rsr     a11, vecbase
    movi    a12, 0
    s32i    a12, a11, 0x180
    l32r    a11, .Lfault_ps
    wsr     a11, ps
    rsync
    /* A double exception stopped inside a window handler, on a stack that may be
     * broken: no frames. A stack overflow has nothing older live. An exception in
     * ordinary code spills its callers' windows, on its own stack. */
    movi    a11, 3
    beqi    a6, 2, 2f
    movi    a11, 2
    beqi    a6, 3, 2f
    l32r    a12, .Lspill_fn
    callx12 a12
    movi    a11, 2
2:  s32i    a11, a10, 0

.Lfault_call:
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
    /* __neuron_fault(&__neuron_fault_record) never returns. */
    l32r    a6, .Lfault_record
    l32r    a4, .Lfault_fn
    callx4  a4
1:  j       1b

/* The default debug exception handler: a fault of kind 4 at EPC6, reported from the
 * interrupted code's window (its a0 back from EXCSAVE6). */
    .global __neuron_default_debug_exception
__neuron_default_debug_exception:
    .byte   0x00, 0xd6, 0x03    /* rsr a0, excsave6 */
    movi    a6, 4
    .byte   0x80, 0xb6, 0x03    /* rsr a8, epc6 */
    movi    a7, 0
    movi    a9, 0
    j       .Lfault_report

/* The fault path's own stack: the faulting code's stack may be the broken thing. */
    .section .bss.fault_stack, "aw", @nobits
    .align 16
    .space 1024
    .global _fault_stack_top
_fault_stack_top:
