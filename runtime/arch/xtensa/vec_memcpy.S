/*
 * vec_memcpy: the VEC_MEMCPY backend of neuron_memcpy (runtime/data_transfer/vector.rs,
 * docs/abi/data_transfer.md).
 *
 * void *vec_memcpy(void *dst, const void *src, size_t n)     a2 = dst, a3 = src, a4 = n
 *
 * memcpy's signature and result (dst), like every backend of the dispatch table.
 *
 * The widest loads and stores this core has are the 32-bit l32i / s32i (the target's
 * ISA options have no HiFi or other wide vector unit), so "vector" here means: whole
 * aligned words, in zero-overhead `loop`s unrolled so the loop costs two pointer
 * increments per iteration and nothing else.
 *
 *   1. n < 16: byte loop (4 instructions per byte).
 *   2. Copy 0..3 bytes so that dst is word-aligned.
 *   3. src word-aligned too: 128-byte iterations (32 x l32i/s32i in groups of 8, then
 *      two pointer increments: 66 instructions per 128 bytes, 0.516 per byte), then
 *      16-byte iterations, then single words (skipped when nothing is left).
 *   4. src not word-aligned (k = src & 3): read the aligned words around src and build
 *      each destination word from two of them with a funnel shift: SSA8L sets
 *      SAR = 8k once, and `src out, next, cur` = (next:cur) >> 8k. 64-byte iterations
 *      (16 x l32i/src/s32i, two addi: 0.78 instructions per byte), then 16-byte
 *      iterations, then single words. The 16 words rotate through the 8 registers
 *      a6..a13: word j is loaded into R[(j+1) % 8] and shifted in place into R[j % 8],
 *      so the last word loaded (the carry into the next iteration) is back in a6 and no
 *      `mov` is needed.
 *   5. The 0..3 tail bytes.
 *
 * A `loop` body is limited to 256 bytes, which is what bounds the unrolling (198 and
 * 150 bytes here). Step 4 reads whole aligned source words: the first and the last may
 * hold bytes just outside [src, src + n), but every word read holds at least one
 * source byte, so no read crosses into a word (or page, or region) the copy does not
 * already touch. Every store is inside [dst, dst + n).
 *
 * The ranges must not overlap (neuron_memcpy sends overlapping copies to memmove).
 * A leaf function: it calls nothing, so the loop registers and a0..a15 are its own.
 */

/* Eight aligned words from a3 + off to a2 + off: eight loads, then eight stores. */
    .macro copy_8_words off
    l32i    a6, a3, \off+0
    l32i    a7, a3, \off+4
    l32i    a8, a3, \off+8
    l32i    a9, a3, \off+12
    l32i    a10, a3, \off+16
    l32i    a11, a3, \off+20
    l32i    a12, a3, \off+24
    l32i    a13, a3, \off+28
    s32i    a6, a2, \off+0
    s32i    a7, a2, \off+4
    s32i    a8, a2, \off+8
    s32i    a9, a2, \off+12
    s32i    a10, a2, \off+16
    s32i    a11, a2, \off+20
    s32i    a12, a2, \off+24
    s32i    a13, a2, \off+28
    .endm

/*
 * Four destination words j .. j+3 at a2 + off from the source words after `cur`:
 * loads the next four aligned words into n0..n3 (from a3 + off + 4), funnel-shifts
 * each pair in place, stores. `cur` holds word j's low source word on entry; n3 holds
 * the carry for the next group on exit.
 */
    .macro shift_4_words off, cur, n0, n1, n2, n3
    l32i    \n0, a3, \off+4
    l32i    \n1, a3, \off+8
    l32i    \n2, a3, \off+12
    l32i    \n3, a3, \off+16
    src     \cur, \n0, \cur
    src     \n0, \n1, \n0
    src     \n1, \n2, \n1
    src     \n2, \n3, \n2
    s32i    \cur, a2, \off+0
    s32i    \n0, a2, \off+4
    s32i    \n1, a2, \off+8
    s32i    \n2, a2, \off+12
    .endm

    .section .text.vec_memcpy, "ax"
    .global vec_memcpy
    .type vec_memcpy, @function
    .align 4
