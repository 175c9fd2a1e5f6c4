/*
 * <stdio.h> for kernels on the device: output only, into the stdout ring the loader
 * drains (the host's NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES). There are no files.
 *
 * In C++, printf with arguments is a variadic template that packs them into 64-bit
 * words for the runtime's neuron_printf_packed: a C variadic function built by LLVM 22
 * for Xtensa reads its arguments one register late (docs/toolchain.md); packing them
 * on the caller's side does not depend on that.
 */
#ifndef NEURONCUSTOMOP_STDIO_H
#define NEURONCUSTOMOP_STDIO_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
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
