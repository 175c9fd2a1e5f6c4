/*
 * <torch/accessors.h>: the ways a kernel reaches a tensor's elements: the element
 * accessor TensorAccessor<T, N> (PyTorch's ATen/core/TensorAccessor.h), and the Neuron
 * additions, the read and write stream accessors and the TCM accessor.
 */
#ifndef TORCHNEURON_TORCH_ACCESSORS_H
#define TORCHNEURON_TORCH_ACCESSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <torch/tensor_impl.h>

namespace torch {

/* The element offset of index `i` along a dimension of stride `stride`. The torch API
 * takes int64_t; a 64-bit multiply is a call on this 32-bit core (__muldi3, dozens of
 * instructions per element access), while the address is pointer-sized anyway: the
 * product modulo 2^32 (unsigned, so wrapping is defined) gives the same address for
 * every index, in range or not. */
inline size_t element_offset(int64_t stride, int64_t i) {
    return static_cast<size_t>(stride) * static_cast<size_t>(i);
}

/* Element access over N dimensions with strides; `[]` chains down to an element. */
template <class T, size_t N, bool ReadOnly = false>
class TensorAccessor {
    using Element = typename torchneuron::conditional<ReadOnly, const T, T>::type;
    Element *data_;
    const int64_t *sizes_;
    const int64_t *strides_;

  public:
    TensorAccessor(Element *data, const int64_t *sizes, const int64_t *strides)
        : data_(data), sizes_(sizes), strides_(strides) {}
    TensorAccessor<T, N - 1, ReadOnly> operator[](int64_t i) const {
        return TensorAccessor<T, N - 1, ReadOnly>(data_ + element_offset(strides_[0], i), sizes_ + 1, strides_ + 1);
    }
    int64_t size(int64_t d) const { return sizes_[d]; }
    int64_t stride(int64_t d) const { return strides_[d]; }
    Element *data() const { return data_; }
};

template <class T, bool ReadOnly>
class TensorAccessor<T, 1, ReadOnly> {
    using Element = typename torchneuron::conditional<ReadOnly, const T, T>::type;
    Element *data_;
    const int64_t *sizes_;
    const int64_t *strides_;

  public:
    TensorAccessor(Element *data, const int64_t *sizes, const int64_t *strides)
        : data_(data), sizes_(sizes), strides_(strides) {}
    Element &operator[](int64_t i) const { return data_[element_offset(strides_[0], i)]; }
    int64_t size(int64_t d) const { return sizes_[d]; }
    int64_t stride(int64_t d) const { return strides_[d]; }
    Element *data() const { return data_; }
};

/* Sequential reads, first element to last. Move-only; closes when it goes out of scope. */
template <class T>
class TensorReadStreamAccessor {
    torchneuron::TensorImpl *impl_;
    const T *next_;
    const T *end_;

  public:
    explicit TensorReadStreamAccessor(torchneuron::TensorImpl *impl)
        : impl_(impl), next_(static_cast<const T *>(impl->data)), end_(next_ + impl->numel) {
        impl_->refs++;
        impl_->read_streams++;
    }
    TensorReadStreamAccessor(TensorReadStreamAccessor &&other)
        : impl_(other.impl_), next_(other.next_), end_(other.end_) {
        other.impl_ = nullptr;
    }
    TensorReadStreamAccessor(const TensorReadStreamAccessor &) = delete;
    TensorReadStreamAccessor &operator=(const TensorReadStreamAccessor &) = delete;
    ~TensorReadStreamAccessor() { close(); }

    /* The next element. Reading past the end ends the op with OUT_OF_BOUNDS (the AWS
     * documentation leaves it undefined). */
    T read() {
        if (next_ == end_ || impl_ == nullptr) {
            torchneuron::fail(torchneuron::STATUS_OUT_OF_BOUNDS, "torch: read past the end of a read stream");
        }
        return *next_++;
    }

    int close() {
        if (impl_ != nullptr) {
            impl_->read_streams--;
            torchneuron::drop_impl(impl_);
            impl_ = nullptr;
        }
        return 0;
    }
};

/* Sequential writes, first element to last. Move-only; closes (and so flushes) when it
 * goes out of scope. */
template <class T>
class TensorWriteStreamAccessor {
    torchneuron::TensorImpl *impl_;
    T *next_;
    T *end_;

