/*
 * <string.h> for kernels on the device: the runtime's memory functions and C's byte-string
 * functions (C locale; no strcoll, strxfrm, strerror or strtok, which need a locale, an
 * error table or hidden state: docs/op-author-guide.md, "The C library").
 */
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
void *memchr(const void *s, int c, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t n);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strcpy(char *dst, const char *src);
char *strncpy(char *dst, const char *src, size_t n);
char *strcat(char *dst, const char *src);
char *strncat(char *dst, const char *src, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
#ifdef __cplusplus
}
#endif
#endif
