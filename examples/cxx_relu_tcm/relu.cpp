// ReLU forward with the TCM accessor: the input is copied into a TCM buffer a chunk at
// a time, rectified there, and copied out to a new tensor (single core).
#include <stdint.h>
#include <stdlib.h>
#include <torch/torch.h>

torch::Tensor relu_forward(const torch::Tensor& t_in) {
    size_t num_elem = t_in.numel();
    torch::Tensor t_out = torch::zeros(t_in.sizes(), torch::kFloat);

    static constexpr size_t chunk = 1024;
    float* buffer = (float*)torch::neuron::tcm_malloc(sizeof(float) * chunk);
    if (buffer != nullptr) {
        auto in = t_in.tcm_accessor();
        auto out = t_out.tcm_accessor();
        for (size_t first = 0; first < num_elem; first += chunk) {
            size_t count = num_elem - first < chunk ? num_elem - first : chunk;
            in.tensor_to_tcm<float>(buffer, first, count);
            for (size_t j = 0; j < count; j++) {
                buffer[j] = buffer[j] > 0.0f ? buffer[j] : 0.0f;
            }
            out.tcm_to_tensor<float>(buffer, first, count);
        }
    }
    torch::neuron::tcm_free(buffer);
    return t_out;
}
