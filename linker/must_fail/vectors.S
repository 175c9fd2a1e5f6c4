/* The smallest image the contract accepts is vectors.S + start.S + kernel_table.S
 * (qemu/tests/linker.rs links them alone first, so each must-fail case fails for its
 * own reason only). This part: a vector table as long as the runtime's. */
    .section .vectors, "ax"
    .global _vector_table
_vector_table:
    .space 0x3F0
