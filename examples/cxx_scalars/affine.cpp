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

// The sum of 65,536 elements taken cyclically from x, staged in a 256 KiB array on the
// stack, which -DSTACK_SIZE places in HBM; and where that array is (its 4 KiB page).
torch::Tensor stack_sum(const torch::Tensor& x) {
    volatile float scratch[65536];
    int64_t n = x.numel();
    auto in = x.accessor<float, 1>();
    for (int64_t i = 0; i < 65536; i++) {
        scratch[i] = in[i % n];
    }
    float sum = 0.0f;
    for (int64_t i = 0; i < 65536; i++) {
        sum += scratch[i];
    }
    torch::Tensor t_out = torch::empty({2}, torch::kFloat);
    auto out = t_out.accessor<float, 1>();
    out[0] = sum;
    out[1] = float(uintptr_t(&scratch[0]) >> 12);
    return t_out;
}
