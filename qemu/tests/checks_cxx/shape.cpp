// Shape functions and registration of the checks' C++ kernels (compiled for the host).
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor like_input(torch::Tensor t_in) {
    return torch::empty(t_in.sizes(), torch::kFloat);
}

NEURON_LIBRARY(checks_ops, m) {
    m.def("copy", &like_input, "copy");
    m.def("past_end", &like_input, "past_end");
    m.def("uses_deleted", &like_input, "uses_deleted");
    m.def("keeps_new", &like_input, "keeps_new");
    m.def("tcm_copy_past", &like_input, "tcm_copy_past");
    m.def("past_empty", &like_input, "past_empty");
    m.def("into_input", &like_input, "into_input");
    m.def("tcm_race", &like_input, "tcm_race");
    m.def("deletes_twice", &like_input, "deletes_twice");
    m.def("into_other_dataram", &like_input, "into_other_dataram");
}