  public:
    explicit TensorWriteStreamAccessor(torchneuron::TensorImpl *impl)
        : impl_(impl), next_(static_cast<T *>(impl->data)), end_(next_ + impl->numel) {
        impl_->refs++;
        impl_->write_streams++;
    }
    TensorWriteStreamAccessor(TensorWriteStreamAccessor &&other)
        : impl_(other.impl_), next_(other.next_), end_(other.end_) {
        other.impl_ = nullptr;
    }
    TensorWriteStreamAccessor(const TensorWriteStreamAccessor &) = delete;
    TensorWriteStreamAccessor &operator=(const TensorWriteStreamAccessor &) = delete;
    ~TensorWriteStreamAccessor() { close(); }

    /* Writes the next element. Writing past the end ends the op with OUT_OF_BOUNDS. */
    void write(T value) {
        if (next_ == end_ || impl_ == nullptr) {
            torchneuron::fail(torchneuron::STATUS_OUT_OF_BOUNDS, "torch: write past the end of a write stream");
        }
        *next_++ = value;
    }

    int close() {
        if (impl_ != nullptr) {
            impl_->write_streams--;
            torchneuron::drop_impl(impl_);
            impl_ = nullptr;
        }
        return 0;
    }
};

/* Copies between a tensor (indexed as if flat) and a TCM buffer. */
template <bool ReadOnly>
class TensorTcmAccessor {
    torchneuron::TensorImpl *impl_;

    /* The copy's first element; a copy past the tensor ends the op with OUT_OF_BOUNDS,
     * naming the copy and the kernel's line that asked for it (`file`, `line` and
     * `function`: the defaults of the copies below), as a failed assert does. */
    template <class T>
    T *at(size_t offset, size_t n, const char *what, const char *file, int line, const char *function) const {
        torchneuron::check_dtype<T>(impl_, what, file, line, function);
        if (offset > size_t(impl_->numel) || n > size_t(impl_->numel) - offset) {
            char message[256];
            snprintf(message, sizeof message,
                     "torch: %s of %u elements from element %u is outside the tensor's %u elements, at %s:%d (%s)",
                     what, unsigned(n), unsigned(offset), unsigned(impl_->numel), file, line, function);
            torchneuron::fail(torchneuron::STATUS_OUT_OF_BOUNDS, message);
        }
        return static_cast<T *>(impl_->data) + offset;
    }

  public:
    explicit TensorTcmAccessor(torchneuron::TensorImpl *impl) : impl_(impl) { impl_->refs++; }
    TensorTcmAccessor(const TensorTcmAccessor &other) : impl_(other.impl_) { impl_->refs++; }
    TensorTcmAccessor &operator=(const TensorTcmAccessor &) = delete;
    ~TensorTcmAccessor() { torchneuron::drop_impl(impl_); }

    /* num_elem elements from tensor_offset on, into tcm_ptr. (`file`, `line` and
     * `function` are the caller's, for the message of a copy past the tensor: not
     * arguments to pass.) */
    template <class T>
    void tensor_to_tcm(T *tcm_ptr, size_t tensor_offset, size_t num_elem, const char *file = __builtin_FILE(),
                       int line = __builtin_LINE(), const char *function = __builtin_FUNCTION()) const {
        T *from = at<T>(tensor_offset, num_elem, "tensor_to_tcm", file, line, function);
        torchneuron::copy_elements(tcm_ptr, from, num_elem);
    }

    /* num_elem elements from tcm_ptr into the tensor from tensor_offset on. */
    template <class T>
    void tcm_to_tensor(T *tcm_ptr, size_t tensor_offset, size_t num_elem, const char *file = __builtin_FILE(),
                       int line = __builtin_LINE(), const char *function = __builtin_FUNCTION()) const {
        static_assert(!ReadOnly, "tcm_to_tensor writes the tensor: take tcm_accessor() of a non-const Tensor");
        T *to = at<T>(tensor_offset, num_elem, "tcm_to_tensor", file, line, function);
        torchneuron::copy_elements(to, static_cast<const T *>(tcm_ptr), num_elem);
    }
};

} // namespace torch

#endif /* TORCHNEURON_TORCH_ACCESSORS_H */
