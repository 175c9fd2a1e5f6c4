/*
 * <stdlib.h> for kernels on the device: the runtime's heap and exit functions, C's number
 * conversions (C locale; decimal floats, no hexadecimal ones), qsort and bsearch. No
 * getenv, system or rand (docs/op-author-guide.md, "The C library").
 */
#ifndef NEURONCUSTOMOP_STDLIB_H
#define NEURONCUSTOMOP_STDLIB_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *malloc(size_t size);
void *calloc(size_t count, size_t size);
void *realloc(void *ptr, size_t size);
void *aligned_alloc(size_t alignment, size_t size);
int posix_memalign(void **out, size_t alignment, size_t size);
void free(void *ptr);
__attribute__((noreturn)) void abort(void);
__attribute__((noreturn)) void exit(int status);
__attribute__((noreturn)) void _Exit(int status);
int atexit(void (*handler)(void));

#ifndef EXIT_SUCCESS
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#endif
long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
long long strtoll(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);
int atoi(const char *s);
long atol(const char *s);
float strtof(const char *s, char **end);
double strtod(const char *s, char **end);
double atof(const char *s);
int abs(int n);
long labs(long n);
long long llabs(long long n);
void qsort(void *base, size_t count, size_t size, int (*compare)(const void *, const void *));
void *bsearch(const void *key, const void *base, size_t count, size_t size,
              int (*compare)(const void *key, const void *element));
#ifdef __cplusplus
}
#endif
#endif
