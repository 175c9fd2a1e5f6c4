// The documented element-wise operations, each into a row of the output, for a check
// against a host reference: float operations over (x, y), integer ones over (k, m).
#include <stdint.h>
#include <torch/torch.h>

// Copies each of `rows` (1-D, n elements) into a row of a new [count, n] tensor.
template <class T>
static torch::Tensor stack_rows(const torch::Tensor* rows, int64_t count, int64_t n, torch::ScalarType dtype) {
    torch::Tensor out = torch::empty({count, n}, dtype);
    auto o = out.accessor<T, 2>();
    for (int64_t r = 0; r < count; r++) {
        auto row = rows[r].accessor<T, 1>();
        for (int64_t i = 0; i < n; i++) {
            o[r][i] = row[i];
        }
    }
    return out;
}

torch::Tensor float_ops(const torch::Tensor& x, const torch::Tensor& y) {
    torch::Tensor a = torch::abs(x);
    const torch::Tensor rows[] = {
        torch::abs(x),         torch::ceil(x),          torch::floor(x),      torch::sin(x),
        torch::cos(x),         torch::tan(x),           torch::log(a),        torch::log2(a),
        torch::log10(a),       torch::exp(x),           torch::pow(x, 2),     torch::pow(2, x),
        torch::pow(a, y),      torch::clamp(x, -1, 1),  torch::add(x, y, 0.5), torch::sub(x, y, 2),
        torch::mul(x, y),      torch::div(x, y),        torch::mul(x, 3),     torch::div(x, 4),
    };
    return stack_rows<float>(rows, 20, x.numel(), torch::kFloat);
}

torch::Tensor int_ops(const torch::Tensor& k, const torch::Tensor& m) {
    torch::Tensor sum = torch::empty(k.sizes(), torch::kInt);
    torch::add_out(sum, k, m);
    const torch::Tensor rows[] = {
        torch::abs(k),               torch::add(k, 5),             torch::sub(k, m, 3),
        torch::mul(k, m),            torch::div(k, 7),             torch::pow(k, 2),
        torch::clamp(k, -10, 10),    torch::bitwise_and(k, m),     torch::bitwise_or(3, k),
        torch::bitwise_not(k),       sum,
    };
    return stack_rows<int32_t>(rows, 11, k.numel(), torch::kInt);
}
