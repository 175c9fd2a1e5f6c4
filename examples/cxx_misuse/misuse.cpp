// Kernels that misuse the API or exhaust a resource, one per op: each must end its op
// with a named status (or, for tcm_malloc, see null) and leave the next op unharmed.
// And one that uses the C++ runtime: new/delete, a function-local static, virtuals.
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <torch/torch.h>

torch::Tensor wrong_dtype(const torch::Tensor& t_in) {
    auto in = t_in.accessor<int32_t, 1>();  // t_in holds floats: DTYPE_MISMATCH
    return torch::full({1}, float(in[0]), torch::kFloat);
}

torch::Tensor wrong_rank(const torch::Tensor& t_in) {
    auto in = t_in.accessor<float, 2>();  // t_in has one dimension: RANK_MISMATCH
    return torch::full({1}, in[0][0], torch::kFloat);
}

torch::Tensor failed_assert(const torch::Tensor& t_in) {
    assert(t_in.numel() == 0);
    return t_in;
}

torch::Tensor heap_exhausted(const torch::Tensor& t_in) {
    torch::Tensor huge = torch::zeros({16384, 16384}, torch::kFloat);  // 1 GiB: OUT_OF_MEMORY
    return huge;
}

// One element past the input through the TCM accessor: OUT_OF_BOUNDS, naming this line.
torch::Tensor tcm_copy_past_end(const torch::Tensor& t_in) {
    float buffer[4];
    t_in.tcm_accessor().tensor_to_tcm<float>(buffer, t_in.numel() - 3, 4);
    return torch::full({1}, buffer[0], torch::kFloat);
}

// out[0] = 1 if a 16 KiB + 4 byte tcm_malloc is null (the pool is 16 KiB), out[1] = 1 if
// a 4 KiB one is not.
torch::Tensor tcm_past_pool(const torch::Tensor& t_in) {
    torch::Tensor t_out = torch::zeros({2}, torch::kFloat);
    auto out = t_out.accessor<float, 1>();
    void* too_big = torch::neuron::tcm_malloc(16 * 1024 + 4);
    void* fits = torch::neuron::tcm_malloc(4 * 1024);
    out[0] = too_big == nullptr ? 1.0f : 0.0f;
    out[1] = fits != nullptr ? 1.0f : 0.0f;
    torch::neuron::tcm_free(fits);
    return t_out;
}

struct Shape {
    virtual ~Shape() {}
    virtual float area() const = 0;
};
struct Square : Shape {
    float side;
    explicit Square(float s) : side(s) {}
    float area() const override { return side * side; }
};

static int constructions = 0;
struct Counter {
    int value;
    Counter() : value(++constructions) {}
};

static const Counter& counter() {
    static Counter instance;  // initialised once: __cxa_guard_acquire / release
    return instance;
}

// out = [area of a heap Square of side x[0], the static's value (always 1), sum of a new[] array]
torch::Tensor cxx_runtime(const torch::Tensor& t_in) {
    auto in = t_in.accessor<float, 1>();
    Shape* shape = new Square(in[0]);
    float* values = new float[4]{1.0f, 2.0f, 3.0f, 4.0f};
    torch::Tensor t_out = torch::zeros({3}, torch::kFloat);
    auto out = t_out.accessor<float, 1>();
    out[0] = shape->area();
    out[1] = float(counter().value + counter().value - 1);
    out[2] = values[0] + values[1] + values[2] + values[3];
    delete shape;
    delete[] values;
    return t_out;
}

torch::Tensor wrong_return_shape(const torch::Tensor& t_in) {
    return torch::zeros({3}, torch::kFloat);  // the output has t_in's shape: SHAPE_MISMATCH
}

torch::Tensor bitwise_on_floats(const torch::Tensor& t_in) {
    return torch::bitwise_not(t_in);  // floats: UNSUPPORTED_DTYPE
}
