/*
 * <torch/tensor.h>: torch::Tensor (PyTorch's ATen/core/TensorBody.h): a counted
 * reference to a TensorImpl, its shape and dtype queries, data_ptr, the accessors it
 * hands out, the coherence policy and fill_.
 */
#ifndef TORCHNEURON_TORCH_TENSOR_H
#define TORCHNEURON_TORCH_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include <torch/accessors.h>

namespace torch {

class Tensor {
    torchneuron::TensorImpl *impl_ = nullptr;

    torchneuron::TensorImpl *checked() const {
        if (impl_ == nullptr) {
            torchneuron::fail(torchneuron::STATUS_SHAPE_MISMATCH, "torch: use of an undefined tensor");
        }
        return impl_;
    }

    template <class T, size_t N>
    T *accessor_data(const char *file, int line, const char *function) const {
        torchneuron::TensorImpl *impl = checked();
        torchneuron::check_dtype<T>(impl, "accessor<T, N>", file, line, function);
        if (int64_t(N) != impl->dim) {
            char because[48];
            snprintf(because, sizeof because, "has rank %d, but N is %d", int(impl->dim), int(N));
            torchneuron::fail_at(torchneuron::STATUS_RANK_MISMATCH, impl, "accessor<T, N>", file, line, function, because);
        }
        if (impl->write_streams != 0) {
            torchneuron::incoherent(impl, "torch: an accessor while a write stream on the tensor is open");
        }
        return static_cast<T *>(impl->data);
    }

  public:
    Tensor() = default;
    /* Takes over one reference to `impl` (for the factories and the generated entry). */
    explicit Tensor(torchneuron::TensorImpl *impl) : impl_(impl) {}
    Tensor(const Tensor &other) : impl_(other.impl_) {
        if (impl_ != nullptr) {
            impl_->refs++;
        }
    }
    Tensor(Tensor &&other) : impl_(other.impl_) { other.impl_ = nullptr; }
    Tensor &operator=(const Tensor &other) & {
        if (other.impl_ != nullptr) {
            other.impl_->refs++;
        }
        torchneuron::drop_impl(impl_);
        impl_ = other.impl_;
        return *this;
    }
    Tensor &operator=(Tensor &&other) & {
        if (this != &other) {
            torchneuron::drop_impl(impl_);
            impl_ = other.impl_;
            other.impl_ = nullptr;
        }
        return *this;
    }
    ~Tensor() { torchneuron::drop_impl(impl_); }

    torchneuron::TensorImpl *unsafeGetTensorImpl() const { return impl_; }
    bool defined() const { return impl_ != nullptr; }
    int64_t numel() const { return checked()->numel; }
    int64_t dim() const { return checked()->dim; }
    int64_t ndimension() const { return dim(); }
    IntArrayRef sizes() const { return IntArrayRef(checked()->sizes, size_t(checked()->dim)); }
    IntArrayRef strides() const { return IntArrayRef(checked()->strides, size_t(checked()->dim)); }
    int64_t size(int64_t d) const {
        int64_t n = dim();
        int64_t index = d < 0 ? d + n : d;
        if (index < 0 || index >= n) {
            torchneuron::fail(torchneuron::STATUS_RANK_MISMATCH, "torch: size(d) with d outside the tensor's dims");
        }
        return impl_->sizes[index];
    }
    int64_t stride(int64_t d) const { return checked()->strides[d < 0 ? d + dim() : d]; }
    ScalarType scalar_type() const { return checked()->dtype; }
    ScalarType dtype() const { return scalar_type(); }
    size_t element_size() const { return c10::elementSize(scalar_type()); }
    size_t itemsize() const { return element_size(); }
    size_t nbytes() const { return size_t(numel()) * element_size(); }
    bool is_contiguous() const { return true; }
    TensorOptions options() const { return TensorOptions(scalar_type()); }

    /* (`file`, `line` and `function` are the caller's, for the message of a T other than
     * the tensor's dtype: not arguments to pass. So for the accessors below.) */
    template <class T>
    T *data_ptr(const char *file = __builtin_FILE(), int line = __builtin_LINE(),
                const char *function = __builtin_FUNCTION()) const {
        torchneuron::check_dtype<T>(checked(), "data_ptr<T>", file, line, function);
        return static_cast<T *>(impl_->data);
    }
    void *data_ptr() const { return checked()->data; }

    template <class T, size_t N>
    TensorAccessor<T, N, true> accessor(const char *file = __builtin_FILE(), int line = __builtin_LINE(),
                                        const char *function = __builtin_FUNCTION()) const & {
        return TensorAccessor<T, N, true>(accessor_data<T, N>(file, line, function), impl_->sizes, impl_->strides);
    }
    template <class T, size_t N>
    TensorAccessor<T, N, false> accessor(const char *file = __builtin_FILE(), int line = __builtin_LINE(),
                                         const char *function = __builtin_FUNCTION()) & {
        return TensorAccessor<T, N, false>(accessor_data<T, N>(file, line, function), impl_->sizes, impl_->strides);
    }
    /* As in PyTorch: an accessor of a temporary would outlive its tensor. */
    template <class T, size_t N>
    TensorAccessor<T, N> accessor(const char *file = __builtin_FILE(), int line = __builtin_LINE(),
                                  const char *function = __builtin_FUNCTION()) && = delete;

    template <class T>
    TensorReadStreamAccessor<T> read_stream_accessor(const char *file = __builtin_FILE(), int line = __builtin_LINE(),
                                                     const char *function = __builtin_FUNCTION()) const & {
        torchneuron::TensorImpl *impl = checked();
        torchneuron::check_dtype<T>(impl, "read_stream_accessor<T>", file, line, function);
        if (impl->write_streams != 0) {
            torchneuron::incoherent(impl, "torch: a read stream opened while a write stream on the tensor is open");
        }
        return TensorReadStreamAccessor<T>(impl);
    }
    template <class T>
    TensorWriteStreamAccessor<T> write_stream_accessor(const char *file = __builtin_FILE(), int line = __builtin_LINE(),
                                                       const char *function = __builtin_FUNCTION()) & {
        torchneuron::TensorImpl *impl = checked();
        torchneuron::check_dtype<T>(impl, "write_stream_accessor<T>", file, line, function);
        if (impl->write_streams != 0 || impl->read_streams != 0) {
            torchneuron::incoherent(impl, "torch: a write stream opened while another stream on the tensor is open");
        }
        return TensorWriteStreamAccessor<T>(impl);
    }

    TensorTcmAccessor<true> tcm_accessor() const & { return TensorTcmAccessor<true>(checked()); }
    TensorTcmAccessor<false> tcm_accessor() & { return TensorTcmAccessor<false>(checked()); }

    CoherencyEnforcer::Policy get_accessor_coherence_policy() const { return checked()->policy; }
    void set_accessor_coherence_policy(CoherencyEnforcer::Policy policy) const { checked()->policy = policy; }

    /* Every element set to `value`, converted to the tensor's dtype. */
    const Tensor &fill_(const Scalar &value) const {
        torchneuron::TensorImpl *impl = checked();
        for (int64_t i = 0; impl->data != nullptr && i < impl->numel; i++) {
            if (value.isIntegral()) {
                torchneuron::store_int(impl, i, value.toLong());
            } else {
                torchneuron::store_float(impl, i, value.toFloat());
            }
        }
        return *this;
    }
};

} // namespace torch

#endif /* TORCHNEURON_TORCH_TENSOR_H */
