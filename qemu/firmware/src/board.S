/*
 * The QEMU board's two special instructions, neither of which LLVM's assembler knows,
 * so both are spelled as their encodings.
 */

/*
 * Semihosting: `simcall` with the call number in a2 and arguments in a3..a5; the
 * result comes back in a2 (errno in a3).
 *
 * i32 semihosting_call(u32 call, u32 arg0, u32 arg1, u32 arg2)
 */
    .section .text.semihosting_call, "ax"
    .global semihosting_call
    .type semihosting_call, @function
    .align 4
semihosting_call:
    entry   a1, 16
    .byte   0x00, 0x51, 0x00    /* simcall */
    retw

/*
 * Write an external register (ERI) of this core: the lx60 board's MX interrupt
 * distributor, whose MPSCORE register (ERI 0x200) holds the cores' RunStall bits.
 *
 * void board_write_eri(u32 address, u32 value)
 */
    .section .text.board_write_eri, "ax"
    .global board_write_eri
    .type board_write_eri, @function
    .align 4
board_write_eri:
    entry   a1, 16
    .byte   0x30, 0x72, 0x40    /* wer a3, a2 */
    retw

/*
 * Executes exactly `count` nops in a zero-overhead loop (count >= 1): a workload of
 * known size, which the harness's calibration test measures.
 *
 * void board_nops(u32 count)
 */
    .section .text.board_nops, "ax"
    .global board_nops
    .type board_nops, @function
    .align 4
board_nops:
    entry   a1, 16
    loop    a2, .Lnops_end
    nop
.Lnops_end:
    retw

/*
 * Makes the 512 MiB at address 0 (0x00000000..0x20000000, unused by the simulation)
 * answer no access, so a null pointer, or a small offset from one, faults
 * (LoadProhibited, StoreProhibited, InstFetchProhibited) instead of reading the RAM
 * this board has there. The de233_fpu MMU comes out of reset mapping the whole 4 GiB
 * through TLB way 6, 512 MiB a page; the page at 0 gets attribute 15 (no access) in
 * both the data and the instruction TLB. LLVM's assembler knows wdtlb and witlb only
 * with its region-protection option, so they are spelled as their encodings.
 *
 * void board_guard_null_page(void)
 */
    .section .text.board_guard_null_page, "ax"
    .global board_guard_null_page
    .type board_guard_null_page, @function
    .align 4
board_guard_null_page:
    entry   a1, 16
    movi    a3, 6                 /* virtual page 0, way 6 */
    movi    a2, 15                /* physical page 0, attribute 15: no access */
    .byte   0x20, 0xe3, 0x50      /* wdtlb a2, a3 */
    dsync
    .byte   0x20, 0x63, 0x50      /* witlb a2, a3 */
    isync
    retw
