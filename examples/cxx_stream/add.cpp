// Element-wise add with stream accessors, and the coherence policy: opening a read
// stream on a tensor while a write stream on it is open is an error under COHERENT (the
// default) and allowed under INCOHERENT_QUIET.
#include <assert.h>
#include <stdint.h>
#include <torch/torch.h>

torch::Tensor tensor_add(const torch::Tensor& t1, const torch::Tensor& t2) {
    assert(t1.sizes() == t2.sizes());
    torch::Tensor t_out = torch::empty(t1.sizes(), torch::kFloat);

    auto a = t1.read_stream_accessor<float>();
    auto b = t2.read_stream_accessor<float>();
    auto out = t_out.write_stream_accessor<float>();
    for (int64_t i = 0; i < t1.numel(); i++) {
        out.write(a.read() + b.read());
    }
    out.close();
    return t_out;
}

// Copies t1 through a scratch tensor that is read while it is still being written.
static torch::Tensor copy_through_scratch(const torch::Tensor& t1, torch::CoherencyEnforcer::Policy policy) {
    torch::Tensor scratch = torch::empty(t1.sizes(), torch::kFloat);
    scratch.set_accessor_coherence_policy(policy);
    torch::Tensor t_out = torch::empty(t1.sizes(), torch::kFloat);
    auto in = t1.read_stream_accessor<float>();
    auto write_scratch = scratch.write_stream_accessor<float>();
    for (int64_t i = 0; i < t1.numel(); i++) {
        write_scratch.write(in.read());
    }
    auto read_scratch = scratch.read_stream_accessor<float>();  // write_scratch is still open
    auto out = t_out.write_stream_accessor<float>();
    for (int64_t i = 0; i < t1.numel(); i++) {
        out.write(read_scratch.read());
    }
    return t_out;
}

torch::Tensor copy_coherent(const torch::Tensor& t1, const torch::Tensor& t2) {
    return copy_through_scratch(t1, torch::CoherencyEnforcer::COHERENT);
}

torch::Tensor copy_incoherent(const torch::Tensor& t1, const torch::Tensor& t2) {
    return copy_through_scratch(t1, torch::CoherencyEnforcer::INCOHERENT_QUIET);
}
