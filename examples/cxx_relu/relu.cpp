// ReLU forward and backward with the element accessor, as the AWS Neuron custom-op
// documentation writes kernels: single core, the result returned in a new tensor.
#include <stdint.h>
#include <stdlib.h>
#include <torch/torch.h>

// out = max(x, 0)
torch::Tensor relu_forward(const torch::Tensor& t_in) {
    size_t num_elem = t_in.numel();
    torch::Tensor t_out = torch::zeros({num_elem}, torch::kFloat);

    auto in = t_in.accessor<float, 1>();
    auto out = t_out.accessor<float, 1>();
    for (size_t i = 0; i < num_elem; i++) {
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    }
    return t_out;
}

// grad_in = grad_out where x > 0, else 0
torch::Tensor relu_backward(const torch::Tensor& t_grad, const torch::Tensor& t_in) {
    size_t num_elem = t_in.numel();
    torch::Tensor t_out = torch::zeros({num_elem}, torch::kFloat);

    auto grad = t_grad.accessor<float, 1>();
    auto in = t_in.accessor<float, 1>();
    auto out = t_out.accessor<float, 1>();
    for (size_t i = 0; i < num_elem; i++) {
        out[i] = in[i] > 0.0f ? grad[i] : 0.0f;
    }
    return t_out;
}
