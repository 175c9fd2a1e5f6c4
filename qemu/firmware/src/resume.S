/*
 * Resuming the loader after a kernel stopped without returning (it aborted, exited,
 * panicked or took an exception): the kernel's frames, and the loader's below them,
 * are discarded, and the loader carries on from its own records.
 *
 * void loader_resume(u32 stack_top, void (*continuation)(u32), u32 argument)  -- never returns
 *
 * Keeps only the current register window live (older frames are never returned to),
 * moves to the fresh stack, and calls `continuation(argument)` with call4.
 */
    .section .text.loader_resume, "ax"
    .global loader_resume
    .type loader_resume, @function
    .align 4
loader_resume:
    entry   a1, 16
    /* The argument goes to a6, which is a2 of the continuation after call4. */
    or      a6, a4, a4
    or      a8, a3, a3
    rsr     a10, windowbase
    movi    a11, 1
    ssl     a10
    sll     a11, a11
    wsr     a11, windowstart
    rsync
    or      a1, a2, a2
    movi    a4, 0               /* no return address: ends backtraces */
    callx4  a8
1:  j       1b
