/*
 * neuroncustomop.h: the C ABI of the neuroncustomop device runtime, for op authors
 * writing kernels in C or C++ (and for a host loader written in C).
 *
 * The contract behind every declaration here is docs/abi/entry.md (entry, registration,
 * libc, stdout) and the per-topic pages next to it. All symbols have C linkage; C++
 * authors include this header as is (it wraps itself in extern "C").
 *
 * Unlike the vendor's libneuroncustomop.a, whose get_func_* symbols are C++-mangled,
 * this runtime expects the author's table with C linkage: define it in a C file, or
 * inside extern "C" in C++.
 */
#ifndef NEURONCUSTOMOP_H
#define NEURONCUSTOMOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define NEURONCUSTOMOP_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define NEURONCUSTOMOP_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
/* The GNU spelling, not C++'s [[noreturn]]: C++ requires [[noreturn]] on a function's
 * first declaration, and <stdlib.h> (the device's or the system's) may come first. */
#define NEURONCUSTOMOP_NORETURN __attribute__((noreturn))

/* ======================================================================== */
/* start_exit: the entry contract                                           */
/* ======================================================================== */

/* What every entry point returns, and what the host's registration callbacks return.
 * 4 bytes. A host callback may return values not listed; entry_func passes them on. */
typedef uint32_t SUNDA_UCODE_LIB_STATUS;
enum {
    SUNDA_UCODE_LIB_SUCCESS = 0,
    SUNDA_UCODE_LIB_FAILURE_ABI_MISMATCH = 1,  /* block null, misaligned, or < 36 bytes */
    SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS = 2,   /* (uint32_t)get_func_cnt() >= 0x8000 */
    SUNDA_UCODE_LIB_FAILURE_NULL_CALLBACK = 3, /* a required callback is NULL */
    SUNDA_UCODE_LIB_FAILURE_NO_SCRATCH = 4,    /* a scratch region is NULL, empty or wraps */
    SUNDA_UCODE_LIB_FAILURE_BAD_KERNEL = 5,    /* a table entry has a NULL name or pointer */
    SUNDA_UCODE_LIB_FAILURE_CRT_INIT = 6       /* constructors filled the atexit table */
};

/* The smallest sizeof_ncore_ucode_lib entry_func accepts (the 32-bit device's size). */
#define SUNDA_UCODE_LIB_ABI_SIZE 36u
/* Kernel counts at or above this are refused. */
#define SUNDA_UCODE_LIB_MAX_KERNELS 0x8000u

/* The host -> device handoff block: nine word-sized members, 36 bytes on the device.
 * Required: get_data_scratch, get_hbm_scratch, get_dma_queue, register_ext_isa_fn.
 * Optional (may be NULL): get_libc_fn, register_ext_isa_fn_v2, register_ext_isa_fn_v3. */
typedef struct SUNDA_UCODE_LIB {
    uint32_t sizeof_ncore_ucode_lib;                                         /* +0  */
    void* library_handle;                                                    /* +4  */
    void (*get_data_scratch)(void** addr, uint32_t* size);                   /* +8  */
    void (*get_hbm_scratch)(void** addr, uint32_t* size);                    /* +12 */
    void (*get_dma_queue)(uint32_t* m2s_offset, uint32_t* s2m_offset);       /* +16 */
    /* The CRT asks it for "abort" (void (*)(void)) and "exit" (void (*)(int)). */
    void* (*get_libc_fn)(const char* name);                                  /* +20 */
    SUNDA_UCODE_LIB_STATUS (*register_ext_isa_fn)(void* library_handle,
                                                  const char* name);         /* +24 */
    SUNDA_UCODE_LIB_STATUS (*register_ext_isa_fn_v2)(void* library_handle,
                                                     const char* name,
                                                     uint8_t opcode);        /* +28 */
    SUNDA_UCODE_LIB_STATUS (*register_ext_isa_fn_v3)(void* library_handle,
                                                     const char* name,
                                                     uint8_t core_type);     /* +32 */
} SUNDA_UCODE_LIB;

NEURONCUSTOMOP_STATIC_ASSERT(sizeof(SUNDA_UCODE_LIB_STATUS) == 4, "STATUS is 4 bytes");
NEURONCUSTOMOP_STATIC_ASSERT(sizeof(SUNDA_UCODE_LIB) == 9 * sizeof(void*),
                             "SUNDA_UCODE_LIB is nine words");
NEURONCUSTOMOP_STATIC_ASSERT(offsetof(SUNDA_UCODE_LIB, library_handle) == 1 * sizeof(void*),
                             "library_handle is word 1");
