/*
 * <stdio.h> for kernels on the device: formatted output into the stdout ring the loader
 * drains (the host's NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES), and into buffers. There
 * are no files, no input and no locale (docs/op-author-guide.md, "The C library").
 *
 * The formatter matches glibc's for every conversion, flag, width, precision and
 * length modifier, floats exactly rounded (ties to even); no wide characters.
 * The variadic functions are assembly in the runtime, so they read their arguments
 * right despite LLVM 22's variadic-callee defect (docs/toolchain.md, defect 6). A
 * kernel's own variadic function is still compiled by clang and reads them wrong: format
 * with these functions directly, or with a macro around them.
 *
 * In C++, printf with arguments is a variadic template that packs them into 64-bit
 * words for the runtime's neuron_printf_packed (it was the way round the defect before
 * the assembly printf, and stays: C++ kernels built with it keep working).
 */
#ifndef NEURONCUSTOMOP_STDIO_H
#define NEURONCUSTOMOP_STDIO_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
#ifndef EOF
#define EOF (-1)
#endif
int printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
int sprintf(char *buffer, const char *format, ...) __attribute__((format(printf, 2, 3)));
int snprintf(char *buffer, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
int vprintf(const char *format, va_list arguments) __attribute__((format(printf, 1, 0)));
int vsprintf(char *buffer, const char *format, va_list arguments) __attribute__((format(printf, 2, 0)));
int vsnprintf(char *buffer, size_t size, const char *format, va_list arguments)
    __attribute__((format(printf, 3, 0)));
int puts(const char *text);
int putchar(int c);
int neuron_printf_packed(const char *format, const uint64_t *words, uint32_t count);
#ifdef __cplusplus
}

namespace neuroncustomop_printf {
/* One argument as the word printf reads: integers (and enums) extended to 64 bits,
 * floating point as a double, pointers as their address. */
template <class T>
inline uint64_t word(const T &value) {
    return uint64_t(int64_t(value));
}
template <class T>
inline uint64_t word(T *pointer) {
    return uint64_t(uintptr_t(pointer));
}
inline uint64_t word(unsigned long long value) { return value; }
inline uint64_t word(double value) {
    uint64_t bits;
    __builtin_memcpy(&bits, &value, sizeof bits);
    return bits;
}
inline uint64_t word(float value) { return word(double(value)); }
} // namespace neuroncustomop_printf

template <class First, class... Rest>
inline int printf(const char *format, First first, Rest... rest) {
    const uint64_t words[] = {neuroncustomop_printf::word(first), neuroncustomop_printf::word(rest)...};
    return neuron_printf_packed(format, words, uint32_t(1 + sizeof...(Rest)));
}
#endif
#endif
