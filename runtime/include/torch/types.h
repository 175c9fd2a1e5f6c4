/*
 * <torch/types.h>: the value types of the torch API: c10::Half and c10::BFloat16, the
 * ScalarType (dtype) enumeration and its properties, IntArrayRef (a shape), Scalar,
 * TensorOptions, and their torch:: names (torch::kFloat, ...). PyTorch spreads these
 * over c10/util (Half, BFloat16, ArrayRef) and c10/core (ScalarType, Scalar,
 * TensorOptions), with torch/types.h giving the torch:: names.
 */
#ifndef TORCHNEURON_TORCH_TYPES_H
#define TORCHNEURON_TORCH_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <torchneuron/support.h>

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

} // namespace torch

/* PyTorch's ATen namespace: at::Tensor is torch::Tensor. */
namespace at = torch;

#endif /* TORCHNEURON_TORCH_TYPES_H */
