/*
 * <torch/torch.h>: the device-side subset of the torch C++ API that the AWS Neuron
 * custom-op documentation lists, over the neuroncustomop runtime's C ABI, with no STL.
 *
 * What is here, and what of the documented API is not (with the reason), is the C++
 * chapter of docs/op-author-guide.md. In short: torch::Tensor (numel, sizes, size,
 * dim, scalar_type, data_ptr, fill_, the element / stream / TCM accessors and the
 * coherence policy), the factories empty / zeros / ones / full / eye, the documented
 * element-wise operations in their plain and _out forms, torch::neuron::tcm_malloc /
 * tcm_free, get_dst_tensor(), get_cpu_id() / get_cpu_count().
 *
 * Tensors are contiguous and row-major; their data lives in device memory (inputs and
 * the output where the host placed them, new tensors on the HBM heap). A misuse that
 * cannot be a compile error (an accessor of the wrong dtype or rank, operands of
 * different shapes, an exhausted heap) ends the op with a named status (docs/abi,
 * descriptors.md) and a line on stdout saying why.
 *
 * Compiled with TORCHNEURON_HOST defined, the same header is the host stub the shape
 * functions run against: tensors there have a shape and a dtype but no data.
 */
#ifndef TORCHNEURON_TORCH_H
#define TORCHNEURON_TORCH_H

#include <stddef.h>
#include <stdint.h>

#include <neuron/neuron-utils.hpp>

#if defined(__has_include)
#if __has_include(<initializer_list>) && defined(TORCHNEURON_HOST)
#include <initializer_list>
#define TORCHNEURON_HAVE_INITIALIZER_LIST 1
#endif
#endif

#ifndef TORCHNEURON_HAVE_INITIALIZER_LIST
/* The one piece of the standard library the language itself needs: braced lists such
 * as torch::zeros({2, 3}, torch::kFloat). Its layout is what the compiler builds. */
namespace std {
template <class E>
class initializer_list {
    const E *first_;
    size_t len_;
    constexpr initializer_list(const E *first, size_t len) : first_(first), len_(len) {}

  public:
    constexpr initializer_list() : first_(nullptr), len_(0) {}
    constexpr size_t size() const { return len_; }
    constexpr const E *begin() const { return first_; }
    constexpr const E *end() const { return first_ + len_; }
};
} // namespace std
#endif

/* The runtime's C functions this header calls. */
extern "C" {
struct NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR;
/* neuron_cxx_fail records the status, prints the message and ends the kernel. */
[[noreturn]] void neuron_cxx_fail(uint32_t status, const char *message);
uint32_t neuron_cxx_record(uint32_t status, const char *message);
#ifndef TORCHNEURON_HOST
void *neuron_hbm_malloc(size_t size);
void neuron_hbm_free(void *ptr);
void *tcm_malloc(size_t size);
void tcm_free(void *ptr);
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
void neuron_memcpy(void *dst, const void *src, size_t n);
float expf(float x);
float logf(float x);
float log2f(float x);
float log10f(float x);
float powf(float x, float y);
float floorf(float x);
float ceilf(float x);
float fabsf(float x);
float sinf(float x);
float cosf(float x);
float tanf(float x);
/* The C ABI's get_dst_tensor, renamed here: in C++, ::get_dst_tensor() returns a
 * torch::Tensor, as the AWS documentation shows. */
const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *torchneuron_c_get_dst_tensor(void) __asm__("get_dst_tensor");
void *customop_tensor_data(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *tensor);
uint32_t customop_tensor_numel(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *tensor);
uint32_t customop_tensor_dtype(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *tensor);
uint32_t customop_tensor_rank(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *tensor);
uint32_t customop_tensor_dim(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *tensor, uint32_t index);
#endif
}
#ifdef TORCHNEURON_HOST
#include <stdlib.h>
#else
#include <stdio.h>
#endif

