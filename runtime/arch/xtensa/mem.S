/*
 * The C library's memcpy, memmove and memset on the device (runtime/start_exit/mem.rs
 * holds the host's Rust stand-ins and memcmp), and vec_memcpy, the VEC_MEMCPY backend
 * of neuron_memcpy (runtime/data_transfer/vector.rs, docs/abi/data_transfer.md), which
 * is memcpy under a second name.
 *
 * void *memcpy(void *dst, const void *src, size_t n)      a2 = dst, a3 = src, a4 = n
 * void *memmove(void *dst, const void *src, size_t n)
 * void *memset(void *dst, int c, size_t n)                 a3 = c
 *
 * Each returns dst, which stays in a2; a5 is the destination cursor. The widest loads
 * and stores this core has are the 32-bit l32i / s32i, so the bulk of each operation is
 * whole aligned words in zero-overhead `loop`s, unrolled so that a loop costs only its
 * pointer increments. A `loop` body is limited to 256 bytes, which is what bounds the
 * unrolling.
 *
 * memcpy:
 *   1. dst and src word-aligned: 128-byte iterations (32 x l32i/s32i in groups of 8,
 *      then two pointer increments: 66 instructions per 128 bytes, 0.516 per byte),
 *      then 16-byte iterations, single words and the 0..3 tail bytes (all skipped when
 *      a multiple of 128 bytes was copied).
 *   2. Otherwise, fewer than 16 bytes: byte loop (4 instructions per byte).
 *   3. Otherwise copy 0..3 bytes so that dst is word-aligned; if src is then aligned
 *      too, continue at 1.
 *   4. src at offset k (1..3) in its word: read the aligned words around src and build
 *      each destination word from two of them with a funnel shift: SSA8L sets
 *      SAR = 8k once, and `src out, next, cur` = (next:cur) >> 8k. 64-byte iterations
 *      (16 x l32i/src/s32i, two addi: 0.78 instructions per byte), then 16-byte
 *      iterations, single words and the tail bytes. The 16 words rotate through the 8
 *      registers a6..a13: word j is loaded into R[(j+1) % 8] and shifted in place into
 *      R[j % 8], so the carry into the next iteration is back in a6 and no `mov` is
 *      needed.
 *   Step 4 reads whole aligned source words: the first and the last may hold bytes just
 *   outside [src, src + n), but every word read holds at least one source byte, so no
 *   read crosses into a word (or page, or region) the copy does not already touch.
 *   Every store is inside [dst, dst + n).
 *
 *   memcpy also copies correctly when the ranges overlap with dst below src, which is
 *   what lets memmove use it: every group of loads comes before its stores, the loads
 *   run ahead of the stores, and a store to dst + i overwrites only source bytes below
 *   src + i, all of which were already read.
 *
 * memmove: when dst - src (unsigned) >= n, a forward copy never overwrites a source
 *   byte before reading it (dst below src, or no overlap): memcpy. Otherwise the same
 *   steps from the top down: the ends aligned instead of the starts, 128-byte aligned
 *   and 64-byte funnel-shifted iterations with the pointers decremented first and the
 *   groups in descending order, so a store to dst + i overwrites only source bytes
 *   above src + i, all of which were already read.
 *
 * memset: the byte replicated into a word (times 0x01010101), dst aligned by 0..3
 *   single bytes, then 256-byte iterations of 64 s32i and one addmi (65 per 256 bytes,
 *   0.254 per byte), 16-byte iterations, single words and the tail bytes.
 *
 * Leaf functions: they call nothing, so the loop registers and a0..a15 are their own.
 */

/* Eight aligned words from a3 + off to a5 + off: eight loads, then eight stores. */
    .macro copy_8_words off
    l32i    a6, a3, \off+0
    l32i    a7, a3, \off+4
    l32i    a8, a3, \off+8
    l32i    a9, a3, \off+12
    l32i    a10, a3, \off+16
    l32i    a11, a3, \off+20
    l32i    a12, a3, \off+24
    l32i    a13, a3, \off+28
    s32i    a6, a5, \off+0
    s32i    a7, a5, \off+4
    s32i    a8, a5, \off+8
    s32i    a9, a5, \off+12
    s32i    a10, a5, \off+16
    s32i    a11, a5, \off+20
    s32i    a12, a5, \off+24
    s32i    a13, a5, \off+28
    .endm

