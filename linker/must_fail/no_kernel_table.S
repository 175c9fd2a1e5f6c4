/* ERROR: a library image without get_func_cnt / get_func_ptr / get_func_name: linked
 * with image.S's vector table and entry point but not its kernel table. */
    .section .vectors, "ax"
    .global _vector_table
_vector_table:
    .space 0x3F0

    .section .text._start, "ax"
    .global _start
    .align 4
_start:
    ret