namespace torchneuron {

/* The runtime's status codes the C++ API reports (docs/abi/descriptors.md). */
enum Status : uint32_t {
    STATUS_DTYPE_MISMATCH = 0x40,
    STATUS_OUT_OF_BOUNDS = 0x41,
    STATUS_TCM_EXHAUSTED = 0x44,
    STATUS_OUT_OF_MEMORY = 0x60,
    STATUS_RANK_MISMATCH = 0x62,
    STATUS_SHAPE_MISMATCH = 0x63,
    STATUS_UNSUPPORTED_DTYPE = 0x64,
    STATUS_INCOHERENT_ACCESS = 0x65,
};

/* The most dimensions a tensor has, and the largest dimension (the descriptor's). */
constexpr int64_t kMaxDims = 8;
constexpr int64_t kMaxDim = 65535;

[[noreturn]] inline void fail(Status status, const char *message) { neuron_cxx_fail(status, message); }

template <bool B, class T, class F>
struct conditional {
    using type = T;
};
template <class T, class F>
struct conditional<false, T, F> {
    using type = F;
};
template <class A, class B>
struct is_same {
    static constexpr bool value = false;
};
template <class A>
struct is_same<A, A> {
    static constexpr bool value = true;
};

/* 0, 1, ..., N-1 as a type: the positions of a parameter pack. */
template <size_t... I>
struct Indices {};
template <size_t N, size_t... I>
struct MakeIndices : MakeIndices<N - 1, N - 1, I...> {};
template <size_t... I>
struct MakeIndices<0, I...> {
    using type = Indices<I...>;
};

inline void *allocate(size_t bytes) {
#ifdef TORCHNEURON_HOST
    void *block = malloc(bytes == 0 ? 1 : bytes);
#else
    void *block = neuron_hbm_malloc(bytes == 0 ? 1 : bytes);
#endif
    if (block == nullptr) {
        fail(STATUS_OUT_OF_MEMORY, "torch: the HBM heap has no room for a new tensor");
    }
    return block;
}

inline void release(void *block) {
#ifdef TORCHNEURON_HOST
    free(block);
#else
    neuron_hbm_free(block);
#endif
}

} // namespace torchneuron

namespace c10 {

/* IEEE half precision, stored as its 16 bits. */
struct Half {
    uint16_t x;
    Half() = default;
    Half(float value) : x(from_float(value)) {}
    operator float() const { return to_float(x); }

    static float to_float(uint16_t h) {
        uint32_t sign = uint32_t(h & 0x8000u) << 16;
        uint32_t exponent = (h >> 10) & 0x1Fu;
        uint32_t mantissa = h & 0x3FFu;
        uint32_t bits;
        if (exponent == 0x1F) {
            bits = sign | 0x7F800000u | (mantissa << 13);
        } else if (exponent != 0) {
            bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
        } else if (mantissa == 0) {
            bits = sign;
        } else {
            /* subnormal: normalise */
            exponent = 113;
            while ((mantissa & 0x400u) == 0) {
                mantissa <<= 1;
                exponent--;
            }
            bits = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
        }
        float value;
        __builtin_memcpy(&value, &bits, 4);
        return value;
    }

    /* Round to nearest, ties to even. */
    static uint16_t from_float(float value) {
        uint32_t bits;
        __builtin_memcpy(&bits, &value, 4);
        uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
        uint32_t magnitude = bits & 0x7FFFFFFFu;
        if (magnitude >= 0x7F800000u) {
            return uint16_t(sign | 0x7C00u | (magnitude > 0x7F800000u ? 0x200u : 0u));
        }
        if (magnitude >= 0x477FF000u) {
            return uint16_t(sign | 0x7C00u); /* overflow to infinity */
        }
        if (magnitude < 0x38800000u) {
            /* subnormal or zero: shift the implicit-one mantissa into place */
            if (magnitude < 0x33000000u) {
                return sign;
            }
            uint32_t exponent = magnitude >> 23;
            uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
            uint32_t shift = 126 - exponent;
            uint32_t half = mantissa >> shift;
            uint32_t rest = mantissa & ((1u << shift) - 1);
            uint32_t midpoint = 1u << (shift - 1);
            if (rest > midpoint || (rest == midpoint && (half & 1u))) {
                half++;
            }
            return uint16_t(sign | half);
        }
        uint32_t half = ((magnitude - 0x38000000u) >> 13);
        uint32_t rest = magnitude & 0x1FFFu;
        if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) {
            half++;
        }
        return uint16_t(sign | half);
    }
};

/* bfloat16: the top 16 bits of a float. */
struct BFloat16 {
    uint16_t x;
    BFloat16() = default;
    BFloat16(float value) {
        uint32_t bits;
        __builtin_memcpy(&bits, &value, 4);
        if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
            x = uint16_t((bits >> 16) | 0x40u); /* a quiet NaN stays a NaN */
        } else {
            x = uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
        }
    }
    operator float() const {
        uint32_t bits = uint32_t(x) << 16;
        float value;
        __builtin_memcpy(&value, &bits, 4);
        return value;
    }
};

/* PyTorch's numbering. kDouble is not here: no device tensor holds doubles. */
enum class ScalarType : int8_t {
    Byte = 0,
    Char = 1,
    Short = 2,
    Int = 3,
    Long = 4,
    Half = 5,
    Float = 6,
    BFloat16 = 15,
};

