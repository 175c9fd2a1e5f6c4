/*
 * C's variadic formatted-output functions on the host tier (x86-64): printf, sprintf,
 * snprintf, vprintf, vsprintf, vsnprintf, compiled into every C and C++ library the
 * host tier builds (qemu/hosttier). The device's are assembly
 * (runtime/arch/xtensa/variadic.S) because LLVM 22's Xtensa va_arg is wrong; x86-64's
 * is right, so here clang's va_arg reads each argument, and the runtime's own
 * formatter (runtime/start_exit/printf/host_tier.rs) asks for them one at a time
 * through next_argument: the text is the device's byte for byte, never glibc's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* The formatter's argument kinds, as printf/host_tier.rs numbers them. */
enum kind { KIND_INT = 0, KIND_LONG = 1, KIND_LONG_LONG = 2, KIND_DOUBLE = 3 };

typedef uint64_t (*next_fn)(void *list, uint32_t kind);
int __neuron_host_vprintf(const char *format, next_fn next, void *list);
int __neuron_host_vsnprintf(char *buffer, size_t size, const char *format, next_fn next, void *list);

/* The next argument of `kind` from the va_list at `list`, as 64 bits (a double as its
 * bit pattern). */
static uint64_t next_argument(void *list, uint32_t kind) {
    va_list *arguments = list;
    switch (kind) {
    case KIND_INT:
        return (uint64_t)(int64_t)va_arg(*arguments, int);
    case KIND_LONG:
        return (uint64_t)va_arg(*arguments, long);
    case KIND_LONG_LONG:
        return (uint64_t)va_arg(*arguments, long long);
    default: {
        double value = va_arg(*arguments, double);
        uint64_t bits;
        __builtin_memcpy(&bits, &value, sizeof bits);
        return bits;
    }
    }
}

int vprintf(const char *format, va_list arguments) {
    /* A copy: the caller's va_list may be an array parameter, which cannot be addressed
     * as a va_list of its own. */
    va_list copy;
    va_copy(copy, arguments);
    int n = __neuron_host_vprintf(format, next_argument, &copy);
    va_end(copy);
    return n;
}

int vsnprintf(char *buffer, size_t size, const char *format, va_list arguments) {
    va_list copy;
    va_copy(copy, arguments);
    int n = __neuron_host_vsnprintf(buffer, size, format, next_argument, &copy);
    va_end(copy);
    return n;
}

int vsprintf(char *buffer, const char *format, va_list arguments) {
    return vsnprintf(buffer, SIZE_MAX, format, arguments);
}

int printf(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int n = vprintf(format, arguments);
    va_end(arguments);
    return n;
}

int sprintf(char *buffer, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int n = vsnprintf(buffer, SIZE_MAX, format, arguments);
    va_end(arguments);
    return n;
}

int snprintf(char *buffer, size_t size, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int n = vsnprintf(buffer, size, format, arguments);
    va_end(arguments);
    return n;
}
