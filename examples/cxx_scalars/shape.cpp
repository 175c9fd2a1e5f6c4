// Shape functions and registration of the scalar library (compiled for the host).
#include <stdint.h>
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor affine_shape(torch::Tensor x, int64_t offset, double scale) {
    return torch::empty(x.sizes(), torch::kFloat);
}

torch::Tensor mask_shape(torch::Tensor x, int64_t mask) {
    return torch::empty(x.sizes(), torch::kInt);
}

torch::Tensor scale_add_shape(torch::Tensor x, int count, float factor) {
    return torch::empty(x.sizes(), torch::kFloat);
}

torch::Tensor half_shape(torch::Tensor x) {
    return torch::empty(x.sizes(), torch::kHalf);
}

torch::Tensor bfloat16_shape(torch::Tensor x) {
    return torch::empty(x.sizes(), torch::kBFloat16);
}

torch::Tensor two_floats(torch::Tensor x) {
    return torch::empty({2}, torch::kFloat);
}

NEURON_LIBRARY(scalar_ops, m) {
    m.def("affine", &affine_shape, "affine");
    m.def("mask_minus_one", &mask_shape, "mask_minus_one");
    m.def("scale_add", &scale_add_shape, "scale_add");
    m.def("to_half", &half_shape, "to_half");
    m.def("to_bfloat16", &bfloat16_shape, "to_bfloat16");
    m.def("stack_sum", &two_floats, "stack_sum");
}
