/*
 * float __divsf3(float a, float b): IEEE single-precision division, correctly rounded
 * (to nearest, ties to even), on the core's FPU.
 *
 * LLVM 22 has no pattern for float division on Xtensa, so every f32 `/` of Rust, C and
 * C++ code is a call to __divsf3; compiler_builtins' (a weak symbol) does it in integer
 * arithmetic, about 210 instructions. The floating-point coprocessor option has no
 * single divide instruction but the steps of one (the Xtensa ISA reference,
 * "Floating-Point Coprocessor Option": DIV0.S, NEXP01.S, MKDADJ.S, MADDN.S, ADDEXP.S,
 * ADDEXPM.S, DIVN.S). This is their sequence as Espressif's ESP32 FPU test runs it
 * (esp-idf, components/esp32/test/test_fp.c, `divsf`): an approximate reciprocal of bms
 * mantissa (DIV0.S) refined by Newton-Raphson steps in fused multiply-adds on the
 * exponent-free mantissas (MADDN.S on NEXP01.S's), the exponents folded back in
 * (MKDADJ.S, ADDEXP*.S), and DIVN.S's last fused step, which rounds once and gives
 * IEEE's result for zeros, infinities, NaNs and subnormals alike. qemu/tests/libm.rs
 * holds it to the host's division, bit for bit, on
 * 20,000 operand pairs, special values among them.
 *
 * Floats travel in address registers (a2, a3; the result in a2). The FPU registers
 * are caller-saved in the windowed ABI, so f0..f9 are this function's own. (The
 * comments stand on lines of their own: llvm-mc 22 rejects one after an FPU register
 * operand.) am and bm: the mantissas of a and b, exponents cleared.
 */

    .section .text.__divsf3, "ax"
    .global __divsf3
    .type __divsf3, @function
    .align 4
__divsf3:
    entry    a1, 16
    /* a */
    wfr      f0, a2
    /* b */
    wfr      f1, a3
    /* y0 ~ 1/mantissa(b) */
    div0.s   f3, f1
    /* -mantissa(b), exponent cleared */
    nexp01.s f4, f1
    const.s  f5, 1
    /* e0 = 1 - bm*y0 */
    maddn.s  f5, f4, f3
    mov.s    f6, f3
    mov.s    f7, f1
    /* -mantissa(a) */
    nexp01.s f8, f0
    /* y1 = y0 + e0*y0 */
    maddn.s  f6, f5, f3
    const.s  f5, 1
    const.s  f2, 0
    /* am */
    neg.s    f9, f8
    /* e1 = 1 - bm*y1 */
    maddn.s  f5, f4, f6
    /* q0 = am*y0 */
    maddn.s  f2, f9, f3
    /* the exponent difference, for the end */
    mkdadj.s f7, f0
    /* y2 */
    maddn.s  f6, f5, f6
    /* r0 = am - bm*q0 */
    maddn.s  f9, f4, f2
    const.s  f5, 1
    /* e2 */
    maddn.s  f5, f4, f6
    /* q1 = q0 + r0*y2 */
    maddn.s  f2, f9, f6
    neg.s    f9, f8
    /* y3 */
    maddn.s  f6, f5, f6
    /* r1 = am - bm*q1 */
    maddn.s  f9, f4, f2
    /* the exponents back into q1 */
    addexpm.s f2, f7
    /* and into y3 */
    addexp.s f6, f7
    /* q = q1 + r1*y3, rounded once */
    divn.s   f2, f9, f6
    rfr      a2, f2
    retw
    .size __divsf3, . - __divsf3
