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

// out = in, then a store into an array it deleted.
torch::Tensor uses_deleted(const torch::Tensor& t_in) {
    torch::Tensor t_out = copy(t_in);
    volatile float* p = new float[16];
    p[0] = 1.0f;
    delete[] (float*)p;
    p[1] = 2.0f;  // after delete
    return t_out;
}

// out = in, keeping an array it never deletes (a warning).
torch::Tensor keeps_new(const torch::Tensor& t_in) {
    torch::Tensor t_out = copy(t_in);
    volatile float* p = new float[16];  // kept
    p[0] = 1.0f;
    return t_out;
}

// out = in, then copies 300 floats of the input into a 256-float TCM block.
torch::Tensor tcm_copy_past(const torch::Tensor& t_in) {
    torch::Tensor t_out = copy(t_in);
    float* buf = static_cast<float*>(torch::neuron::tcm_malloc(256 * sizeof(float)));
    auto in = t_in.tcm_accessor();
    in.tensor_to_tcm<float>(buf, 0, 300);  // past the TCM block
    torch::neuron::tcm_free(buf);
    return t_out;
}

// out = in, then 16 floats past an empty tensor, where the zeros after it would start.
torch::Tensor past_empty(const torch::Tensor& t_in) {
    torch::Tensor t_out = copy(t_in);
    torch::Tensor first = torch::empty({64}, torch::kFloat);
    torch::Tensor next = torch::zeros({64}, torch::kFloat);
    float* data = first.data_ptr<float>();
    for (int i = 0; i < 16; i++) {
        data[64 + i] = 6.0f;  // past the empty tensor
    }
    return t_out;
}

// out = in, then a store into element 5 of the (read-only) input, through its data pointer.
torch::Tensor into_input(const torch::Tensor& t_in) {
    torch::Tensor t_out = copy(t_in);
    t_in.data_ptr<float>()[5] = 0.0f;  // into the input
    return t_out;
}

// Every core copies the input's first 16 floats through a TCM block into the output's
// first 16: the same elements from every core, with nothing ordering them (a race).
torch::Tensor tcm_race(const torch::Tensor& t_in) {
    torch::Tensor t_out = get_dst_tensor();
    float* buf = static_cast<float*>(torch::neuron::tcm_malloc(16 * sizeof(float)));
    t_in.tcm_accessor().tensor_to_tcm<float>(buf, 0, 16);
    t_out.tcm_accessor().tcm_to_tensor<float>(buf, 0, 16);  // every core
    torch::neuron::tcm_free(buf);
    return t_out;
}

// out = in, then an array deleted twice.
torch::Tensor deletes_twice(const torch::Tensor& t_in) {
    torch::Tensor t_out = copy(t_in);
    float* p = new float[16];
    p[0] = 1.0f;
    delete[] p;
    delete[] p;  // twice
    return t_out;
}

// Every core copies its share; core 0 then stores into core 3's dataram: its own TCM
// block's address, 3 dataram scratches (64 KiB each) on (on 4 cores or more).
torch::Tensor into_other_dataram(const torch::Tensor& t_in) {
    torch::Tensor t_out = get_dst_tensor();
    auto in = t_in.accessor<float, 1>();
    auto out = t_out.accessor<float, 1>();
    uint32_t core = get_cpu_id(), cores = get_cpu_count();
    for (int64_t i = t_in.numel() * core / cores; i < t_in.numel() * (core + 1) / cores; i++) {
        out[i] = in[i];
    }
    char* mine = static_cast<char*>(torch::neuron::tcm_malloc(64));
    if (core == 0 && cores >= 4 && mine != nullptr) {
        *reinterpret_cast<volatile uint32_t*>(mine + 3 * 0x10000) = 0xDEAD;  // core 3's dataram
    }
    torch::neuron::tcm_free(mine);
    return t_out;
}
