/* ERROR: a .vectors section of the image's own, linked ahead of the runtime's. */
    .section .vectors, "ax"
    .space 16
