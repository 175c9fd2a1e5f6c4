/* <stdlib.h> for kernels on the device: the runtime's heap and exit functions. */
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
#ifdef __cplusplus
}
#endif
#endif
