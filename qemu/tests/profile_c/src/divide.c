/*
 * divide: out[i] = x[i] / d over an f32 tensor, for the profile's tests
 * (qemu/tests/profile.rs), built from one source in three ways by compile-time switches:
 *
 * - as is: a division per element (the runtime's `__divsf3`, about 30 instructions);
 * - `-DRECIPROCAL`: the edit an author makes after profiling it, one division and a
 *   multiply per element (`ncop profile diff` of the two);
 * - `-DRANGES`: the loop between range markers, which cost no instruction (its count
 *   equals the plain build's).
 *
 * Arguments: the f32 tensor x and the float d; the output is like x.
 */
#include <neuroncustomop.h>

static void divide(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();
    float d = customop_next_float();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (x != NULL && out != NULL) {
        uint32_t count = customop_tensor_numel(x);
        const float *src = customop_tensor_data(x);
        float *dst = customop_tensor_data(out);
        if (src != NULL && dst != NULL && customop_tensor_numel(out) == count) {
#ifdef RANGES
            NCOP_RANGE_BEGIN("divide loop");
#endif
#ifdef RECIPROCAL
            float r = 1.0f / d;
            for (uint32_t i = 0; i < count; i++) {
                dst[i] = src[i] * r;
            }
#else
            for (uint32_t i = 0; i < count; i++) {
                dst[i] = src[i] / d;
            }
#endif
#ifdef RANGES
            NCOP_RANGE_END("divide loop");
#endif
        }
        customop_return_tensor(out);
    }
    customop_cleanup();
}

/* The kernel table the runtime registers (neuroncustomop.h: get_func_*). */
int get_func_cnt(void) {
    return 1;
}

void *get_func_ptr(int index) {
    return index == 0 ? (void *)divide : NULL;
}

const char *get_func_name(int index) {
    return index == 0 ? "divide" : NULL;
}