/* Four aligned words from a3 + off to a5 + off. */
    .macro copy_4_words off
    l32i    a6, a3, \off+0
    l32i    a7, a3, \off+4
    l32i    a8, a3, \off+8
    l32i    a9, a3, \off+12
    s32i    a6, a5, \off+0
    s32i    a7, a5, \off+4
    s32i    a8, a5, \off+8
    s32i    a9, a5, \off+12
    .endm

/*
 * Four destination words j .. j+3 at a5 + off from the source words after `cur`:
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
    s32i    \cur, a5, \off+0
    s32i    \n0, a5, \off+4
    s32i    \n1, a5, \off+8
    s32i    \n2, a5, \off+12
    .endm

/*
 * The same from the top down: destination words at a5 + off + 12 .. a5 + off from the
 * source words below `cur` (which holds the high source word of a5 + off + 12, the
 * aligned word at a3 + off + 16): loads the four aligned words at a3 + off + 12 ..
 * a3 + off into n0..n3, shifts, stores. n3 holds the carry on exit.
 */
    .macro shift_4_words_down off, cur, n0, n1, n2, n3
    l32i    \n0, a3, \off+12
    l32i    \n1, a3, \off+8
    l32i    \n2, a3, \off+4
    l32i    \n3, a3, \off+0
    src     \cur, \cur, \n0
    src     \n0, \n0, \n1
    src     \n1, \n1, \n2
    src     \n2, \n2, \n3
    s32i    \cur, a5, \off+12
    s32i    \n0, a5, \off+8
    s32i    \n1, a5, \off+4
    s32i    \n2, a5, \off+0
    .endm

    .section .text.memcpy, "ax"
    .global memcpy
    .type memcpy, @function
    .global vec_memcpy
    .type vec_memcpy, @function

    .align 4
memcpy:
vec_memcpy:
    entry   a1, 16
.Lcopy:
    mov     a5, a2
    or      a6, a2, a3
    extui   a6, a6, 0, 2
    bnez    a6, .Lcopy_unaligned

    /* dst and src word-aligned. (addi reaches only 127: the step is in a14.) */
.Lcopy_aligned:
    movi    a14, 128
    srli    a6, a4, 7
    loopnez a6, .Lcopy_128_end
    copy_8_words 0
    copy_8_words 32
    copy_8_words 64
    copy_8_words 96
    add     a3, a3, a14
    add     a5, a5, a14
.Lcopy_128_end:
    /* Nothing left (a multiple of 128 bytes): skip the tails. */
    extui   a6, a4, 0, 7
    beqz    a6, .Lcopy_done
    extui   a6, a4, 4, 3            /* 16-byte groups left: 0..7 */
    loopnez a6, .Lcopy_16_end
    copy_4_words 0
    addi    a3, a3, 16
    addi    a5, a5, 16
.Lcopy_16_end:
    extui   a6, a4, 2, 2            /* words left: 0..3 */
    loopnez a6, .Lcopy_4_end
    l32i    a6, a3, 0
    addi    a3, a3, 4
    s32i    a6, a5, 0
    addi    a5, a5, 4
.Lcopy_4_end:
    extui   a4, a4, 0, 2            /* bytes left: 0..3 */
.Lcopy_bytes:
    loopnez a4, .Lcopy_bytes_end
    l8ui    a6, a3, 0
    addi    a3, a3, 1
    s8i     a6, a5, 0
    addi    a5, a5, 1
.Lcopy_bytes_end:
.Lcopy_done:
    retw

.Lcopy_unaligned:
    bltui   a4, 16, .Lcopy_bytes
    /* Align dst: copy (-dst) & 3 bytes. */
    neg     a6, a5
    extui   a6, a6, 0, 2
    sub     a4, a4, a6
    loopnez a6, .Lcopy_head_end
    l8ui    a7, a3, 0
    addi    a3, a3, 1
    s8i     a7, a5, 0
    addi    a5, a5, 1
