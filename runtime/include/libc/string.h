/* <string.h> for kernels on the device: the runtime's memory functions. */
#ifndef NEURONCUSTOMOP_STRING_H
#define NEURONCUSTOMOP_STRING_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
#ifdef __cplusplus
}
#endif
#endif
