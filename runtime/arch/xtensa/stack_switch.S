/*
 * The stack switch of runtime/stack_switch.rs (docs/abi/data_transfer.md, "Stack
 * switch"): run a function on another stack, under the windowed ABI.
 *
 * int32_t neuron_stack_call(void (*fn)(void *), void *arg, NeuronSwitchFrame *frame)
 *     a2 = fn, a3 = arg, a4 = frame: the 32-byte saved-context frame at the top of the
 *     new stack (16-byte aligned); the new stack pointer is frame + 16.
 * Returns 0 once fn(arg) has returned and the original stack is back, or 1 if the
 * register windows could not all be spilled (fn was not called, nothing changed).
 *
 * Why the spill. Under the windowed ABI a caller's registers live in the register file
 * until a window overflow writes them out, to save areas found through the stack
 * pointers of the frames around them: a frame's a0..a3 go to the 16 bytes below its
 * callee's SP, its a4..a11 below its own caller's SP. If this function's callers were
 * still in the register file when SP moves, a deep call on the new stack would spill
 * them relative to the new SP, and the return to the old stack would reload them from
 * the old one: garbage. So every older window is spilled first, while SP is still
 * the original one, and WINDOWSTART is checked to hold nothing but this frame.
 *
 * The spill is a chain of call12s (.Lspill_windows): each `entry` of a call12 frame
 * needs 12 registers beyond the previous frame free, and the chain goes on until it
 * has claimed every physical register, which forces the hardware to overflow every
 * older frame. SPILL_DEPTH = 5 call12 frames rotate the window by 60 registers past
 * this frame's: enough for the 32 physical registers of QEMU's de233_fpu and for a core
 * with 64. The check after the chain turns a core with still more into an error
 * instead of silent corruption.
 *
 * The saved-context frame (NeuronSwitchFrame; its layout is pinned in
 * runtime/stack_switch.rs):
 *
 *   frame + 0  .. +16   copy of this function's base save area: its caller's spilled
 *                       a0..a3, which sit just below this function's original SP.
 *                       These are the 16 bytes below the new SP, which is where the
 *                       window handlers look for them: if this frame is spilled while
 *                       the kernel runs deep, _WindowOverflow8 reads its caller's SP
 *                       from new SP - 12 to find where this frame's a4..a7 go (this
 *                       frame's own extra save area, on the original stack).
 *   frame + 16          original SP (this function's a1 before the switch)
 *   frame + 20 .. +32   magic, fn, arg: written by the Rust side, checked after return
 *
 * The original SP is also kept in a5 across the call: a callx8 callee cannot touch
 * a0..a7, and if this frame is spilled they come back from its own save area.
 */

    .section .text.neuron_stack_call, "ax"
    .global neuron_stack_call
    .type neuron_stack_call, @function
    .align 4
neuron_stack_call:
    /* 48 bytes: room for this frame's a4..a11 when the call12 chain spills it. */
    entry   a1, 48

    /* 1. Spill every older register window to its own stack: SPILL_DEPTH = 5 (a
     *    number, not a symbol: llvm-mc would turn `movi` of a symbol into a literal). */
    movi    a14, 5
    call12  .Lspill_windows

    /* 2. Only this frame may be live: WINDOWSTART == 1 << WINDOWBASE. */
    rsr     a5, windowbase
    rsr     a6, windowstart
    ssl     a5
    movi    a7, 1
    sll     a7, a7
    bne     a6, a7, .Lwindows_live

    /* 3. The saved-context frame: the base save area copy, then the original SP. */
    addi    a8, a1, -16
    l32i    a5, a8, 0
    l32i    a6, a8, 4
    l32i    a7, a8, 8
    l32i    a9, a8, 12
    s32i    a5, a4, 0
    s32i    a6, a4, 4
    s32i    a7, a4, 8
    s32i    a9, a4, 12
    s32i    a1, a4, 16

    /* 4. Switch, call fn(arg), switch back. A plain `mov`, not `movsp`: movsp raises
     *    an Alloca exception exactly when the caller's window is spilled (as here), for
     *    a handler to move the caller's base save area to below the new SP, which step
     *    3 has already done. */
    mov     a5, a1
    addi    a6, a4, 16
    mov     a1, a6
    mov     a10, a3
    callx8  a2
    mov     a1, a5
    movi    a2, 0
    retw

.Lwindows_live:
    /* STATUS_WINDOWS_LIVE */
    movi    a2, 1
    retw
    .size neuron_stack_call, . - neuron_stack_call

/* void .Lspill_windows(u32 depth): call12 itself `depth` more times, then return. */
    .align 4
.Lspill_windows:
    entry   a1, 48
    beqz    a2, 1f
    addi    a14, a2, -1
    call12  .Lspill_windows
1:
    retw