inline const char *toString(ScalarType t) {
    switch (t) {
    case ScalarType::Byte: return "Byte";
    case ScalarType::Char: return "Char";
    case ScalarType::Short: return "Short";
    case ScalarType::Int: return "Int";
    case ScalarType::Long: return "Long";
    case ScalarType::Half: return "Half";
    case ScalarType::Float: return "Float";
    case ScalarType::BFloat16: return "BFloat16";
    }
    return "?";
}

inline size_t elementSize(ScalarType t) {
    switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char: return 1;
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16: return 2;
    case ScalarType::Int:
    case ScalarType::Float: return 4;
    case ScalarType::Long: return 8;
    }
    return 0;
}

inline bool isIntegralType(ScalarType t) {
    return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short || t == ScalarType::Int ||
           t == ScalarType::Long;
}

/* The ScalarType of a C++ element type (the accessors' T). */
template <class T>
struct ScalarTypeOf;
template <>
struct ScalarTypeOf<uint8_t> {
    static constexpr ScalarType value = ScalarType::Byte;
};
template <>
struct ScalarTypeOf<int8_t> {
    static constexpr ScalarType value = ScalarType::Char;
};
template <>
struct ScalarTypeOf<int16_t> {
    static constexpr ScalarType value = ScalarType::Short;
};
template <>
struct ScalarTypeOf<int32_t> {
    static constexpr ScalarType value = ScalarType::Int;
};
template <>
struct ScalarTypeOf<int64_t> {
    static constexpr ScalarType value = ScalarType::Long;
};
template <>
struct ScalarTypeOf<Half> {
    static constexpr ScalarType value = ScalarType::Half;
};
template <>
struct ScalarTypeOf<float> {
    static constexpr ScalarType value = ScalarType::Float;
};
template <>
struct ScalarTypeOf<BFloat16> {
    static constexpr ScalarType value = ScalarType::BFloat16;
};

/* A list of dimensions, at most 8, held by value (no STL vector to point into). */
class IntArrayRef {
    int64_t values_[torchneuron::kMaxDims] = {};
    size_t len_ = 0;

    template <class T>
    void assign(const T *values, size_t len) {
        if (len > size_t(torchneuron::kMaxDims)) {
            torchneuron::fail(torchneuron::STATUS_SHAPE_MISMATCH, "torch: a shape has more than 8 dimensions");
        }
        for (size_t i = 0; i < len; i++) {
            values_[i] = int64_t(values[i]);
        }
        len_ = len;
    }

  public:
    IntArrayRef() = default;
    IntArrayRef(const int64_t *values, size_t len) { assign(values, len); }
    IntArrayRef(std::initializer_list<int64_t> values) { assign(values.begin(), values.size()); }
    /* {num_elem} with a size_t, as the AWS examples write it. */
    template <class T>
    IntArrayRef(std::initializer_list<T> values) {
        assign(values.begin(), values.size());
    }

    size_t size() const { return len_; }
    bool empty() const { return len_ == 0; }
    const int64_t *data() const { return values_; }
    const int64_t *begin() const { return values_; }
    const int64_t *end() const { return values_ + len_; }
    int64_t operator[](size_t i) const { return values_[i]; }
    int64_t front() const { return values_[0]; }
    int64_t back() const { return values_[len_ - 1]; }

    bool operator==(const IntArrayRef &other) const {
        if (len_ != other.len_) {
            return false;
        }
        for (size_t i = 0; i < len_; i++) {
            if (values_[i] != other.values_[i]) {
                return false;
            }
        }
        return true;
    }
    bool operator!=(const IntArrayRef &other) const { return !(*this == other); }
};

/* Only the dtype has an effect (as the AWS documentation says), and it must be given. */
class TensorOptions {
    ScalarType dtype_ = ScalarType::Float;

  public:
    TensorOptions() = default;
    TensorOptions(ScalarType dtype) : dtype_(dtype) {}
    TensorOptions dtype(ScalarType dtype) const { return TensorOptions(dtype); }
    ScalarType dtype() const { return dtype_; }
};

/* A number of either kind. */
class Scalar {
    double floating_ = 0;
    int64_t integral_ = 0;
    bool is_integral_ = true;

  public:
    Scalar() = default;
    Scalar(int v) : floating_(v), integral_(v), is_integral_(true) {}
    Scalar(long v) : floating_(double(v)), integral_(v), is_integral_(true) {}
    Scalar(long long v) : floating_(double(v)), integral_(v), is_integral_(true) {}
    Scalar(unsigned v) : floating_(v), integral_(v), is_integral_(true) {}
    Scalar(unsigned long v) : floating_(double(v)), integral_(int64_t(v)), is_integral_(true) {}
    Scalar(unsigned long long v) : floating_(double(v)), integral_(int64_t(v)), is_integral_(true) {}
    Scalar(bool v) : floating_(v), integral_(v), is_integral_(true) {}
    Scalar(float v) : floating_(v), integral_(int64_t(v)), is_integral_(false) {}
    Scalar(double v) : floating_(v), integral_(int64_t(v)), is_integral_(false) {}
    Scalar(Half v) : Scalar(float(v)) {}
    Scalar(BFloat16 v) : Scalar(float(v)) {}

