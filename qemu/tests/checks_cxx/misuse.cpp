// Kernels on the AWS torch API that trip the device's memory checks
// (qemu/tests/checks.rs), and one that does not. Each writes the output in place,
// through get_dst_tensor().
#include <stdint.h>
#include <torch/torch.h>

// out = in: writes nothing it should not.
torch::Tensor copy(const torch::Tensor& t_in) {
    torch::Tensor t_out = get_dst_tensor();
    auto in = t_in.accessor<float, 1>();
    auto out = t_out.accessor<float, 1>();
    for (int i = 0; i < t_in.numel(); i++) {
        out[i] = in[i];
    }
    return t_out;
}

// out = in, then 16 floats past the end of the output, through its data pointer.
torch::Tensor past_end(const torch::Tensor& t_in) {
    torch::Tensor t_out = copy(t_in);
    float* data = t_out.data_ptr<float>();
    for (int i = 0; i < 16; i++) {
        data[t_out.numel() + i] = 3.0f;
    }
    return t_out;
}
