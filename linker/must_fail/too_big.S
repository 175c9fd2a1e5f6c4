/* ERROR: code, data and the (default 64 KiB) stack do not fit in the 2 MiB window. */
    .section .bss.huge, "aw", @nobits
    .space 0x1F8000
