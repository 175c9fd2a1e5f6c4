/* Part of the smallest image (vectors.S): a library image's kernel table. Leaving it
 * out is the no_kernel_table case (ERROR). */
    .section .text.kernel_table, "ax"
    .global get_func_cnt, get_func_ptr, get_func_name
    .align 4
get_func_cnt:
get_func_ptr:
get_func_name:
    ret
