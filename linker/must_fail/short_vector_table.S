/* BUG: linked instead of vectors.S, a vector table cut short, as if the runtime's
 * vectors.S were linked in part. */
    .section .vectors, "ax"
    .global _vector_table
_vector_table:
    .space 0x10