NEURONCUSTOMOP_STATIC_ASSERT(offsetof(SUNDA_UCODE_LIB, get_data_scratch) == 2 * sizeof(void*),
                             "get_data_scratch is word 2");
NEURONCUSTOMOP_STATIC_ASSERT(offsetof(SUNDA_UCODE_LIB, get_hbm_scratch) == 3 * sizeof(void*),
                             "get_hbm_scratch is word 3");
NEURONCUSTOMOP_STATIC_ASSERT(offsetof(SUNDA_UCODE_LIB, get_dma_queue) == 4 * sizeof(void*),
                             "get_dma_queue is word 4");
NEURONCUSTOMOP_STATIC_ASSERT(offsetof(SUNDA_UCODE_LIB, get_libc_fn) == 5 * sizeof(void*),
                             "get_libc_fn is word 5");
NEURONCUSTOMOP_STATIC_ASSERT(offsetof(SUNDA_UCODE_LIB, register_ext_isa_fn) == 6 * sizeof(void*),
                             "register_ext_isa_fn is word 6");
NEURONCUSTOMOP_STATIC_ASSERT(offsetof(SUNDA_UCODE_LIB, register_ext_isa_fn_v2) ==
                                 7 * sizeof(void*),
                             "register_ext_isa_fn_v2 is word 7");
NEURONCUSTOMOP_STATIC_ASSERT(offsetof(SUNDA_UCODE_LIB, register_ext_isa_fn_v3) ==
                                 8 * sizeof(void*),
                             "register_ext_isa_fn_v3 is word 8");
#if UINTPTR_MAX == 0xFFFFFFFFu
NEURONCUSTOMOP_STATIC_ASSERT(sizeof(SUNDA_UCODE_LIB) == SUNDA_UCODE_LIB_ABI_SIZE,
                             "SUNDA_UCODE_LIB is 36 bytes on a 32-bit target");
#endif

/* The library's entry point; the host loader calls it once with its handoff block. */
SUNDA_UCODE_LIB_STATUS entry_func(const SUNDA_UCODE_LIB* host);

/* The bulk registrar: reg(get_func_ptr(i), get_func_name(i), handle) for every kernel,
 * handle being the library handle entry_func kept (NULL before entry_func ran). */
typedef SUNDA_UCODE_LIB_STATUS (*neuron_register_fn)(void* fn, const char* name,
                                                     void* library_handle);
SUNDA_UCODE_LIB_STATUS register_funcs(neuron_register_fn reg);

/* A kernel: no C arguments, no result; it pulls its arguments from the customop_*
 * stream and returns its result through it. */
typedef void (*neuron_kernel_fn)(void);

/* The author's kernel table: YOU define these three (the runtime leaves them undefined).
 * get_func_cnt() < 0x8000; for 0 <= i < get_func_cnt(), get_func_ptr(i) and
 * get_func_name(i) are non-NULL, and names are distinct, NUL-terminated, static. */
int get_func_cnt(void);
void* get_func_ptr(int index);
const char* get_func_name(int index);

/* "neuroncustomop <version> (libneuroncustomop 1.21.1.0)". */
extern const char CUSTOMOP_LIB_VERSION[];

/* The stdout ring: this header, then `capacity` data bytes; byte k of the output stream
 * is at data[k % capacity]. The device advances write_count; a loader drains
 *   pending = write_count - read_count, lost = pending > capacity ? pending - capacity : 0,
 *   the newest (pending - lost) bytes ending at data[(write_count - 1) % capacity],
 * then stores write_count into read_count. All counts wrap at 2^32. */
typedef struct NEURON_STDOUT_RING_HEADER {
    uint32_t magic;       /* +0:  NEURON_STDOUT_RING_MAGIC */
    uint32_t capacity;    /* +4:  a power of two, at most 128 KiB, set by the host; 0: disabled */
    uint32_t write_count; /* +8:  bytes written, mod 2^32 (device) */
    uint32_t read_count;  /* +12: bytes consumed, mod 2^32 (loader) */
} NEURON_STDOUT_RING_HEADER;
NEURONCUSTOMOP_STATIC_ASSERT(sizeof(NEURON_STDOUT_RING_HEADER) == 16, "ring header is 16 bytes");
#define NEURON_STDOUT_RING_MAGIC 0x54554F4Eu /* "NOUT", little-endian */
extern NEURON_STDOUT_RING_HEADER neuron_stdout_ring;

