/*
 * <torch/neuron.h>: the Neuron additions to the torch API: the op's output tensor
 * (get_dst_tensor()) and the op's TCM pool (torch::neuron::tcm_malloc / tcm_free).
 */
#ifndef TORCHNEURON_TORCH_NEURON_H
#define TORCHNEURON_TORCH_NEURON_H

#include <stddef.h>

#include <torch/tensor.h>

namespace torch {

namespace neuron {
/* The op's 16 KiB TCM pool; null when it has no room. */
inline void *tcm_malloc(size_t nbytes) {
#ifndef TORCHNEURON_HOST
    return ::tcm_malloc(nbytes);
#else
    return (void)nbytes, nullptr;
#endif
}
inline void tcm_free(void *ptr) {
#ifndef TORCHNEURON_HOST
    ::tcm_free(ptr);
#else
    (void)ptr;
#endif
}
} // namespace neuron

} // namespace torch

namespace torchneuron {

/* The output descriptor as the kernel took it through get_dst_tensor(), for the
 * generated entry: set when the kernel took it, reset before each kernel. */
struct DstState {
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *descriptor;
    TensorImpl *impl;
};
inline DstState &dst_state() {
    static DstState state = {nullptr, nullptr};
    return state;
}

#ifndef TORCHNEURON_HOST
/* A tensor over a descriptor the pull stream handed out (an input, or the output);
 * null when the descriptor is null (its status is already recorded). */
inline TensorImpl *impl_from_descriptor(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *descriptor) {
    static const c10::ScalarType by_dtype[] = {
        /* NEURON_ISA_TPB_DTYPE 1..8 */
        c10::ScalarType::Float, c10::ScalarType::BFloat16, c10::ScalarType::Half, c10::ScalarType::Int,
        c10::ScalarType::Char,  c10::ScalarType::Long,     c10::ScalarType::Short, c10::ScalarType::Byte,
    };
    if (descriptor == nullptr) {
        return nullptr;
    }
    uint32_t dtype = customop_tensor_dtype(descriptor);
    uint32_t rank = customop_tensor_rank(descriptor);
    if (dtype == 0 || dtype > 8 || rank == 0) {
        return nullptr; /* the descriptor is invalid: its status is recorded */
    }
    int64_t sizes[kMaxDims];
    for (uint32_t i = 0; i < rank; i++) {
        sizes[i] = customop_tensor_dim(descriptor, i);
    }
    TensorImpl *impl = new_impl(c10::IntArrayRef(sizes, rank), by_dtype[dtype - 1], false);
    impl->data = customop_tensor_data(descriptor);
    return impl;
}
#endif

} // namespace torchneuron

#ifndef TORCHNEURON_HOST
/* The op's output tensor: write the result here (mandatory on several cores) and the
 * tensor the kernel returns is ignored. */
inline torch::Tensor get_dst_tensor() {
    torchneuron::DstState &state = torchneuron::dst_state();
    if (state.impl == nullptr) {
        state.descriptor = torchneuron_c_get_dst_tensor();
        state.impl = torchneuron::impl_from_descriptor(state.descriptor);
        if (state.impl == nullptr) {
            torchneuron::fail(torchneuron::STATUS_SHAPE_MISMATCH, "get_dst_tensor: the op has no usable output");
        }
        state.impl->origin = torchneuron::kOpOutput;
    }
    state.impl->refs++;
    return torch::Tensor(state.impl);
}
#endif

#endif /* TORCHNEURON_TORCH_NEURON_H */