    bool isIntegral(bool include_bool = true) const { return (void)include_bool, is_integral_; }
    bool isFloatingPoint() const { return !is_integral_; }
    double toDouble() const { return floating_; }
    float toFloat() const { return float(floating_); }
    int64_t toLong() const { return integral_; }
    int32_t toInt() const { return int32_t(integral_); }
    template <class T>
    T to() const {
        return is_integral_ ? T(integral_) : T(floating_);
    }
};

} // namespace c10

namespace torch {

using c10::BFloat16;
using c10::Half;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;
using c10::TensorOptions;

constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kUInt8 = kByte;
constexpr ScalarType kInt8 = kChar;
constexpr ScalarType kInt16 = kShort;
constexpr ScalarType kInt32 = kInt;
constexpr ScalarType kInt64 = kLong;
constexpr ScalarType kFloat16 = kHalf;
constexpr ScalarType kFloat32 = kFloat;

inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }

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

class Tensor;

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
};

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

template <class T>
inline void check_dtype(const TensorImpl *impl, const char *what) {
    if (impl->dtype != c10::ScalarTypeOf<T>::value) {
        fail(STATUS_DTYPE_MISMATCH, what);
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

/* The output descriptor as the kernel took it through get_dst_tensor(), for the
 * generated entry: set when the kernel took it, reset before each kernel. */
struct DstState {
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *descriptor;
    TensorImpl *impl;
};
inline DstState &dst_state() {
    static DstState state = {nullptr, nullptr};
    return state;
}

#ifndef TORCHNEURON_HOST
/* A tensor over a descriptor the pull stream handed out (an input, or the output);
 * null when the descriptor is null (its status is already recorded). */
inline TensorImpl *impl_from_descriptor(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *descriptor) {
    static const c10::ScalarType by_dtype[] = {
        /* NEURON_ISA_TPB_DTYPE 1..8 */
        c10::ScalarType::Float, c10::ScalarType::BFloat16, c10::ScalarType::Half, c10::ScalarType::Int,
        c10::ScalarType::Char,  c10::ScalarType::Long,     c10::ScalarType::Short, c10::ScalarType::Byte,
    };
    if (descriptor == nullptr) {
        return nullptr;
    }
    uint32_t dtype = customop_tensor_dtype(descriptor);
    uint32_t rank = customop_tensor_rank(descriptor);
    if (dtype == 0 || dtype > 8 || rank == 0) {
        return nullptr; /* the descriptor is invalid: its status is recorded */
    }
    int64_t sizes[kMaxDims];
    for (uint32_t i = 0; i < rank; i++) {
        sizes[i] = customop_tensor_dim(descriptor, i);
    }
    TensorImpl *impl = new_impl(c10::IntArrayRef(sizes, rank), by_dtype[dtype - 1], false);
    impl->data = customop_tensor_data(descriptor);
    return impl;
}
#endif

template <class T>
inline void copy_elements(T *dst, const T *src, size_t n) {
#ifndef TORCHNEURON_HOST
    neuron_memcpy(dst, src, n * sizeof(T));
#else
    (void)dst, (void)src, (void)n;
#endif
}

} // namespace torchneuron

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

    template <class T>
    T *at(size_t offset, size_t n) const {
        torchneuron::check_dtype<T>(impl_, "torch: tcm accessor of a type other than the tensor's dtype");
        if (offset > size_t(impl_->numel) || n > size_t(impl_->numel) - offset) {
            torchneuron::fail(torchneuron::STATUS_OUT_OF_BOUNDS, "torch: tcm accessor copy outside the tensor");
        }
        return static_cast<T *>(impl_->data) + offset;
    }

  public:
    explicit TensorTcmAccessor(torchneuron::TensorImpl *impl) : impl_(impl) { impl_->refs++; }
    TensorTcmAccessor(const TensorTcmAccessor &other) : impl_(other.impl_) { impl_->refs++; }
    TensorTcmAccessor &operator=(const TensorTcmAccessor &) = delete;
    ~TensorTcmAccessor() { torchneuron::drop_impl(impl_); }

    /* num_elem elements from tensor_offset on, into tcm_ptr. */
    template <class T>
    void tensor_to_tcm(T *tcm_ptr, size_t tensor_offset, size_t num_elem) const {
        torchneuron::copy_elements(tcm_ptr, at<T>(tensor_offset, num_elem), num_elem);
    }

    /* num_elem elements from tcm_ptr into the tensor from tensor_offset on. */
    template <class T>
    void tcm_to_tensor(T *tcm_ptr, size_t tensor_offset, size_t num_elem) const {
        static_assert(!ReadOnly, "tcm_to_tensor writes the tensor: take tcm_accessor() of a non-const Tensor");
        torchneuron::copy_elements(at<T>(tensor_offset, num_elem), static_cast<const T *>(tcm_ptr), num_elem);
    }
};

