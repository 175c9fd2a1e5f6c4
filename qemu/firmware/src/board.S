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