/* ======================================================================== */
/* The device libc (define NEURONCUSTOMOP_NO_LIBC_DECLARATIONS to use your   */
/* toolchain's <string.h> / <stdlib.h> / <unistd.h> declarations instead)    */
/* ======================================================================== */
#ifndef NEURONCUSTOMOP_NO_LIBC_DECLARATIONS
void* memcpy(void* dst, const void* src, size_t n);
void* memmove(void* dst, const void* src, size_t n);
void* memset(void* dst, int c, size_t n);
int memcmp(const void* a, const void* b, size_t n);
int bcmp(const void* a, const void* b, size_t n);

void* malloc(size_t size);
void* calloc(size_t count, size_t size);
void* realloc(void* ptr, size_t size);
void* memalign(size_t alignment, size_t size);
void* aligned_alloc(size_t alignment, size_t size);
int posix_memalign(void** out, size_t alignment, size_t size);
void free(void* ptr);

NEURONCUSTOMOP_NORETURN void abort(void);
NEURONCUSTOMOP_NORETURN void exit(int status);
NEURONCUSTOMOP_NORETURN void _Exit(int status);
int atexit(void (*handler)(void));

/* fd 1 and 2 append to the stdout ring; other fds fail with -1. */
ptrdiff_t write(int fd, const void* buf, size_t len);
ptrdiff_t _write_r(void* reent, int fd, const void* buf, size_t len);
int fsync(int fd);
#endif

/* ======================================================================== */
/* Memory, address translation, cores, data movement                        */
/* ======================================================================== */

/* The HBM and dataram heaps: first fit, every block 64-byte aligned. The malloc
 * family above uses the HBM heap; free() and realloc() take either heap's blocks.
 * A failure returns NULL and leaves its code in neuron_heap_status() (0: none;
 * codes: docs/abi/memory.md). */
void* neuron_hbm_malloc(size_t size);
void neuron_hbm_free(void* ptr);
void* neuron_dataram_malloc(size_t size);
void neuron_dataram_free(void* ptr);
int neuron_heap_status(void);

/* The op's 16 KiB TCM scratch pool. tcm_malloc returns NULL when it cannot. */
void* tcm_malloc(size_t size);
void tcm_free(void* ptr);

/* One region of the five-region software TLB (32 bytes; docs/abi/memory.md). */
typedef struct NEURON_TRANSLATE_RECORD {
    uint64_t ptr;          /* +0: match value: (addr & mask) == ptr */
    uint64_t mask;         /* +8: a run of high ones */
    uint64_t device_base;  /* +16: device address of the window's first byte */
    uint32_t flags;        /* +24: NEURON_TRANSLATE_PER_CORE or 0 */
    uint32_t core_stride;  /* +28: per-core windows: core i adds i * core_stride */
} NEURON_TRANSLATE_RECORD;
NEURONCUSTOMOP_STATIC_ASSERT(sizeof(NEURON_TRANSLATE_RECORD) == 32, "translate records are 32 bytes");
#define NEURON_TRANSLATE_PER_CORE 1u
/* The loader configures the windows for each op; 0 or a status (docs/abi/memory.md). */
int neuron_translate_configure(const NEURON_TRANSLATE_RECORD* records, uint32_t count);
/* Framework (host) address -> device pointer through the op's translate windows;
 * NULL when no window matches (the reason in neuron_translate_status()). */
void* neuron_translate(uint64_t framework_addr);
int neuron_translate_status(void);

/* This core's index in [0, get_cpu_count()), and the number of cores (8). */
uint32_t get_cpu_id(void);
uint32_t get_cpu_count(void);

/* neuron_memcpy's backend. */
typedef enum NeuronMemcpyMethod {
    C_MEMCPY = 0,
    VEC_MEMCPY = 1,
    DMA = 2,
    MAX_METHODS = 3
} NeuronMemcpyMethod;
/* Selects the backend: 0, or -1 for m >= MAX_METHODS (the active one is kept; the
 * vendor library wrongly accepts 3). */
int neuron_set_memcpy_method(uint32_t m);
NeuronMemcpyMethod neuron_get_memcpy_method(void);
void neuron_memcpy(void* dst, const void* src, size_t n);
/* Why the last DMA copy was made by the CPU instead (0: it was not; 1 no queues,
 * 2 the engine has stopped, 3 an address the engine cannot reach). */
int neuron_dma_status(void);

/* Runs fn(arg) on a new stack of stack_size bytes (1 KiB..400 KiB) taken from the
 * HBM heap, or on the current stack for 0; returns 0 or a status: 1 null function,
 * 2 bad size, 3 out of memory, 4 windows live, 5 stack overflow, 6 frame corrupted,
 * 7 caller's stack overflow (docs/abi/data_transfer.md). */