class Tensor {
    torchneuron::TensorImpl *impl_ = nullptr;

    torchneuron::TensorImpl *checked() const {
        if (impl_ == nullptr) {
            torchneuron::fail(torchneuron::STATUS_SHAPE_MISMATCH, "torch: use of an undefined tensor");
        }
        return impl_;
    }

    template <class T, size_t N>
    T *accessor_data() const {
        torchneuron::TensorImpl *impl = checked();
        torchneuron::check_dtype<T>(impl, "torch: accessor<T, N> with T other than the tensor's dtype");
        if (int64_t(N) != impl->dim) {
            torchneuron::fail(torchneuron::STATUS_RANK_MISMATCH, "torch: accessor<T, N> with N other than the tensor's dim()");
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

    template <class T>
    T *data_ptr() const {
        torchneuron::check_dtype<T>(checked(), "torch: data_ptr<T> with T other than the tensor's dtype");
        return static_cast<T *>(impl_->data);
    }
    void *data_ptr() const { return checked()->data; }

    template <class T, size_t N>
    TensorAccessor<T, N, true> accessor() const & {
        return TensorAccessor<T, N, true>(accessor_data<T, N>(), impl_->sizes, impl_->strides);
    }
    template <class T, size_t N>
    TensorAccessor<T, N, false> accessor() & {
        return TensorAccessor<T, N, false>(accessor_data<T, N>(), impl_->sizes, impl_->strides);
    }
    /* As in PyTorch: an accessor of a temporary would outlive its tensor. */
    template <class T, size_t N>
    TensorAccessor<T, N> accessor() && = delete;

    template <class T>
    TensorReadStreamAccessor<T> read_stream_accessor() const & {
        torchneuron::TensorImpl *impl = checked();
        torchneuron::check_dtype<T>(impl, "torch: read_stream_accessor<T> with T other than the tensor's dtype");
        if (impl->write_streams != 0) {
            torchneuron::incoherent(impl, "torch: a read stream opened while a write stream on the tensor is open");
        }
        return TensorReadStreamAccessor<T>(impl);
    }
    template <class T>
    TensorWriteStreamAccessor<T> write_stream_accessor() & {
        torchneuron::TensorImpl *impl = checked();
        torchneuron::check_dtype<T>(impl, "torch: write_stream_accessor<T> with T other than the tensor's dtype");
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

/* ---- factories ---------------------------------------------------------------- */

inline Tensor empty(IntArrayRef size, TensorOptions options) {
    return Tensor(torchneuron::new_impl(size, options.dtype(), true));
}

inline Tensor full(IntArrayRef size, const Scalar &fill_value, TensorOptions options) {
    Tensor t = empty(size, options);
    t.fill_(fill_value);
    return t;
}

inline Tensor zeros(IntArrayRef size, TensorOptions options) {
    Tensor t = empty(size, options);
#ifndef TORCHNEURON_HOST
    memset(t.data_ptr(), 0, t.nbytes());
#endif
    return t;
}

inline Tensor ones(IntArrayRef size, TensorOptions options) { return full(size, 1, options); }

inline Tensor eye(int64_t n, int64_t m, TensorOptions options) {
    Tensor t = zeros({n, m}, options);
    torchneuron::TensorImpl *impl = t.unsafeGetTensorImpl();
    for (int64_t i = 0; impl->data != nullptr && i < n && i < m; i++) {
        torchneuron::store_int(impl, i * m + i, 1);
    }
    return t;
}

inline Tensor eye(int64_t n, TensorOptions options) { return eye(n, n, options); }

/* ---- element-wise operations -------------------------------------------------- */

} // namespace torch

namespace torchneuron {

inline void check_same_shape(const torch::Tensor &a, const torch::Tensor &b, const char *operation) {
    if (a.sizes() != b.sizes()) {
        fail(STATUS_SHAPE_MISMATCH, operation);
    }
}

inline void check_integral(const torch::Tensor &t, const char *operation) {
    if (!c10::isIntegralType(t.scalar_type())) {
        fail(STATUS_UNSUPPORTED_DTYPE, operation);
    }
}

/* result[i] = f(self[i]) in float arithmetic, or g(self[i]) in integer arithmetic for
 * integral tensors when g is given. */
template <class F, class G>
torch::Tensor &map_into(torch::Tensor &result, const torch::Tensor &self, const char *operation, F f, G g,
                        bool integral_path) {
    check_same_shape(result, self, operation);
    TensorImpl *out = result.unsafeGetTensorImpl();
    const TensorImpl *in = self.unsafeGetTensorImpl();
    bool integral = integral_path && c10::isIntegralType(in->dtype);
    for (int64_t i = 0; in->data != nullptr && i < in->numel; i++) {
        if (integral) {
            store_int(out, i, g(load_int(in, i)));
        } else {
            store_float(out, i, f(load_float(in, i)));
        }
    }
    return result;
}

/* result[i] = f(a[i], b[i]) (float) or g(a[i], b[i]) (integer, when both operands are
 * integral), the operands given as element loaders so tensor and scalar mix. */
template <class A, class B, class F, class G>
torch::Tensor &zip_into(torch::Tensor &result, A a, B b, bool integral, F f, G g) {
    TensorImpl *out = result.unsafeGetTensorImpl();
    for (int64_t i = 0; out->data != nullptr && i < out->numel; i++) {
        if (integral) {
            store_int(out, i, g(a.integer(i), b.integer(i)));
        } else {
            store_float(out, i, f(a.real(i), b.real(i)));
        }
    }
    return result;
}

struct TensorOperand {
    const TensorImpl *impl;
    float real(int64_t i) const { return load_float(impl, i); }
    int64_t integer(int64_t i) const { return load_int(impl, i); }
    bool integral() const { return c10::isIntegralType(impl->dtype); }
};

struct ScalarOperand {
    const c10::Scalar &value;
    float real(int64_t) const { return value.toFloat(); }
    int64_t integer(int64_t) const { return value.toLong(); }
    bool integral() const { return value.isIntegral(); }
};

inline TensorOperand operand(const torch::Tensor &t) { return TensorOperand{t.unsafeGetTensorImpl()}; }
inline ScalarOperand operand(const c10::Scalar &s) { return ScalarOperand{s}; }

inline const torch::Tensor &tensor_of(const torch::Tensor &t, const torch::Tensor &) { return t; }
inline const torch::Tensor &tensor_of(const c10::Scalar &, const torch::Tensor &other) { return other; }

/* Which arithmetic a binary operation uses. */
enum class Arithmetic {
    /* integer when both operands and the result are integral, else float */
    Automatic,
    /* float (add/sub with a floating alpha) */
    Float,
    /* integer (bitwise operations: a scalar is cast to the tensor's dtype) */
    Integer,
};

/* A binary operation over tensor/tensor, tensor/scalar or scalar/tensor operands, into
 * `result`, which has the shape of the tensor operands (checked). */
template <class A, class B, class F, class G>
torch::Tensor &binary_into(torch::Tensor &result, const A &a, const B &b, const char *operation, F f, G g,
                           Arithmetic arithmetic = Arithmetic::Automatic) {
    const torch::Tensor &shape = tensor_of(a, tensor_of(b, result));
    check_same_shape(result, shape, operation);
    check_same_shape(tensor_of(a, shape), tensor_of(b, shape), operation);
    auto left = operand(a);
    auto right = operand(b);
    bool integral = arithmetic == Arithmetic::Integer ||
                    (arithmetic == Arithmetic::Automatic && left.integral() && right.integral() &&
                     c10::isIntegralType(result.scalar_type()));
    return zip_into(result, left, right, integral, f, g);
}

inline torch::Tensor empty_like(const torch::Tensor &t) { return torch::empty(t.sizes(), t.scalar_type()); }

inline int64_t ipow(int64_t base, int64_t exponent) {
    if (exponent < 0) {
        return base == 1 ? 1 : (base == -1 ? ((exponent & 1) ? -1 : 1) : 0);
    }
    int64_t result = 1;
    while (exponent != 0) {
        if (exponent & 1) {
            result *= base;
        }
        base *= base;
        exponent >>= 1;
    }
    return result;
}

inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

} // namespace torchneuron

namespace torch {

#ifndef TORCHNEURON_HOST
/* The unary operations: name, float function, integer function (or none: computed in
 * float). */
#define TORCHNEURON_UNARY(name, float_expr, int_expr, has_int)                                                     \
    inline Tensor &name##_out(Tensor &result, const Tensor &self) {                                                \
        return torchneuron::map_into(                                                                              \
            result, self, "torch::" #name ": result and self differ in shape", [](float x) { return float_expr; }, \
            [](int64_t x) { return (void)x, int64_t(int_expr); }, has_int);                                              \
    }                                                                                                              \
    inline Tensor name(const Tensor &self) {                                                                       \
        Tensor result = torchneuron::empty_like(self);                                                             \
        name##_out(result, self);                                                                                  \
        return result;                                                                                             \
    }

TORCHNEURON_UNARY(abs, fabsf(x), x < 0 ? -x : x, true)
TORCHNEURON_UNARY(ceil, ceilf(x), x, true)
TORCHNEURON_UNARY(floor, floorf(x), x, true)
TORCHNEURON_UNARY(sin, sinf(x), 0, false)
TORCHNEURON_UNARY(cos, cosf(x), 0, false)
TORCHNEURON_UNARY(tan, tanf(x), 0, false)
TORCHNEURON_UNARY(log, logf(x), 0, false)
TORCHNEURON_UNARY(log2, log2f(x), 0, false)
TORCHNEURON_UNARY(log10, log10f(x), 0, false)
TORCHNEURON_UNARY(exp, expf(x), 0, false)
#undef TORCHNEURON_UNARY

/* The binary operations, each for tensor/tensor, tensor/scalar (and scalar/tensor where
 * documented): name, float expression, integer expression over a and b. */
#define TORCHNEURON_BINARY_OUT(name, A, B, float_expr, int_expr)                                        \
    inline Tensor &name##_out(Tensor &result, const A &self, const B &other) {                          \
        return torchneuron::binary_into(                                                                \
            result, self, other, "torch::" #name ": operands differ in shape",                          \
            [](float a, float b) { return float_expr; }, [](int64_t a, int64_t b) { return int_expr; }); \
    }
#define TORCHNEURON_BINARY(name, A, B, float_expr, int_expr)                                        \
    TORCHNEURON_BINARY_OUT(name, A, B, float_expr, int_expr)                                        \
    inline Tensor name(const A &self, const B &other) {                                             \
        Tensor result = torchneuron::empty_like(torchneuron::tensor_of(self, torchneuron::tensor_of(other, Tensor()))); \
        return name##_out(result, self, other);                                                     \
    }

TORCHNEURON_BINARY(pow, Tensor, Scalar, powf(a, b), torchneuron::ipow(a, b))
TORCHNEURON_BINARY(pow, Scalar, Tensor, powf(a, b), torchneuron::ipow(a, b))
TORCHNEURON_BINARY(pow, Tensor, Tensor, powf(a, b), torchneuron::ipow(a, b))
TORCHNEURON_BINARY(mul, Tensor, Scalar, a *b, a *b)
TORCHNEURON_BINARY(mul, Tensor, Tensor, a *b, a *b)
/* Integer division truncates (the result keeps the tensor's dtype); by zero gives 0. */
TORCHNEURON_BINARY(div, Tensor, Scalar, a / b, b == 0 ? 0 : a / b)
TORCHNEURON_BINARY(div, Tensor, Tensor, a / b, b == 0 ? 0 : a / b)
#undef TORCHNEURON_BINARY
#undef TORCHNEURON_BINARY_OUT

/* add and sub: out = self ± alpha × other. */
#define TORCHNEURON_ADD_OUT(name, op, B)                                                                          \
    inline Tensor &name##_out(Tensor &result, const Tensor &self, const B &other, const Scalar &alpha = 1) {      \
        float alpha_f = alpha.toFloat();                                                                          \
        int64_t alpha_i = alpha.toLong();                                                                         \
        return torchneuron::binary_into(                                                                          \
            result, self, other, "torch::" #name ": operands differ in shape",                                    \
            [alpha_f](float a, float b) { return a op alpha_f * b; },                                            \
            [alpha_i](int64_t a, int64_t b) { return a op alpha_i * b; },                                        \
            alpha.isIntegral() ? torchneuron::Arithmetic::Automatic : torchneuron::Arithmetic::Float);           \
    }
#define TORCHNEURON_ADD(name, op)                                                                                 \
    TORCHNEURON_ADD_OUT(name, op, Tensor)                                                                         \
    TORCHNEURON_ADD_OUT(name, op, Scalar)                                                                         \
    inline Tensor name(const Tensor &self, const Tensor &other, const Scalar &alpha = 1) {                        \
        Tensor result = torchneuron::empty_like(self);                                                            \
        return name##_out(result, self, other, alpha);                                                            \
    }                                                                                                             \
    inline Tensor name(const Tensor &self, const Scalar &other, const Scalar &alpha = 1) {                        \
        Tensor result = torchneuron::empty_like(self);                                                            \
        return name##_out(result, self, other, alpha);                                                            \
    }
TORCHNEURON_ADD(add, +)
TORCHNEURON_ADD(sub, -)
#undef TORCHNEURON_ADD
#undef TORCHNEURON_ADD_OUT

inline Tensor &clamp_out(Tensor &result, const Tensor &self, const Scalar &minval, const Scalar &maxval) {
    float lo = minval.toFloat(), hi = maxval.toFloat();
    int64_t lo_i = minval.toLong(), hi_i = maxval.toLong();
    bool integral = minval.isIntegral() && maxval.isIntegral();
    return torchneuron::map_into(
        result, self, "torch::clamp: result and self differ in shape",
        [lo, hi](float x) { return torchneuron::clampf(x, lo, hi); },
        [lo_i, hi_i](int64_t x) { return x < lo_i ? lo_i : (x > hi_i ? hi_i : x); }, integral);
}
inline Tensor clamp(const Tensor &self, const Scalar &minval, const Scalar &maxval) {
    Tensor result = torchneuron::empty_like(self);
    return clamp_out(result, self, minval, maxval);
}

/* Bitwise operations: integral tensors only (UNSUPPORTED_DTYPE otherwise); a scalar is
 * cast to the tensor's dtype. */
#define TORCHNEURON_BITWISE_OUT(name, A, B, op)                                                          \
    inline Tensor &name##_out(Tensor &result, const A &self, const B &other) {                           \
        const Tensor &t = torchneuron::tensor_of(self, torchneuron::tensor_of(other, result));           \
        torchneuron::check_integral(t, "torch::" #name ": the operands must be integral");              \
        torchneuron::check_integral(result, "torch::" #name ": the result must be integral");           \
        return torchneuron::binary_into(                                                                 \
            result, self, other, "torch::" #name ": operands differ in shape",                           \
            [](float a, float) { return a; }, [](int64_t a, int64_t b) { return a op b; },               \
            torchneuron::Arithmetic::Integer);                                                           \
    }                                                                                                    \
    inline Tensor name(const A &self, const B &other) {                                                  \
        Tensor result = torchneuron::empty_like(torchneuron::tensor_of(self, torchneuron::tensor_of(other, Tensor()))); \
        return name##_out(result, self, other);                                                          \
    }
TORCHNEURON_BITWISE_OUT(bitwise_and, Tensor, Tensor, &)
TORCHNEURON_BITWISE_OUT(bitwise_and, Tensor, Scalar, &)
TORCHNEURON_BITWISE_OUT(bitwise_and, Scalar, Tensor, &)
TORCHNEURON_BITWISE_OUT(bitwise_or, Tensor, Tensor, |)
TORCHNEURON_BITWISE_OUT(bitwise_or, Tensor, Scalar, |)
TORCHNEURON_BITWISE_OUT(bitwise_or, Scalar, Tensor, |)
#undef TORCHNEURON_BITWISE_OUT

inline Tensor &bitwise_not_out(Tensor &result, const Tensor &self) {
    torchneuron::check_integral(self, "torch::bitwise_not: the tensor must be integral");
    return torchneuron::map_into(
        result, self, "torch::bitwise_not: result and self differ in shape", [](float x) { return x; },
        [](int64_t x) { return ~x; }, true);
}
inline Tensor bitwise_not(const Tensor &self) {
    Tensor result = torchneuron::empty_like(self);
    return bitwise_not_out(result, self);
}
/* The form the AWS reference lists: the same as bitwise_not_out. */
inline Tensor bitwise_not(Tensor &result, const Tensor &self) { return bitwise_not_out(result, self); }
#endif /* !TORCHNEURON_HOST */

namespace neuron {
/* The op's 16 KiB TCM pool; null when it has no room. */
inline void *tcm_malloc(size_t nbytes) {
#ifndef TORCHNEURON_HOST
    return ::tcm_malloc(nbytes);
#else
    return (void)nbytes, nullptr;
#endif
}
inline void tcm_free(void *ptr) {
#ifndef TORCHNEURON_HOST
    ::tcm_free(ptr);
#else
    (void)ptr;
#endif
}
} // namespace neuron

} // namespace torch

namespace at = torch;

#ifndef TORCHNEURON_HOST
/* The op's output tensor: write the result here (mandatory on several cores) and the
 * tensor the kernel returns is ignored. */
inline torch::Tensor get_dst_tensor() {
    torchneuron::DstState &state = torchneuron::dst_state();
    if (state.impl == nullptr) {
        state.descriptor = torchneuron_c_get_dst_tensor();
        state.impl = torchneuron::impl_from_descriptor(state.descriptor);
        if (state.impl == nullptr) {
            torchneuron::fail(torchneuron::STATUS_SHAPE_MISMATCH, "get_dst_tensor: the op has no usable output");
        }
    }
    state.impl->refs++;
    return torch::Tensor(state.impl);
}
#endif

#endif /* TORCHNEURON_TORCH_H */