vec_memcpy:
    entry   a1, 16
    /* a15: the result (llvm-mc rejects a comment after a register operand). */
    mov     a15, a2
    bgeui   a4, 16, .Lwords
    /* Also the 0..3 tail bytes of a long copy (a branch back here: bgeui reaches
     * only 127 bytes forward). */
.Lbytes:
    loopnez a4, .Lbytes_end
    l8ui    a6, a3, 0
    addi    a3, a3, 1
    s8i     a6, a2, 0
    addi    a2, a2, 1
.Lbytes_end:
.Ldone:
    mov     a2, a15
    retw

.Lwords:
    /* Align dst: copy (-dst) & 3 bytes. */
    neg     a5, a2
    extui   a5, a5, 0, 2
    sub     a4, a4, a5
    loopnez a5, .Lhead_end
    l8ui    a6, a3, 0
    addi    a3, a3, 1
    s8i     a6, a2, 0
    addi    a2, a2, 1
.Lhead_end:
    extui   a14, a3, 0, 2           /* k: src's offset in its word */
    bnez    a14, .Lshifted

    /* dst and src word-aligned. (addi reaches only 127: the step is in a14.) */
    movi    a14, 128
    srli    a5, a4, 7
    loopnez a5, .Laligned_128_end
    copy_8_words 0
    copy_8_words 32
    copy_8_words 64
    copy_8_words 96
    add     a3, a3, a14
    add     a2, a2, a14
.Laligned_128_end:
    /* Nothing left (a multiple of 128 bytes): skip the tails. */
    extui   a5, a4, 0, 7
    beqz    a5, .Ldone
    extui   a5, a4, 4, 3            /* 16-byte groups left: 0..7 */
    loopnez a5, .Laligned_16_end
    l32i    a6, a3, 0
    l32i    a7, a3, 4
    l32i    a8, a3, 8
    l32i    a9, a3, 12
    s32i    a6, a2, 0
    s32i    a7, a2, 4
    s32i    a8, a2, 8
    s32i    a9, a2, 12
    addi    a3, a3, 16
    addi    a2, a2, 16
.Laligned_16_end:
    extui   a5, a4, 2, 2            /* words left: 0..3 */
    loopnez a5, .Laligned_4_end
    l32i    a6, a3, 0
    addi    a3, a3, 4
    s32i    a6, a2, 0
    addi    a2, a2, 4
.Laligned_4_end:
    extui   a4, a4, 0, 2            /* bytes left: 0..3 */
    j       .Lbytes

    /* dst word-aligned, src at offset k (1..3) in its word; at least 13 bytes left. */
.Lshifted:
    /* SAR = 8k; a3: the aligned word holding the next source byte. */
    ssa8l   a3
    sub     a3, a3, a14
    l32i    a6, a3, 0               /* the carry: its upper 4 - k bytes are source bytes */
    srli    a5, a4, 6
    loopnez a5, .Lshifted_64_end
    shift_4_words 0,  a6,  a7,  a8,  a9,  a10
    shift_4_words 16, a10, a11, a12, a13, a6
    shift_4_words 32, a6,  a7,  a8,  a9,  a10
    shift_4_words 48, a10, a11, a12, a13, a6
    addi    a3, a3, 64
    addi    a2, a2, 64
.Lshifted_64_end:
    extui   a5, a4, 4, 2            /* 16-byte groups left: 0..3 */
    loopnez a5, .Lshifted_16_end
    shift_4_words 0, a6, a7, a8, a9, a10
    mov     a6, a10
    addi    a3, a3, 16
    addi    a2, a2, 16
.Lshifted_16_end:
    extui   a5, a4, 2, 2            /* words left: 0..3 */
    loopnez a5, .Lshifted_4_end
    l32i    a7, a3, 4
    src     a6, a7, a6
    s32i    a6, a2, 0
    mov     a6, a7
    addi    a3, a3, 4
    addi    a2, a2, 4
.Lshifted_4_end:
    /* Back to the byte address of the next source byte. */
    add     a3, a3, a14
    extui   a4, a4, 0, 2            /* bytes left: 0..3 */
    j       .Lbytes
    .size vec_memcpy, . - vec_memcpy
