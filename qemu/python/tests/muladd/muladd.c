/*
 * muladd: out[i] = x[i] * mul + add over an int32 tensor, with an `int` mul and a
 * `long long` add (truncated to 32 bits, wrapping). A C library outside any project
 * layout: the Python tests build it from this file alone, the vendor's way
 * (`load(name=..., compute_srcs=[...], build_directory=...)`). A second kernel, spin,
 * never returns by itself.
 */
#include <neuroncustomop.h>

#define NOT_INT32 1

static void muladd(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();
    int32_t mul = customop_next_int();
    int64_t add = customop_next_longlong();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (x != NULL && out != NULL) {
        uint32_t count = customop_tensor_numel(x);
        const int32_t *src = customop_tensor_data(x);
        int32_t *dst = customop_tensor_data(out);
        if (customop_tensor_dtype(x) != NEURON_ISA_TPB_DTYPE_INT32 ||
            customop_tensor_dtype(out) != NEURON_ISA_TPB_DTYPE_INT32 || customop_tensor_numel(out) != count) {
            customop_fail(NOT_INT32);
        } else if (src != NULL && dst != NULL) {
            for (uint32_t i = 0; i < count; i++) {
                dst[i] = (int32_t)((uint32_t)src[i] * (uint32_t)mul + (uint32_t)add);
            }
        }
        customop_return_tensor(out);
    }
    customop_cleanup();
}

/* spin: loops until something stops it (its instruction budget, or the caller's
 * Ctrl-C: test_project.py's interrupt test). */
static void spin(void) {
    volatile uint32_t forever = 1;
    while (forever) {
    }
}

static const struct {
    const char *name;
    neuron_kernel_fn kernel;
} kernels[] = {
    {"muladd", muladd},
    {"spin", spin},
};

#define KERNELS ((int)(sizeof kernels / sizeof kernels[0]))

int get_func_cnt(void) {
    return KERNELS;
}

void *get_func_ptr(int index) {
    return index >= 0 && index < KERNELS ? (void *)kernels[index].kernel : NULL;
}

const char *get_func_name(int index) {
    return index >= 0 && index < KERNELS ? kernels[index].name : NULL;
}
