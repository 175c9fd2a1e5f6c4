// Scalar arguments and the element-wise operations: int64_t and double arguments, as
// the AWS documentation's kernels take them, and torch::mul / add / bitwise_and.
#include <stdint.h>
#include <torch/torch.h>

// out = x * scale + offset
torch::Tensor affine(const torch::Tensor& x, int64_t offset, double scale) {
    torch::Tensor scaled = torch::mul(x, scale);
    return torch::add(scaled, offset);
}

// out = (x & mask) - 1 over an int32 tensor, written into the output in place
torch::Tensor mask_minus_one(const torch::Tensor& x, int64_t mask) {
    torch::Tensor t_out = get_dst_tensor();
    torch::bitwise_and_out(t_out, x, mask);
    torch::sub_out(t_out, t_out, 1);
    return t_out;
}

// out = x * factor + count, with C int and float arguments
torch::Tensor scale_add(const torch::Tensor& x, int count, float factor) {
    torch::Tensor t_out = torch::empty(x.sizes(), torch::kFloat);
    auto in = x.accessor<float, 1>();
    auto out = t_out.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i++) {
        out[i] = in[i] * factor + count;
    }
    return t_out;
}

// x rounded to half precision (nearest, ties to even), through torch::mul_out
torch::Tensor to_half(const torch::Tensor& x) {
    torch::Tensor h = torch::empty(x.sizes(), torch::kHalf);
    torch::mul_out(h, x, 1);
    return h;
}

// x rounded to bfloat16, through torch::add_out
torch::Tensor to_bfloat16(const torch::Tensor& x) {
    torch::Tensor b = torch::empty(x.sizes(), torch::kBFloat16);
    torch::add_out(b, x, 0);
    return b;
}
