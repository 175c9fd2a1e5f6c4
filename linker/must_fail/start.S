/* Part of the smallest image (vectors.S): the entry point. */
    .section .text._start, "ax"
    .global _start
    .align 4
_start:
    movi    a2, 0x12345678
    ret
