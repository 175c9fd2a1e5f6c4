/*
 * c_libc: the device C library called from C, as a kernel author calls it
 * (`cargo sim run c_libc`; its tests compare every result with glibc on the host).
 *
 * - printf_lines: printf with many arguments of every size, doubles and long longs
 *   among them, so that they straddle the six argument registers and the stack; on
 *   every core. Also through a variadic function of the kernel's own (vprintf).
 * - format_table: one snprintf per record of its uint8 input (64 bytes each: the
 *   argument's kind at 0, its value at 8, the format at 16, a string argument at 40)
 *   into 128 bytes of the output each (snprintf's return value, then 124 bytes of text).
 * - string_checks: the string.h and stdlib.h functions, their results printed.
 * printf_lines and string_checks take a one-byte tensor they ignore (a call has an
 * input) and return their output tensor untouched.
 */
#include <neuroncustomop.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD 64
#define RESULT 128

/* A kernel's own variadic logger: clang compiles its va_start, vprintf reads it. */
static int log_line(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int n = vprintf(format, arguments);
    va_end(arguments);
    return n;
}

static int format_into(char *buffer, size_t size, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int n = vsnprintf(buffer, size, format, arguments);
    va_end(arguments);
    return n;
}

/* The checks print their results; their one-byte output says they ran to the end
 * (core 0 writes it, so no byte is written by two cores), so the host's check that
 * every output element was written holds for them as for any kernel. */
static void return_done(void) {
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    uint8_t *done = out != NULL ? customop_tensor_data(out) : NULL;
    if (done != NULL && get_cpu_id() == 0) {
        done[0] = 1;
    }
    customop_return_tensor(out);
}

static void printf_lines(void) {
    customop_setup(false);
    customop_next_tensor();
    int core = (int)get_cpu_id();
    printf("A %d %d %d %d %d\n", 11, 22, 33, 44, 55);
    printf("C %d\n", 7);
    printf("%d %s %.3f\n", core, "three", 1.23456);
    printf("core %d: %d %.3f %lld %s %d %.17g %lld %u %c %x %e\n", core, 11, 2.5, 3LL, "str", 4, 5.0 / 3, -7LL, 8u,
           'z', 0xbeef, -1e-300);
    printf("%d %d %d %d %.1f %d %lld %hhd %hd %zu %g\n", 1, 2, 3, 4, 5.5, 6, 7LL << 40, 300, 70000, (size_t)9, 0.0001);
    log_line("log %d %s %.2f %lld %d %d %d %d\n", core, "x", 0.125, -1LL, 5, 6, 7, 8);
    char buffer[64];
    int n = sprintf(buffer, "%05d|%-4s|%+.2e", core * 100, "ab", 12345.678);
    printf("sprintf %d [%s]\n", n, buffer);
    n = snprintf(buffer, 8, "%s-%d-%f", "truncated", core, 1.5);
    printf("snprintf %d [%s]\n", n, buffer);
    n = format_into(buffer, sizeof buffer, "%c%c %.0f %.0f %#o %#x", 'o', 'k', 0.5, 2.5, 8, 255);
    printf("vsnprintf %d [%s]\n", n, buffer);
    return_done();
    customop_cleanup();
}

static void format_table(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *in = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (in != NULL && out != NULL) {
        uint32_t count = customop_tensor_numel(in) / RECORD;
        const uint8_t *records = customop_tensor_data(in);
        uint8_t *results = customop_tensor_data(out);
        if (customop_tensor_numel(out) != count * RESULT) {
            customop_fail(1);
        } else if (records != NULL && results != NULL) {
            for (uint32_t i = 0; i < count; i++) {
                const uint8_t *record = records + i * RECORD;
                char *text = (char *)results + i * RESULT + 4;
                const char *format = (const char *)record + 16;
                uint64_t value;
                memcpy(&value, record + 8, sizeof value);
                double real;
                memcpy(&real, &value, sizeof real);
                /* Every byte of the result is written: the text's tail is zeros. */
                memset(text, 0, RESULT - 4);
                int n = -1;
                switch (record[0]) {
                case 0: n = snprintf(text, RESULT - 4, format, (int)value); break;
                case 1: n = snprintf(text, RESULT - 4, format, (long)value); break;
                case 2: n = snprintf(text, RESULT - 4, format, (long long)value); break;
                case 3: n = snprintf(text, RESULT - 4, format, real); break;
                case 4: n = snprintf(text, RESULT - 4, format, (const char *)record + 40); break;
                }
                memcpy(text - 4, &n, sizeof n);
            }
        }
        customop_return_tensor(out);
    }
    customop_cleanup();
}

static int by_value(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void string_checks(void) {
    customop_setup(false);
    customop_next_tensor();
    char buffer[32];
    strcpy(buffer, "kernel");
    strcat(buffer, "-");
    strncat(buffer, "library", 3);
    printf("%s %zu %zu\n", buffer, strlen(buffer), strnlen(buffer, 4));
    printf("%d %d %d %d\n", strcmp("abc", "abd") < 0, strcmp("b", "a") > 0, strncmp("abcx", "abcy", 3),
           strcmp("\xe9", "a") > 0);
    printf("%s|%s|%s|%d\n", strchr(buffer, 'n'), strrchr(buffer, 'e'), strstr(buffer, "-li"),
           strstr(buffer, "xyz") == NULL);
    memset(buffer, 'x', sizeof buffer);
    strncpy(buffer, "ab", 5);
    printf("%d %d %d %c\n", buffer[2], buffer[4], (int)((char *)memchr(buffer, 'b', 5) - buffer), buffer[5]);
    char *end;
    long l = strtol("  -0x1fz", &end, 0);
    unsigned long u = strtoul("777 rest", &end, 8);
    printf("%ld %lu [%s] %d %ld %d\n", l, u, end, atoi("  42abc"), strtol("99999999999", NULL, 10), abs(-5));
    printf("%.9g %.17g %.17g %g\n", strtof("3.14159265358979", NULL), strtod("0.1", NULL), atof("-2.5e-3x"),
           strtod("inf", NULL));
    int values[] = {5, -3, 9, 0, 12, -8, 7, 1};
    qsort(values, 8, sizeof values[0], by_value);
    int key = 7;
    int *found = bsearch(&key, values, 8, sizeof values[0], by_value);
    printf("%d %d %d %d %d %d %d %d | %d %ld\n", values[0], values[1], values[2], values[3], values[4], values[5],
           values[6], values[7], found != NULL ? *found : -1, labs(-70000L));
    return_done();
    customop_cleanup();
}

/* The kernel table the runtime registers (neuroncustomop.h: get_func_*). */
static const struct {
    const char *name;
    neuron_kernel_fn kernel;
} kernels[] = {
    {"printf_lines", printf_lines},
    {"format_table", format_table},
    {"string_checks", string_checks},
};

#define KERNEL_COUNT ((int)(sizeof kernels / sizeof kernels[0]))

int get_func_cnt(void) {
    return KERNEL_COUNT;
}

void *get_func_ptr(int index) {
    return index >= 0 && index < KERNEL_COUNT ? (void *)kernels[index].kernel : NULL;
}

const char *get_func_name(int index) {
    return index >= 0 && index < KERNEL_COUNT ? kernels[index].name : NULL;
}
