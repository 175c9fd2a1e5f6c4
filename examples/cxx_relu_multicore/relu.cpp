// ReLU forward on all 8 cores: each core rectifies its own slice through TCM and
// writes it straight into the output of get_dst_tensor() (the tensor it returns is
// ignored, as the documentation says).
#include <stdint.h>
#include <stdlib.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

torch::Tensor relu_forward(const torch::Tensor& t_in) {
    size_t num_elem = t_in.numel();
    torch::Tensor t_out = get_dst_tensor();

    uint32_t cpu_id = get_cpu_id();
    uint32_t cpu_count = get_cpu_count();
    size_t share = num_elem / cpu_count;
    size_t begin = share * cpu_id;
    size_t end = cpu_id == cpu_count - 1 ? num_elem : begin + share;

    static constexpr size_t chunk = 1024;
    float* buffer = (float*)torch::neuron::tcm_malloc(sizeof(float) * chunk);
    if (buffer != nullptr) {
        auto in = t_in.tcm_accessor();
        auto out = t_out.tcm_accessor();
        for (size_t first = begin; first < end; first += chunk) {
            size_t count = end - first < chunk ? end - first : chunk;
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
