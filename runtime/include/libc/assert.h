/*
 * <assert.h> for kernels on the device: a failed assert prints its expression and
 * file:line and ends the op with status ASSERT_FAILED (0x61), which every front end
 * shows as 0x61 ASSERT_FAILED. NDEBUG turns asserts off, as in C.
 */
#undef assert
#ifdef NDEBUG
#define assert(expression) ((void)0)
#else
#ifdef __cplusplus
extern "C"
#endif
    __attribute__((noreturn)) void
    __assert_func(const char *file, int line, const char *function, const char *expression);
#define assert(expression) ((expression) ? (void)0 : __assert_func(__FILE__, __LINE__, __func__, #expression))
#endif
