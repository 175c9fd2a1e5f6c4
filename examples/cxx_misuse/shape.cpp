// Shape functions and registration of the misuse library (compiled for the host).
#include <stdint.h>
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor like_input(torch::Tensor t_in) {
    return torch::empty(t_in.sizes(), torch::kFloat);
}

torch::Tensor pair(torch::Tensor t_in) {
    return torch::empty({2}, torch::kFloat);
}

torch::Tensor triple(torch::Tensor t_in) {
    return torch::empty({3}, torch::kFloat);
}

NEURON_LIBRARY(misuse_ops, m) {
    m.def("wrong_dtype", &like_input, "wrong_dtype");
    m.def("wrong_rank", &like_input, "wrong_rank");
    m.def("failed_assert", &like_input, "failed_assert");
    m.def("heap_exhausted", &like_input, "heap_exhausted");
    m.def("tcm_past_pool", &pair, "tcm_past_pool");
    m.def("cxx_runtime", &triple, "cxx_runtime");
    m.def("wrong_return_shape", &like_input, "wrong_return_shape");
    m.def("bitwise_on_floats", &like_input, "bitwise_on_floats");
    m.def("tcm_copy_past_end", &like_input, "tcm_copy_past_end");
}