.Lcopy_head_end:
    extui   a14, a3, 0, 2           /* k: src's offset in its word */
    beqz    a14, .Lcopy_aligned

    /* dst word-aligned, src at offset k (1..3) in its word; at least 13 bytes left. */
    /* SAR = 8k; a3: the aligned word holding the next source byte. */
    ssa8l   a3
    sub     a3, a3, a14
    l32i    a6, a3, 0               /* the carry: its upper 4 - k bytes are source bytes */
    srli    a15, a4, 6
    loopnez a15, .Lshift_64_end
    shift_4_words 0,  a6,  a7,  a8,  a9,  a10
    shift_4_words 16, a10, a11, a12, a13, a6
    shift_4_words 32, a6,  a7,  a8,  a9,  a10
    shift_4_words 48, a10, a11, a12, a13, a6
    addi    a3, a3, 64
    addi    a5, a5, 64
.Lshift_64_end:
    extui   a15, a4, 0, 6           /* nothing left: done */
    beqz    a15, .Lcopy_done
    extui   a15, a4, 4, 2           /* 16-byte groups left: 0..3 */
    loopnez a15, .Lshift_16_end
    shift_4_words 0, a6, a7, a8, a9, a10
    mov     a6, a10
    addi    a3, a3, 16
    addi    a5, a5, 16
.Lshift_16_end:
    extui   a15, a4, 2, 2           /* words left: 0..3 */
    loopnez a15, .Lshift_4_end
    l32i    a7, a3, 4
    src     a6, a7, a6
    s32i    a6, a5, 0
    mov     a6, a7
    addi    a3, a3, 4
    addi    a5, a5, 4
.Lshift_4_end:
    /* Back to the byte address of the next source byte. */
    add     a3, a3, a14
    extui   a4, a4, 0, 2            /* bytes left: 0..3 */
    j       .Lcopy_bytes
    .size memcpy, . - memcpy
    .size vec_memcpy, . - vec_memcpy

    /*
     * memmove in a section of its own, so that an image that never calls it does not
     * link it. A forward move jumps into memcpy's body (one instruction more than
     * falling into it: `bltu` not taken, then `j`); a move down takes the branch.
     */
    .section .text.memmove, "ax"
    .global memmove
    .type memmove, @function

    .align 4
memmove:
    entry   a1, 16
    sub     a6, a2, a3
    bltu    a6, a4, .Lmove_down
    j       .Lcopy

    /* memmove with src < dst < src + n: from the top down. a5, a3: the ends. */
.Lmove_down:
    add     a5, a2, a4
    add     a3, a3, a4
    /* Fewer than 16 bytes: bytes. (bltui reaches only 127 bytes forward.) */
    addi    a6, a4, -16
    bltz    a6, .Lmove_bytes
    /* Align dst's end: copy (dst + n) & 3 bytes. */
    extui   a6, a5, 0, 2
    sub     a4, a4, a6
    loopnez a6, .Lmove_head_end
    addi    a3, a3, -1
    l8ui    a7, a3, 0
    addi    a5, a5, -1
    s8i     a7, a5, 0
.Lmove_head_end:
    extui   a14, a3, 0, 2           /* k: src's end's offset in its word */
    bnez    a14, .Lmove_shifted

    /* Both ends word-aligned. */
    srli    a6, a4, 7
    loopnez a6, .Lmove_128_end
    addi    a3, a3, -128
    addi    a5, a5, -128
    copy_8_words 96
    copy_8_words 64
    copy_8_words 32
    copy_8_words 0
.Lmove_128_end:
    extui   a6, a4, 0, 7
    beqz    a6, .Lmove_done
    extui   a6, a4, 4, 3            /* 16-byte groups left: 0..7 */
    loopnez a6, .Lmove_16_end
    addi    a3, a3, -16
    addi    a5, a5, -16
    copy_4_words 0
.Lmove_16_end:
    extui   a6, a4, 2, 2            /* words left: 0..3 */
    loopnez a6, .Lmove_4_end
    addi    a3, a3, -4
    l32i    a6, a3, 0
    addi    a5, a5, -4
    s32i    a6, a5, 0
.Lmove_4_end:
    extui   a4, a4, 0, 2            /* bytes left: 0..3 */
.Lmove_bytes:
    loopnez a4, .Lmove_bytes_end
    addi    a3, a3, -1
    l8ui    a6, a3, 0
    addi    a5, a5, -1
    s8i     a6, a5, 0
.Lmove_bytes_end:
.Lmove_done:
    retw

    /* dst's end word-aligned, src's end at offset k (1..3); at least 13 bytes left. */
