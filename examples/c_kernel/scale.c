/*
 * scale: out[i] = x[i] * factor over an f32 tensor, written in C against the runtime's
 * C header and linked with libneuroncustomop.a (`cargo sim package c_kernel`).
 *
 * Arguments, in order: the tensor x, the float factor, and the int element count n
 * (the C header has no element-count accessor yet, so the caller passes it; it must
 * not exceed the tensors' element count). The output has x's shape.
 *
 * Two kernels: `scale` on one core, and `scale_multicore`, where every core scales its
 * own slice (core i takes [i * share, (i + 1) * share), the last core the remainder).
 */
#include <neuroncustomop.h>

/* Pulls the arguments, scales the elements this core owns, and returns the output.
 * Every failure stays in the invocation status, which customop_cleanup() returns and
 * the loader reads. */
static void scale_share(uint32_t core, uint32_t cores) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();
    float factor = customop_next_float();
    int32_t n = customop_next_int();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (x != NULL && out != NULL) {
        const float *src = customop_tensor_data(x);
        float *dst = customop_tensor_data(out);
        if (src != NULL && dst != NULL && n > 0) {
            uint32_t count = (uint32_t)n;
            uint32_t share = count / cores;
            uint32_t begin = core * share;
            uint32_t end = core + 1 == cores ? count : begin + share;
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
