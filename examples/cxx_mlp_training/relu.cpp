// ReLU forward and backward over [batch, features] float32 tensors, with the element
// accessor (single core): the kernels of the AWS training sample's MLP, in the shape
// that sample writes them. Each returns a new tensor.
#include <stdint.h>
#include <stdlib.h>
#include <torch/torch.h>

// out = max(x, 0)
torch::Tensor relu_forward(const torch::Tensor& x) {
    torch::Tensor out = torch::zeros(x.sizes(), torch::kFloat);
    auto in_acc = x.accessor<float, 2>();
    auto out_acc = out.accessor<float, 2>();
    // int, not int64_t, loop counters: the cores are 32-bit (op-author guide, section 8).
    int rows = x.size(0), cols = x.size(1);
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++) {
            out_acc[i][j] = in_acc[i][j] > 0.0f ? in_acc[i][j] : 0.0f;
        }
    }
    return out;
}

// grad_x = grad where x > 0, else 0
torch::Tensor relu_backward(const torch::Tensor& grad, const torch::Tensor& x) {
    torch::Tensor out = torch::zeros(x.sizes(), torch::kFloat);
    auto grad_acc = grad.accessor<float, 2>();
    auto in_acc = x.accessor<float, 2>();
    auto out_acc = out.accessor<float, 2>();
    int rows = x.size(0), cols = x.size(1);
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++) {
            out_acc[i][j] = in_acc[i][j] > 0.0f ? grad_acc[i][j] : 0.0f;
        }
    }
    return out;
}
