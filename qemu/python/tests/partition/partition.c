/*
 * Kernels with the bugs the property checks are for (tests/test_testing.py), built
 * from this file alone the vendor's way (`load(name=..., compute_srcs=[...])`).
 *
 * double_rows: out = 2 * x over the rows of a float32 tensor (its last dimension is a
 * row), the rows split over the cores. Its bug: each core takes rows / cores rows, so
 * the last rows / cores remainder rows are never written. Correct when the row count
 * divides by the core count.
 *
 * sum_long: out[i] = x[0] + ... + x[i] (int32 in, int64 out), summed in an
 * `unsigned long`: 64 bits on the host tier (x86-64), 32 on the device (Xtensa), so the
 * two tiers differ once a sum passes 2^32. Core 0 writes it all.
 */
#include <neuroncustomop.h>

#define SHAPE_MISMATCH 1

static void double_rows(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (x != NULL && out != NULL) {
        uint32_t count = customop_tensor_numel(x);
        uint32_t row = customop_tensor_dim(x, customop_tensor_rank(x) - 1);
        const float *src = customop_tensor_data(x);
        float *dst = customop_tensor_data(out);
        if (customop_tensor_dtype(x) != NEURON_ISA_TPB_DTYPE_FLOAT32 ||
            customop_tensor_dtype(out) != NEURON_ISA_TPB_DTYPE_FLOAT32 || customop_tensor_numel(out) != count) {
            customop_fail(SHAPE_MISMATCH);
        } else if (src != NULL && dst != NULL && row > 0) {
            uint32_t rows = count / row;
            uint32_t share = rows / get_cpu_count(); /* the bug: the remainder rows are nobody's */
            uint32_t first = share * get_cpu_id();
            for (uint32_t i = first * row; i < (first + share) * row; i++) {
                dst[i] = src[i] * 2.0f;
            }
        }
        customop_return_tensor(out);
    }
    customop_cleanup();
}

static void sum_long(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (x != NULL && out != NULL) {
        uint32_t count = customop_tensor_numel(x);
        const int32_t *src = customop_tensor_data(x);
        int64_t *dst = customop_tensor_data(out);
        if (customop_tensor_dtype(x) != NEURON_ISA_TPB_DTYPE_INT32 ||
            customop_tensor_dtype(out) != NEURON_ISA_TPB_DTYPE_INT64 || customop_tensor_numel(out) != count) {
            customop_fail(SHAPE_MISMATCH);
        } else if (src != NULL && dst != NULL && get_cpu_id() == 0) {
            unsigned long sum = 0;
            for (uint32_t i = 0; i < count; i++) {
                sum += (uint32_t)src[i];
                dst[i] = (int64_t)sum;
            }
        }
        customop_return_tensor(out);
    }
    customop_cleanup();
}

static const struct {
    const char *name;
    neuron_kernel_fn kernel;
} kernels[] = {
    {"double_rows", double_rows},
    {"sum_long", sum_long},
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
