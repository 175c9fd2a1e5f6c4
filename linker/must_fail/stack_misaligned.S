/* ERROR: _stack_size not a multiple of 16. */
    .global _stack_size
    .set _stack_size, 0x1008
