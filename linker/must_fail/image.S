/* The smallest image the contract accepts, which every must-fail case adds to: a
 * vector table, an entry point and a kernel table (qemu/tests/linker.rs links it
 * alone first, so each case fails for its own reason only). */

    .section .vectors, "ax"
    .global _vector_table
_vector_table:
    .space 0x3F0

    .section .text._start, "ax"
    .global _start
    .align 4
_start:
    movi    a2, 0x12345678
    ret

    .section .text.kernel_table, "ax"
    .global get_func_cnt, get_func_ptr, get_func_name
    .align 4
get_func_cnt:
get_func_ptr:
get_func_name:
    ret
