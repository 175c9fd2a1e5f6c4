// Shape functions and registration of the hot-path kernels (compiled for the host).
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor like_input(torch::Tensor x) {
    return torch::empty(x.sizes(), x.scalar_type());
}

torch::Tensor like_first(torch::Tensor x, torch::Tensor y) {
    return torch::empty(x.sizes(), x.scalar_type());
}

NEURON_LIBRARY(hot_paths_ops, m) {
    m.def("exp_new", &like_input, "exp_new");
    m.def("exp_into_output", &like_input, "exp_into_output");
    m.def("add_into_output", &like_first, "add_into_output");
    m.def("mul_into_output", &like_first, "mul_into_output");
}
