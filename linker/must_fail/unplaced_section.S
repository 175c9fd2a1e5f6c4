/* ERROR: a section the contract does not place (ld would put it over the heap). */
    .section .noinit, "aw", @nobits
    .space 64
