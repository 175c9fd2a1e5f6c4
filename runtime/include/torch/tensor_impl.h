/*
 * <torch/tensor_impl.h>: what a torch::Tensor refers to (PyTorch's c10/core/TensorImpl.h):
 * its shape, dtype and data, the state its accessors share (the coherence policy and
 * the open streams), the per-core pool the objects come from, and element loads and
 * stores in any dtype for the operations.
 */
#ifndef TORCHNEURON_TORCH_TENSOR_IMPL_H
#define TORCHNEURON_TORCH_TENSOR_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <torch/types.h>

#include <stdio.h>

namespace torch {

/* What to do on a possibly incoherent access by an accessor of a tensor. */
class CoherencyEnforcer {
  public:
    enum Policy {
        /* An error (the op ends with INCOHERENT_ACCESS). The default. */
        COHERENT,
        /* Allowed, with a warning on stdout. */
        INCOHERENT_VERBOSE,
        /* Allowed, silently. */
        INCOHERENT_QUIET
    };
};

} // namespace torch

namespace torchneuron {

/* What a torch::Tensor refers to: shape, dtype, data, and its accessors' state. */
struct TensorImpl {
    int refs;
    c10::ScalarType dtype;
    int64_t dim;
    int64_t numel;
    int64_t sizes[kMaxDims];
    int64_t strides[kMaxDims];
    void *data;
    /* The data came from the HBM heap with the tensor (and goes with it). */
    bool owns_data;
    torch::CoherencyEnforcer::Policy policy;
    int read_streams;
    int write_streams;
    /* Which tensor it is, for messages: the op's argument of that index (0, 1, ...),
     * or kMadeByKernel, or kOpOutput (describe_tensor). */
    int origin;
};

constexpr int kMadeByKernel = -1;
constexpr int kOpOutput = -2;

/* "argument 0", "the op's output (get_dst_tensor())" or "a tensor the kernel made",
 * in `text` (at least 48 bytes). */
inline const char *describe_tensor(const TensorImpl *impl, char *text, size_t size) {
    if (impl->origin >= 0) {
        snprintf(text, size, "argument %d", impl->origin);
    } else {
        snprintf(text, size, "%s", impl->origin == kOpOutput ? "the op's output (get_dst_tensor())" : "a tensor the kernel made");
    }
    return text;
}

/* A dtype's name as NumPy and PyTorch print it (float32, int64, ...). */
inline const char *dtype_name(c10::ScalarType dtype) {
    switch (dtype) {
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::BFloat16: return "bfloat16";
    }
    return "an unknown dtype";
}

/* A possibly incoherent access to `impl` (`what` says which): acted on per policy. */
inline void incoherent(const TensorImpl *impl, const char *what) {
    switch (impl->policy) {
    case torch::CoherencyEnforcer::COHERENT:
        fail(STATUS_INCOHERENT_ACCESS, what);
    case torch::CoherencyEnforcer::INCOHERENT_VERBOSE:
#ifndef TORCHNEURON_HOST
        printf("warning: %s\n", what);
#endif
        return;
    case torch::CoherencyEnforcer::INCOHERENT_QUIET:
        return;
    }
}

/* Tensor objects come from a per-core pool of kImplPool before the heap: a kernel
 * holds a handful at a time, and a pool slot costs a few instructions where a heap
 * block costs hundreds (docs/PERFORMANCE.md, "C++ kernels"). */
constexpr size_t kImplPool = 16;

struct ImplPool {
    TensorImpl slots[kImplPool];
    bool used[kImplPool];
};

inline ImplPool &impl_pool() {
    static ImplPool pool;
    return pool;
}

inline TensorImpl *allocate_impl() {
    ImplPool &pool = impl_pool();
    for (size_t i = 0; i < kImplPool; i++) {
        if (!pool.used[i]) {
            pool.used[i] = true;
            return &pool.slots[i];
        }
    }
    return static_cast<TensorImpl *>(allocate(sizeof(TensorImpl)));
}

inline void release_impl(TensorImpl *impl) {
    ImplPool &pool = impl_pool();
    if (impl >= pool.slots && impl < pool.slots + kImplPool) {
        pool.used[impl - pool.slots] = false;
    } else {
        release(impl);
    }
}

/* A new impl of `sizes` and `dtype`; its data from the heap when `with_data`. */
inline TensorImpl *new_impl(c10::IntArrayRef sizes, c10::ScalarType dtype, bool with_data) {
    int64_t numel = 1;
    for (size_t i = 0; i < sizes.size(); i++) {
        if (sizes[i] < 0 || sizes[i] > kMaxDim) {
            fail(STATUS_SHAPE_MISMATCH, "torch: a dimension is negative or larger than 65535");
        }
        numel *= sizes[i];
    }
    size_t element = c10::elementSize(dtype);
    if (element == 0) {
        fail(STATUS_UNSUPPORTED_DTYPE, "torch: not a dtype a device tensor holds");
    }
    TensorImpl *impl = allocate_impl();
    impl->refs = 1;
    impl->dtype = dtype;
    impl->dim = int64_t(sizes.size());
    impl->numel = numel;
    int64_t stride = 1;
    for (int64_t i = kMaxDims - 1; i >= 0; i--) {
        bool used = i < impl->dim;
        impl->sizes[i] = used ? sizes[size_t(i)] : 0;
        impl->strides[i] = used ? stride : 0;
        if (used) {
            stride *= sizes[size_t(i)];
        }
    }
    impl->owns_data = with_data;
    impl->data = nullptr;
#ifndef TORCHNEURON_HOST
    if (with_data) {
        if (uint64_t(numel) * element > uint64_t(SIZE_MAX)) {
            release_impl(impl);
            fail(STATUS_OUT_OF_MEMORY, "torch: a new tensor larger than the address space");
        }
        impl->data = allocate(size_t(numel) * element);
    }
#endif
    impl->policy = torch::CoherencyEnforcer::COHERENT;
    impl->read_streams = 0;
    impl->write_streams = 0;
    impl->origin = kMadeByKernel;
    return impl;
}

inline void drop_impl(TensorImpl *impl) {
    if (impl != nullptr && --impl->refs == 0) {
        if (impl->owns_data && impl->data != nullptr) {
            release(impl->data);
        }
        release_impl(impl);
    }
}

/* Ends the op with `status` and the line "torch: <what> at <file>:<line> (<function>):
 * <which tensor> <because>" (describe_tensor): the accessors' checks. */
[[noreturn]] inline void fail_at(Status status, const TensorImpl *impl, const char *what, const char *file, int line,
                                 const char *function, const char *because) {
    char tensor[48], message[320];
    snprintf(message, sizeof message, "torch: %s at %s:%d (%s): %s %s", what, file, line, function,
             describe_tensor(impl, tensor, sizeof tensor), because);
    fail(status, message);
}

/* A tensor's dtype is T's, or the op ends with DTYPE_MISMATCH naming the tensor, both
 * dtypes and the kernel's line (`what` names the access, "accessor<T, N>"). */
template <class T>
inline void check_dtype(const TensorImpl *impl, const char *what, const char *file, int line, const char *function) {
    if (impl->dtype != c10::ScalarTypeOf<T>::value) {
        char because[64];
        snprintf(because, sizeof because, "holds %s, but T is %s", dtype_name(impl->dtype),
                 dtype_name(c10::ScalarTypeOf<T>::value));
        fail_at(STATUS_DTYPE_MISMATCH, impl, what, file, line, function, because);
    }
}

/* Element i of `impl` as a float, whatever its dtype. */
inline float load_float(const TensorImpl *impl, int64_t i) {
    const void *d = impl->data;
    switch (impl->dtype) {
    case c10::ScalarType::Byte: return float(static_cast<const uint8_t *>(d)[i]);
    case c10::ScalarType::Char: return float(static_cast<const int8_t *>(d)[i]);
    case c10::ScalarType::Short: return float(static_cast<const int16_t *>(d)[i]);
    case c10::ScalarType::Int: return float(static_cast<const int32_t *>(d)[i]);
    case c10::ScalarType::Long: return float(static_cast<const int64_t *>(d)[i]);
    case c10::ScalarType::Half: return float(static_cast<const c10::Half *>(d)[i]);
    case c10::ScalarType::Float: return static_cast<const float *>(d)[i];
    case c10::ScalarType::BFloat16: return float(static_cast<const c10::BFloat16 *>(d)[i]);
    }
    return 0;
}

/* Element i of `impl` as an integer (floats truncated). */
inline int64_t load_int(const TensorImpl *impl, int64_t i) {
    const void *d = impl->data;
    switch (impl->dtype) {
    case c10::ScalarType::Byte: return static_cast<const uint8_t *>(d)[i];
    case c10::ScalarType::Char: return static_cast<const int8_t *>(d)[i];
    case c10::ScalarType::Short: return static_cast<const int16_t *>(d)[i];
    case c10::ScalarType::Int: return static_cast<const int32_t *>(d)[i];
    case c10::ScalarType::Long: return static_cast<const int64_t *>(d)[i];
    default: return int64_t(load_float(impl, i));
    }
}

/* Stores `value` (a float) into element i, converted to the tensor's dtype. */
inline void store_float(TensorImpl *impl, int64_t i, float value) {
    void *d = impl->data;
    switch (impl->dtype) {
    case c10::ScalarType::Byte: static_cast<uint8_t *>(d)[i] = uint8_t(int64_t(value)); return;
    case c10::ScalarType::Char: static_cast<int8_t *>(d)[i] = int8_t(value); return;
    case c10::ScalarType::Short: static_cast<int16_t *>(d)[i] = int16_t(value); return;
    case c10::ScalarType::Int: static_cast<int32_t *>(d)[i] = int32_t(value); return;
    case c10::ScalarType::Long: static_cast<int64_t *>(d)[i] = int64_t(value); return;
    case c10::ScalarType::Half: static_cast<c10::Half *>(d)[i] = c10::Half(value); return;
    case c10::ScalarType::Float: static_cast<float *>(d)[i] = value; return;
    case c10::ScalarType::BFloat16: static_cast<c10::BFloat16 *>(d)[i] = c10::BFloat16(value); return;
    }
}

/* Stores `value` (an integer) into element i, converted to the tensor's dtype. */
inline void store_int(TensorImpl *impl, int64_t i, int64_t value) {
    void *d = impl->data;
    switch (impl->dtype) {
    case c10::ScalarType::Byte: static_cast<uint8_t *>(d)[i] = uint8_t(value); return;
    case c10::ScalarType::Char: static_cast<int8_t *>(d)[i] = int8_t(value); return;
    case c10::ScalarType::Short: static_cast<int16_t *>(d)[i] = int16_t(value); return;
    case c10::ScalarType::Int: static_cast<int32_t *>(d)[i] = int32_t(value); return;
    case c10::ScalarType::Long: static_cast<int64_t *>(d)[i] = value; return;
    default: store_float(impl, i, float(value)); return;
    }
}

template <class T>
inline void copy_elements(T *dst, const T *src, size_t n) {
#ifndef TORCHNEURON_HOST
    neuron_memcpy(dst, src, n * sizeof(T));
#else
    (void)dst, (void)src, (void)n;
#endif
}

} // namespace torchneuron

#endif /* TORCHNEURON_TORCH_TENSOR_IMPL_H */
