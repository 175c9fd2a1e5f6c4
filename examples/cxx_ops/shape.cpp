// Shape functions and registration of the operations library (compiled for the host).
#include <stdint.h>
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor float_ops_shape(torch::Tensor x, torch::Tensor y) {
    return torch::empty({20, x.numel()}, torch::kFloat);
}

torch::Tensor int_ops_shape(torch::Tensor k, torch::Tensor m) {
    return torch::empty({11, k.numel()}, torch::kInt);
}

NEURON_LIBRARY(ops, m) {
    m.def("float_ops", &float_ops_shape, "float_ops");
    m.def("int_ops", &int_ops_shape, "int_ops");
}
