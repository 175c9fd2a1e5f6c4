/*
 * neuron_translate on the device: the lookup of runtime/translate.rs (`find` and
 * `translate`, which are its host stand-in and its Rust callers' version), written out
 * because the goal of 20 instructions for a hit leaves no room for the two or three
 * LLVM adds (a jump to a shared tail, a register move, a zero for the status).
 *
 * void *neuron_translate(uint64_t framework_addr)     a2 = low half, a3 = high half
 *
 * The table is __neuron_translate_tlb, this core's `Tlb` (translate.rs, which asserts
 * the offsets below): the address's field picks a bucket, the bucket's candidate
 * window is tested, and a hit returns addr + delta after keeping the window's address
 * as the outcome (neuron_translate_status reads a window address as status 0). A
 * failed candidate is a miss when the table's fallback says no other window can match
 * (FALLBACK_MISS); otherwise all five windows are tested in configuration order, and
 * with FALLBACK_SEARCH (disjoint windows) the hit becomes its bucket's candidate.
 *
 * A hit in the candidate is 20 instructions from entry to retw: 8 to find the
 * candidate (the table's address, the field's shift, SSR, the funnel shift SRC of the
 * two halves, EXTUI of the field, the slot's address, the candidate), 8 to test it
 * (low half, then high half: two loads, an AND and a branch each), 4 to add delta,
 * keep the outcome and return. A miss in the usual case (FALLBACK_MISS) is 18 or 22.
 *
 * Leaf function: it calls nothing. a4 = table, a5 = window, a8 = the bucket's slot less
 * TLB_CANDIDATES, a9 = fallback, a10 = the loop count.
 */

/* Numbers, not .set symbols (llvm-mc takes no symbol as an immediate operand), named
 * in the comments. The offsets, which translate.rs asserts:
 *   Tlb:    field_shift 0, fallback 4, candidates 8, windows 72, outcome 192
 *   Window: mask_low 0, ptr_low 4, mask_high 8, ptr_high 12, delta 16; 24 bytes
 * and FIELD_FLOOR 12, TRANSLATE_REGIONS 5, Fallback::Miss 0, Fallback::Search 1,
 * TranslateError::Miss's code 1. */

    .section .text.neuron_translate, "ax"
    .align 4
.Ltlb:
    .4byte  __neuron_translate_tlb

    .global neuron_translate
    .type neuron_translate, @function
    .align 4
neuron_translate:
    entry   a1, 16
    l32r    a4, .Ltlb
    l32i    a5, a4, 0       # field_shift
    ssr     a5
    /* Address bits field_shift..field_shift + 31, of which bits 12..15 are the field. */
    src     a5, a3, a2
    extui   a5, a5, 12, 4
    addx4   a8, a5, a4
    l32i    a5, a8, 8       # candidates[bucket]
    l32i    a6, a5, 0       # mask_low
    l32i    a7, a5, 4       # ptr_low
    and     a6, a6, a2
    bne     a6, a7, .Lcandidate_failed
    l32i    a6, a5, 8       # mask_high
    l32i    a7, a5, 12      # ptr_high
    and     a6, a6, a3
    bne     a6, a7, .Lcandidate_failed
.Lhit:
    l32i    a6, a5, 16      # delta
    add     a2, a2, a6
    s32i    a5, a4, 192     # outcome
    retw

.Lcandidate_failed:
    l32i    a9, a4, 4       # fallback
    beqz    a9, .Lmiss
    addi    a5, a4, 72      # windows
    movi    a10, 5
    /* A zero-overhead loop: 5 instructions a window whose low half differs, 9 else.
     * Leaving it by the branch to .Lfound is allowed (the ISA only loops back when the
     * instruction before .Lsearch_end completes with LCOUNT left). */
    loop    a10, .Lsearch_end
    l32i    a6, a5, 0       # mask_low
    l32i    a7, a5, 4       # ptr_low
    and     a6, a6, a2
    bne     a6, a7, .Lsearch_next
    l32i    a6, a5, 8       # mask_high
    l32i    a7, a5, 12      # ptr_high
    and     a6, a6, a3
    beq     a6, a7, .Lfound
.Lsearch_next:
    addi    a5, a5, 24
.Lsearch_end:
.Lmiss:
    movi    a6, 1
    s32i    a6, a4, 192     # outcome
    movi    a2, 0
    retw

.Lfound:
    /* Only with Fallback::Search (disjoint windows) does the hit become the candidate. */
    bnei    a9, 1, .Lhit
    s32i    a5, a8, 8       # candidates[bucket]
    j       .Lhit
    .size neuron_translate, . - neuron_translate
