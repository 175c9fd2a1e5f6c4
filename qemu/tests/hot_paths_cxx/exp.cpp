// torch::exp as a kernel calls it, for the hot-path goal of qemu/tests/hot_paths.rs
// (docs/PERFORMANCE.md, "Math on the FPU and the C accessors"): a new tensor (`exp_new`),
// and into the output (`exp_into_output`, no copy back).
#include <torch/torch.h>

torch::Tensor exp_new(const torch::Tensor& x) {
    return torch::exp(x);
}

torch::Tensor exp_into_output(const torch::Tensor& x) {
    torch::Tensor out = get_dst_tensor();
    torch::exp_out(out, x);
    return out;
}
