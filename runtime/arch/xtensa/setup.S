/*
 * Setup's resolver on the device, for the common descriptor: what `Ready::refresh`
 * (runtime/wrapper_api/invocation.rs, setup's resolver on the host and the slow path
 * here) does for an HBM tensor or scalar of rank 1 or 2, written out because LLVM
 * spent about 129 instructions a descriptor on it, where this is about 90
 * (docs/PERFORMANCE.md, "Dispatch").
 *
 * uint32_t neuron_resolve_common(Invocation *inv, int slot, uint32_t num_args,
 *                                size_t out_start, size_t out_end)
 *
 * Resolves the output (slot -1) and then arguments slot.. num_args - 1, in order, while
 * each is the common case: 4-aligned, `check_common_words`' tests passed, with 1 to
 * 2^28 - 1 elements, all of whose bytes lie in the window of translate's last range
 * hit (`Tlb::range_last`, which `translate_range` tests first), and a scalar aligned
 * for its type (and not the output). For each it does what `Ready::refresh` does:
 * copies the descriptor into the runtime's copy, stores the `Ready` slot (data,
 * num_elem, arg type, dtype), an argument's `arg_types` byte, and its overlap bit with
 * the output's bytes (out_start..out_end when the call starts past the output). A
 * slot is resolved again even when it is unchanged: under the same windows that gives
 * the same resolution. It stops at the first slot it declines, for the Rust to resolve
 * and name, and returns:
 *   done:     the overlap bits of the arguments it resolved (bits 0..9);
 *   stopped:  those, bit 10 when it wrote the stopped slot's copy (whose reuse test
 *             is then void), bit 31, and the stopped slot + 1 in bits 16..30 (0: the
 *             output).
 *
 * Leaf function: it calls nothing. a2 = inv, a3 = slot, a4 = num_args, a5 = the window,
 * a7 = the overlap bits, a8 = the incoming descriptor, a9 = the runtime's copy,
 * a6 and a10..a15 scratch; the output's range is kept at a1 + 0 and a1 + 4.
 */

/* The offsets, which invocation.rs and translate.rs assert:
 *   Invocation: dst_resolved 20 (slot -1 of ready), ready 32 (Ready: data 0,
 *     num_elem 4, arg_type 8, dtype 9; 12 bytes), args 152, result 160,
 *     dst_desc 200, parser.extractor.args 256, parser.extractor.arg_types 736
 *   ArgTensor: header word 0 (dtype, arg type, shape type, rank), storage kind word 4,
 *     shape 8..24, HBM addr 24/28, num_elem 32, reserved 36, reserved1 40/44
 *   Tlb: range_last 196; Window: mask_low 0, ptr_low 4, mask_high 8, ptr_high 12,
 *     delta 16, last_offset 20
 * and the tables __neuron_size_log2 (by raw dtype) and __neuron_scalar_dtypes (by raw
 * arg type), which descriptor.rs exports. */

    .section .text.neuron_resolve_common, "ax"
    .align 4
.Ltlb:
    .4byte  __neuron_translate_tlb
.Lsize_log2:
    .4byte  __neuron_size_log2
.Lscalar_dtypes:
    .4byte  __neuron_scalar_dtypes
.Lheader_bias:
    .4byte  0x01000101
.Lheader_mask:
    .4byte  0xF8FFFCF8

    .global neuron_resolve_common
    .type neuron_resolve_common, @function
    .align 4
neuron_resolve_common:
    entry   a1, 32
    s32i.n  a5, a1, 0       # out_start
    s32i.n  a6, a1, 4       # out_end
    movi.n  a7, 0
    l32r    a5, .Ltlb
    l32i    a5, a5, 196     # range_last
    l32i    a8, a2, 152     # args
    l32i    a9, a2, 160     # result
    /* Misaligned descriptors are the Rust's. */
    or      a10, a8, a9
    extui   a10, a10, 0, 2
    bnez    a10, .Lstop
    bgez    a3, .Lfrom_argument
    /* The output: result into dst_desc. */
    mov.n   a8, a9
    addmi   a9, a2, 256
    addi    a9, a9, -56     # dst_desc
    j       .Lslot

.Lfrom_argument:
    addx2   a10, a3, a3
    slli    a10, a10, 4     # 48 * slot
    add.n   a8, a8, a10
    add.n   a9, a2, a10
    addmi   a9, a9, 256     # parser.extractor.args[slot]

.Lslot:
    blt     a3, a4, .Lcopy
    mov.n   a2, a7          # all done: the overlap bits
    retw.n
    /* The stops sit here and at .Lstop_late, where nothing falls through, within a
     * branch's reach. */
.Lstop:
    /* ((slot + 1) << 16) | 1 << 31 | what a7 holds: (slot + 1 - 0x8000) << 16. */
    addi.n  a10, a3, 1
    addmi   a10, a10, -32768
    slli    a10, a10, 16
    or      a2, a7, a10
    retw.n
.Lstop_copied:
    movi    a10, 1024
    or      a7, a7, a10
    j       .Lstop
.Lrank2:
    /* Rank 2: num_elem = dim 0 * dim 1; none, or 2^28 or more (whose byte length may
     * not fit), are the Rust's. */
    bnei    a11, 2, .Lstop_copied
    mull    a13, a13, a12
    addi.n  a11, a13, -1
    extui   a11, a11, 28, 4
    bnez    a11, .Lstop_copied
    j       .Lcount