int32_t switch_stack_or_call_wrapper(void (*fn)(void*), void* arg, uint32_t stack_size);

/* ======================================================================== */
/* wrapper_api: the pull stream (docs/abi/descriptors.md)                   */
/* ======================================================================== */

/* The 48-byte on-wire tensor descriptor (layout: docs/abi, wrapper_api). */
typedef struct NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR;

/* NEURON_ISA_TPB_DTYPE: a tensor's element type (customop_tensor_dtype). */
enum {
    NEURON_ISA_TPB_DTYPE_FLOAT32 = 1,
    NEURON_ISA_TPB_DTYPE_BFLOAT16 = 2,
    NEURON_ISA_TPB_DTYPE_FLOAT16 = 3,
    NEURON_ISA_TPB_DTYPE_INT32 = 4,
    NEURON_ISA_TPB_DTYPE_INT8 = 5,
    NEURON_ISA_TPB_DTYPE_INT64 = 6,
    NEURON_ISA_TPB_DTYPE_INT16 = 7,
    NEURON_ISA_TPB_DTYPE_UINT8 = 8
};

/* Called by the loader before each kernel: its arguments and its output. */
uint32_t customop_set_invocation(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* args, uint32_t num_args,
                                 NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* result);
/* The first failure since customop_set_invocation (0: none): what the loader reports. */
uint32_t customop_invocation_status(void);
/* The status of the last pull-stream call (0: it succeeded). */
uint32_t customop_last_status(void);

uint32_t customop_setup(bool first_call);
/* The next tensor argument, and the output (once): the runtime's checked copies, valid
   until the next customop_setup; NULL on failure (see customop_last_status). */
const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* customop_next_tensor(void);
int32_t customop_next_int(void);
int64_t customop_next_longlong(void);
float customop_next_float(void);
/* The op's output descriptor (once per op). In C++ under the torch API, which defines
   TORCHNEURON_API before including this header, ::get_dst_tensor() is the torch API's and
   returns a torch::Tensor, as the AWS documentation shows it: there this function is
   torchneuron_c_get_dst_tensor, for the same symbol. */
#ifdef TORCHNEURON_API
#define NEURONCUSTOMOP_TORCH_API 1
#define NEURONCUSTOMOP_GET_DST_TENSOR torchneuron_c_get_dst_tensor
#else
#define NEURONCUSTOMOP_GET_DST_TENSOR get_dst_tensor
#endif
const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* NEURONCUSTOMOP_GET_DST_TENSOR(void) __asm__("get_dst_tensor");
#undef NEURONCUSTOMOP_GET_DST_TENSOR
/* The device pointer of a tensor's first element (translated); NULL on failure. */
void* customop_tensor_data(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* tensor);
/* A tensor's shape, from its descriptor (the fields each reads are checked: 0 and the
   descriptor's first error as the status if one is not valid).
   numel: the element count; dtype: a NEURON_ISA_TPB_DTYPE value (above); rank: 1 to 8;
   dim: dimension `index`, outermost first, 0 at and past the rank. */
uint32_t customop_tensor_numel(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* tensor);
uint32_t customop_tensor_dtype(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* tensor);
uint32_t customop_tensor_rank(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* tensor);
uint32_t customop_tensor_dim(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* tensor, uint32_t index);
uint32_t customop_return_tensor(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR* tensor);
/* The kernel's own failure: status 0x10000 + code (the invocation's, if the first). */
uint32_t customop_fail(uint16_t code);
uint32_t customop_cleanup(void);

/* ======================================================================== */
/* The C++ API's failures (docs/abi/descriptors.md)                         */
/* ======================================================================== */

/* Records `status` as the invocation's failure (the first one stays the op's), prints
   `message` (NULL: nothing) as one line on stdout, and ends the kernel: the loader
   reports the op as ended with <status> and goes on with the next op. What <torch/torch.h> calls on a
   misuse that cannot be a compile error. */
NEURONCUSTOMOP_NORETURN void neuron_cxx_fail(uint32_t status, const char* message);
/* neuron_cxx_fail without ending the kernel; returns `status`. */
uint32_t neuron_cxx_record(uint32_t status, const char* message);
/* The HBM heap's free bytes and its largest free block (a NULL pointer is skipped):
   what an OUT_OF_MEMORY message says was left. */
void neuron_cxx_heap_room(size_t* free_bytes, size_t* largest_free);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The author's range markers for profiles: no code, no cost. */
#include "neuroncustomop_range.h"

#undef NEURONCUSTOMOP_STATIC_ASSERT
#undef NEURONCUSTOMOP_NORETURN

#endif /* NEURONCUSTOMOP_H */
