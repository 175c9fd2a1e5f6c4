/*
 * The kernels of {{name}}, in C against the runtime's header (neuroncustomop.h,
 * which ncop and neuroncustomop.load put on the include path). Every kernel of the
 * table at the end is called by its name (`ncop run <kernel>`, `neuroncustomop.load(...).<kernel>(...)`).
 */
#include <neuroncustomop.h>

/* The kernel's own failure codes: the op's status becomes 0x10000 + code. */
#define SHAPE_MISMATCH 1

/* out = x * factor: an f32 tensor x and a float scalar factor; the output has as many
 * elements as x. Single core. Every failure stays in the invocation status, which
 * customop_cleanup() returns. */
static void scale(void) {
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
            for (uint32_t i = 0; i < count; i++) {
                dst[i] = src[i] * factor;
            }
        }
        customop_return_tensor(out);
    }
    customop_cleanup();
}

/* The kernel table the runtime registers. */
static const struct {
    const char *name;
    neuron_kernel_fn kernel;
} kernels[] = {
    {"scale", scale},
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