.Lcopy:
    /* The 12 words, each loaded once: a10 header, a11 storage kind, a12 dims 0 and 1,
     * a13 the words that must be zero, a14/a15 the address, a6 num_elem. */
    l32i.n  a10, a8, 0
    s32i.n  a10, a9, 0
    l32i.n  a11, a8, 4
    s32i.n  a11, a9, 4
    l32i.n  a12, a8, 8
    s32i.n  a12, a9, 8
    l32i.n  a13, a8, 12
    s32i.n  a13, a9, 12
    l32i.n  a14, a8, 16
    s32i.n  a14, a9, 16
    l32i.n  a15, a8, 20
    s32i.n  a15, a9, 20
    or      a13, a13, a14
    or      a13, a13, a15
    l32i.n  a14, a8, 36
    s32i.n  a14, a9, 36
    l32i.n  a15, a8, 40
    s32i.n  a15, a9, 40
    or      a13, a13, a14
    l32i.n  a14, a8, 44
    s32i.n  a14, a9, 44
    or      a13, a13, a15
    or      a13, a13, a14
    l32i.n  a14, a8, 24
    s32i.n  a14, a9, 24
    l32i.n  a15, a8, 28
    s32i.n  a15, a9, 28
    l32i.n  a6, a8, 32
    s32i.n  a6, a9, 32
    /* Storage kind HBM with its reserved bytes zero; dims 2..7 and the reserved
     * words zero. */
    bnei    a11, 1, .Lstop_copied
    bnez    a13, .Lstop_copied
    /* dtype 1..=8, arg type 1..=4, inline shape, rank 1..=8 (check_common_words). */
    l32r    a11, .Lheader_bias
    sub     a11, a10, a11
    l32r    a13, .Lheader_mask
    and     a11, a11, a13
    bnez    a11, .Lstop_copied
    /* Rank 1: dim 1 unused (zero), num_elem = dim 0, and not 0 (the Rust's). */
    extui   a11, a10, 24, 8
    extui   a13, a12, 0, 16
    extui   a12, a12, 16, 16
    bnei    a11, 1, .Lrank2
    bnez    a12, .Lstop_copied
    beqz    a13, .Lstop_copied
.Lcount:
    bne     a13, a6, .Lstop_late
    extui   a11, a10, 8, 8  # arg type
    extui   a12, a10, 0, 8  # dtype
    beqi    a11, 1, .Ltype_ok
    /* A scalar: one element of its arg type's dtype, and not the output. */
    bnei    a6, 1, .Lstop_late
    bltz    a3, .Lstop_copied
    l32r    a10, .Lscalar_dtypes
    add.n   a10, a10, a11
    l8ui    a10, a10, 0
    bne     a10, a12, .Lstop_late
.Ltype_ok:
    /* The Ready slot: inv + 12 * slot + 32 (slot -1 is dst_resolved). */
    addx2   a13, a3, a3
    addx4   a13, a13, a2
    s32i.n  a6, a13, 36     # num_elem
    s8i     a11, a13, 40    # arg_type
    s8i     a12, a13, 41    # dtype
    l32r    a10, .Lsize_log2
    add.n   a10, a10, a12
    l8ui    a10, a10, 0
    ssl     a10
    sll     a6, a6          # the byte length
    /* Translate: all bytes inside range_last's window (translate_range). */
    l32i.n  a12, a5, 8      # mask_high
    and     a15, a15, a12
    l32i.n  a12, a5, 12     # ptr_high
    bne     a15, a12, .Lstop_late
    l32i.n  a12, a5, 0      # mask_low
    and     a15, a14, a12
    l32i.n  a12, a5, 4      # ptr_low
    bne     a15, a12, .Lstop_late
    l32i.n  a12, a5, 20     # last_offset
    and     a15, a14, a12
    sub     a12, a12, a15   # bytes in the window after the first
    addi.n  a15, a6, -1
    bltu    a12, a15, .Lstop_late
    l32i.n  a12, a5, 16     # delta
    add.n   a14, a14, a12   # data
    s32i.n  a14, a13, 32
    bnei    a11, 1, .Lscalar
    add.n   a6, a14, a6     # the tensor's end
    bltz    a3, .Loutput_done
    /* An argument overlapping the output: start < out_end && out_start < end. */
    l32i.n  a12, a1, 4
    bgeu    a14, a12, .Lnext
    l32i.n  a12, a1, 0
    bgeu    a12, a6, .Lnext
    ssl     a3
    movi.n  a12, 1
    sll     a12, a12
    or      a7, a7, a12
    j       .Lnext
.Lstop_late:
    movi    a10, 1024
    or      a7, a7, a10
    j       .Lstop

.Lscalar:
    /* Aligned for its type: the length less one is its alignment mask. */
    and     a12, a14, a15
    bnez    a12, .Lstop_late
.Lnext:
    add.n   a12, a2, a3
    addmi   a12, a12, 512
    s8i     a11, a12, 224   # parser.extractor.arg_types[slot]
    addi.n  a3, a3, 1
    addi    a8, a8, 48
    addi    a9, a9, 48
    j       .Lslot

.Loutput_done:
    s32i.n  a14, a1, 0
    s32i.n  a6, a1, 4
    movi.n  a3, 0
    l32i    a8, a2, 152
    addmi   a9, a2, 256
    j       .Lslot
    .size neuron_resolve_common, . - neuron_resolve_common
