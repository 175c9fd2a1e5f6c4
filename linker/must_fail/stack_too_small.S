/* ERROR: _stack_size below the 1 KiB minimum. */
    .global _stack_size
    .set _stack_size, 256
