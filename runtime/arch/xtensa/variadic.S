/*
 * C's variadic formatted-output functions, entered from C and C++ kernels: printf,
 * sprintf, snprintf, and the va_list ones vprintf, vsprintf, vsnprintf. Each builds a
 * pointer to an Xtensa va_list and calls the Rust formatter (__neuron_vprintf or
 * __neuron_vsnprintf, runtime/start_exit/printf.rs), which walks it as GCC's va_arg does
 * (runtime/start_exit/printf/va_list.rs).
 *
 * Why assembly: LLVM 22's va_start, the one under clang's and rustc's variadic functions,
 * reads the arguments one register late (docs/toolchain.md, defect 6, and
 * .cargo/llvm-variadic/README.md). Callers are right, so this side does what the ABI says.
 *
 * The variadic entries (printf, sprintf, snprintf), with a frame of 96 bytes:
 *   sp+16 .. sp+40  a2..a7 as the caller passed them: the va_list's register area;
 *   sp+40 .. sp+52  the va_list: { stack, registers, index }, where stack is the first
 *                   stack argument (the caller's sp, our sp + 96) less 32, and index
 *                   starts past the named arguments, 4 bytes each;
 *   sp+64 .. sp+96  not ours: a window overflow stores our a4..a7 (we call with
 *                   callx8) and our caller's a0..a3 in the top 32 bytes of our frame.
 * The va_list entries (vprintf, vsprintf, vsnprintf) get clang's va_list by value: on
 * the stack, at the caller's sp (our sp + 32), whatever registers are free; the
 * formatter gets its address (the copy is ours to advance). That va_list was made by
 * clang's va_start in the caller's own variadic function, with defect 6's register
 * area: it is corrected here, so a kernel's `log(fmt, ...)` that hands its arguments to
 * vprintf prints them right. (A va_list some va_arg already advanced is not supported:
 * its index no longer tells how far off the area is.)
 * Every function is in its own section, so a kernel that calls none of them links none.
 */

/* A variadic entry `name` with `named` named arguments, which calls `target`. The
 * formatter's arguments are the named ones in a10.. and the va_list's address after
 * them; `size_max` (sprintf) puts SIZE_MAX between the buffer and the format. */
.macro variadic name, named, target, size_max=0
    .section .text.\name, "ax"
    .align 4
.Lliteral_\name:
    .long   \target
    .global \name
    .type \name, @function
    .align 4
\name:
    entry   a1, 96
    s32i    a2, a1, 16
    s32i    a3, a1, 20
    s32i    a4, a1, 24
    s32i    a5, a1, 28
    s32i    a6, a1, 32
    s32i    a7, a1, 36
    addi    a8, a1, 64              /* stack: sp + 96 - 32 */
    s32i    a8, a1, 40
    addi    a8, a1, 16              /* registers: the saved a2 */
    s32i    a8, a1, 44
    movi    a8, 4 * \named          /* index: past the named arguments */
    s32i    a8, a1, 48
    mov     a10, a2
    .if \size_max
    movi    a11, -1
    mov     a12, a3
    addi    a13, a1, 40
    .elseif \named == 1
    addi    a11, a1, 40
    .else
    mov     a11, a3
    mov     a12, a4
    addi    a13, a1, 40
    .endif
    l32r    a8, .Lliteral_\name
    callx8  a8
    mov     a2, a10
    retw
    .size \name, . - \name
.endm

/* A va_list entry `name` with `named` arguments before the va_list: they stay in a10..,
 * the va_list's address follows them. */
.macro va_list_entry name, named, target, size_max=0
    .section .text.\name, "ax"
    .align 4
.Lliteral_\name:
    .long   \target
    .global \name
    .type \name, @function
    .align 4
\name:
    entry   a1, 32
    /* The va_list comes from clang's va_start (defect 6), whose register area starts
     * at the first unnamed register while its index counts the named ones too: moving
     * the area back by the index makes it the ABI's (area at a2). */
    l32i    a8, a1, 36              /* registers */
    l32i    a9, a1, 40              /* index */
    sub     a8, a8, a9
    s32i    a8, a1, 36
    mov     a10, a2
    .if \size_max
    movi    a11, -1
    mov     a12, a3
    addi    a13, a1, 32
    .elseif \named == 1
    addi    a11, a1, 32
    .else
    mov     a11, a3
    mov     a12, a4
    addi    a13, a1, 32
    .endif
    l32r    a8, .Lliteral_\name
    callx8  a8
    mov     a2, a10
    retw
    .size \name, . - \name
.endm

/* int printf(const char *format, ...) */
    variadic printf, 1, __neuron_vprintf
/* int sprintf(char *buffer, const char *format, ...) */
    variadic sprintf, 2, __neuron_vsnprintf, size_max=1
/* int snprintf(char *buffer, size_t size, const char *format, ...) */
    variadic snprintf, 3, __neuron_vsnprintf
/* int vprintf(const char *format, va_list arguments) */
    va_list_entry vprintf, 1, __neuron_vprintf
/* int vsprintf(char *buffer, const char *format, va_list arguments) */
    va_list_entry vsprintf, 2, __neuron_vsnprintf, size_max=1
/* int vsnprintf(char *buffer, size_t size, const char *format, va_list arguments) */
    va_list_entry vsnprintf, 3, __neuron_vsnprintf
