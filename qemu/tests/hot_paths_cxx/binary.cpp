// torch::add and torch::mul over two float32 tensors into the output, for the hot-path
// figure of zip_into (qemu/tests/hot_paths.rs; docs/PERFORMANCE.md, "Math on the FPU and
// the C accessors"): the element loop alone, no copy back.
#include <torch/torch.h>

torch::Tensor add_into_output(const torch::Tensor& x, const torch::Tensor& y) {
    torch::Tensor out = get_dst_tensor();
    torch::add_out(out, x, y);
    return out;
}

torch::Tensor mul_into_output(const torch::Tensor& x, const torch::Tensor& y) {
    torch::Tensor out = get_dst_tensor();
    torch::mul_out(out, x, y);
    return out;
}
