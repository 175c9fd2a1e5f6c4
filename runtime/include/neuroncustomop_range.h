/*
 * neuroncustomop_range.h: the author's own ranges in a profile (`ncop run --profile`),
 * for kernels in C and C++. neuroncustomop.h includes it.
 *
 *     NCOP_RANGE_BEGIN("row max");
 *     for (...) { ... }
 *     NCOP_RANGE_END("row max");
 *
 * A marker emits no instruction: it is a record in the ELF section .ncop_ranges, which
 * the linker script keeps out of the loaded image, so a kernel with markers runs the
 * same instructions as without. A profile reads the records, finds the first
 * instruction of the next source line with code after each marker (where a debugger's
 * breakpoint on that line would stop), and counts the instructions and predicted device
 * time between a range's begin and its end on each core, the functions it calls
 * included. The name must be a string literal; begin and end are paired by name.
 * The record's layout, and what a range can and cannot resolve, are documented with its
 * Rust twin, the runtime's `ranges` module (`neuroncustomop::range_begin!`).
 *
 * Licence: MIT OR Apache-2.0, as the runtime.
 */
#ifndef NEURONCUSTOMOP_RANGE_H
#define NEURONCUSTOMOP_RANGE_H

#include <stdint.h>

/* The runtime's ranges::MAGIC ("NCRG"), ranges::BEGIN and ranges::END. */
#define NCOP_RANGE_MAGIC 0x4752434Eu
#define NCOP_RANGE_BEGIN_KIND 1u
#define NCOP_RANGE_END_KIND 2u

/* A record's fixed part: 20 bytes, then the name and the file, each with its NUL. */
struct ncop_range_header {
    uint32_t magic;    /* +0  NCOP_RANGE_MAGIC */
    uint32_t kind;     /* +4  NCOP_RANGE_BEGIN_KIND or NCOP_RANGE_END_KIND */
    uint32_t line;     /* +8  the marker's line */
    uint32_t name_len; /* +12 bytes of the name, its NUL included */
    uint32_t file_len; /* +16 bytes of the file name, likewise */
};

/* One record in a block of its own: a static, so no code; `used`, so the compiler
 * keeps it; the linker script keeps the section (KEEP) and does not load it (INFO).
 * `"" name` takes a string literal only. */
#define NCOP_RANGE_MARKER_(kind, name)                                                     \
    do {                                                                                   \
        __attribute__((section(".ncop_ranges"), used, aligned(4))) static const struct {  \
            struct ncop_range_header header;                                               \
            char name_[sizeof("" name)];                                                   \
            char file_[sizeof(__FILE__)];                                                  \
        } ncop_range_record = {                                                            \
            {NCOP_RANGE_MAGIC, (kind), __LINE__, sizeof("" name), sizeof(__FILE__)},       \
            "" name,                                                                       \
            __FILE__};                                                                     \
    } while (0)

/* Begins the range `name` (a string literal) at the next source line with code. */
#define NCOP_RANGE_BEGIN(name) NCOP_RANGE_MARKER_(NCOP_RANGE_BEGIN_KIND, name)
/* Ends the range `name` at the next source line with code. */
#define NCOP_RANGE_END(name) NCOP_RANGE_MARKER_(NCOP_RANGE_END_KIND, name)

#endif /* NEURONCUSTOMOP_RANGE_H */