.Lmove_shifted:
    /* SAR = 8k; a3: the aligned word holding the last k source bytes (the carry). */
    ssa8l   a3
    sub     a3, a3, a14
    l32i    a6, a3, 0
    srli    a15, a4, 6
    loopnez a15, .Lmove_shift_64_end
    addi    a3, a3, -64
    addi    a5, a5, -64
    shift_4_words_down 48, a6,  a7,  a8,  a9,  a10
    shift_4_words_down 32, a10, a11, a12, a13, a6
    shift_4_words_down 16, a6,  a7,  a8,  a9,  a10
    shift_4_words_down 0,  a10, a11, a12, a13, a6
.Lmove_shift_64_end:
    extui   a15, a4, 0, 6
    beqz    a15, .Lmove_done
    extui   a15, a4, 4, 2           /* 16-byte groups left: 0..3 */
    loopnez a15, .Lmove_shift_16_end
    addi    a3, a3, -16
    addi    a5, a5, -16
    shift_4_words_down 0, a6, a7, a8, a9, a10
    mov     a6, a10
.Lmove_shift_16_end:
    extui   a15, a4, 2, 2           /* words left: 0..3 */
    loopnez a15, .Lmove_shift_4_end
    addi    a3, a3, -4
    l32i    a7, a3, 0
    src     a6, a6, a7
    addi    a5, a5, -4
    s32i    a6, a5, 0
    mov     a6, a7
.Lmove_shift_4_end:
    /* Back to the byte address just past the next source byte. */
    add     a3, a3, a14
    extui   a4, a4, 0, 2            /* bytes left: 0..3 */
    j       .Lmove_bytes
    .size memmove, . - memmove

    .section .text.memset, "ax"
    .align 4
.Lbyte_to_word:
    .long   0x01010101
    /* Fewer than 16 bytes: a byte loop. Here, before memset, because bltui reaches only
     * 127 bytes forward but also backward. */
.Lset_small:
    loopnez a4, .Lset_small_end
    s8i     a3, a5, 0
    addi    a5, a5, 1
.Lset_small_end:
    retw

    .global memset
    .type memset, @function
    .align 4
memset:
    entry   a1, 16
    mov     a5, a2
    /* a3: (unsigned char)c in every byte of the word. */
    extui   a3, a3, 0, 8
    l32r    a6, .Lbyte_to_word
    mull    a3, a3, a6
    bltui   a4, 16, .Lset_small
    extui   a6, a5, 0, 2
    bnez    a6, .Lset_align
.Lset_aligned:
    srli    a6, a4, 8
    loopnez a6, .Lset_256_end
    .irp off, 0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240
    s32i    a3, a5, \off+0
    s32i    a3, a5, \off+4
    s32i    a3, a5, \off+8
    s32i    a3, a5, \off+12
    .endr
    addmi   a5, a5, 256
.Lset_256_end:
    /* Nothing left (a multiple of 256 bytes): skip the tails. */
    extui   a6, a4, 0, 8
    beqz    a6, .Lset_done
    extui   a6, a4, 4, 4            /* 16-byte groups left: 0..15 */
    loopnez a6, .Lset_16_end
    s32i    a3, a5, 0
    s32i    a3, a5, 4
    s32i    a3, a5, 8
    s32i    a3, a5, 12
    addi    a5, a5, 16
.Lset_16_end:
    extui   a6, a4, 2, 2            /* words left: 0..3 */
    loopnez a6, .Lset_4_end
    s32i    a3, a5, 0
    addi    a5, a5, 4
.Lset_4_end:
    extui   a4, a4, 0, 2            /* bytes left: 0..3 */
.Lset_bytes:
    loopnez a4, .Lset_bytes_end
    s8i     a3, a5, 0
    addi    a5, a5, 1
.Lset_bytes_end:
.Lset_done:
    retw

    /* Align dst: write (-dst) & 3 bytes (at least 13 are left after them). */
.Lset_align:
    neg     a6, a5
    extui   a6, a6, 0, 2
    sub     a4, a4, a6
    loopnez a6, .Lset_head_end
    s8i     a3, a5, 0
    addi    a5, a5, 1
.Lset_head_end:
    j       .Lset_aligned
    .size memset, . - memset
