/*
 * scale: out[i] = x[i] * factor over an f32 tensor, written in C against the runtime's
 * C header and linked with libneuroncustomop.a (`cargo sim package c_kernel`).
 *
 * Arguments, in order: the f32 tensor x and the float factor. The output is an f32
 * tensor with as many elements as x; anything else fails with status 0x10001
 * (customop_tensor_dtype and customop_tensor_numel read a descriptor's shape).
 *
 * Two kernels: `scale` on one core, and `scale_multicore`, where every core scales its
 * own slice (core i of n takes [i * count / n, (i + 1) * count / n)).
 */
#include <neuroncustomop.h>

/* The failure code for tensors that do not fit (status 0x10001, as the Rust examples'). */
#define SHAPE_MISMATCH 1

/* Pulls the arguments, scales the elements this core owns, and returns the output.
 * Every failure stays in the invocation status, which customop_cleanup() returns and
 * the loader reads. */
static void scale_share(uint32_t core, uint32_t cores) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();
    float factor = customop_next_float();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (x != NULL && out != NULL) {
        uint32_t count = customop_tensor_numel(x);
        const float *src = customop_tensor_data(x);
        float *dst = customop_tensor_data(out);
        if (customop_tensor_dtype(x) != NEURON_ISA_TPB_DTYPE_FLOAT32 ||
            customop_tensor_dtype(out) != NEURON_ISA_TPB_DTYPE_FLOAT32 || customop_tensor_numel(out) != count) {
            customop_fail(SHAPE_MISMATCH);
        } else if (src != NULL && dst != NULL) { /* NULL: empty, or a status already set */
            /* Core i of n takes [i * count / n, (i + 1) * count / n): shares differ by at
             * most one element. i * count may pass 2^32, and a 64-bit division is a
             * library call of about 1 KiB; with count = q * n + r the bound is exactly
             * q * i + r * i / n, all in 32 bits (r * i < n * n). */
            uint32_t quotient = count / cores, remainder = count % cores;
            uint32_t begin = quotient * core + remainder * core / cores;
            uint32_t end = quotient * (core + 1) + remainder * (core + 1) / cores;
            for (uint32_t i = begin; i < end; i++) {
                dst[i] = src[i] * factor;
            }
        }
        customop_return_tensor(out);
    }
    customop_cleanup();
}

static void scale(void) {
    scale_share(0, 1);
}

static void scale_multicore(void) {
    scale_share(get_cpu_id(), get_cpu_count());
}

/* The kernel table the runtime registers (neuroncustomop.h: get_func_*). */
static const struct {
    const char *name;
    neuron_kernel_fn kernel;
} kernels[] = {
    {"scale", scale},
    {"scale_multicore", scale_multicore},
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
