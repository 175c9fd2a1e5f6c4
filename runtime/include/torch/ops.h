/*
 * <torch/ops.h>: the element-wise operations the AWS documentation lists, each in its
 * plain and _out form (PyTorch's ATen/ops/<name>.h): abs, ceil, floor, sin, cos, tan,
 * log, log2, log10, exp, pow, clamp, add, sub, mul, div, bitwise_and, bitwise_or and
 * bitwise_not. Operands have the same shape (no broadcasting). Device only: the shape
 * functions on the host make their outputs with the factories.
 */
#ifndef TORCHNEURON_TORCH_OPS_H
#define TORCHNEURON_TORCH_OPS_H

#include <stdint.h>

#include <torch/factories.h>

#ifndef TORCHNEURON_HOST
#include <math.h>
#endif

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

/* The element count of a tensor whose data is in memory, as a loop counter: it fits the
 * 32-bit address space (new tensors' bytes are checked against it, and a descriptor's
 * element count is 32-bit), and a 64-bit counter costs a 64-bit compare per element on
 * these cores (docs/op-author-guide.md). */
inline size_t elements_in_memory(const TensorImpl *impl) { return size_t(impl->numel); }

/* result[i] = f(self[i]) in float arithmetic, or g(self[i]) in integer arithmetic for
 * integral tensors when g is given. float32 into float32 is one straight loop, with the
 * dtype dispatch out of it (docs/PERFORMANCE.md, "Math on the FPU": torch::exp); other
 * dtypes convert each element through float or int64_t. */
template <class F, class G>
torch::Tensor &map_into(torch::Tensor &result, const torch::Tensor &self, const char *operation, F f, G g,
                        bool integral_path) {
    check_same_shape(result, self, operation);
    TensorImpl *out = result.unsafeGetTensorImpl();
    const TensorImpl *in = self.unsafeGetTensorImpl();
    if (in->data == nullptr) {
        return result;
    }
    size_t n = elements_in_memory(in);
    bool integral = integral_path && c10::isIntegralType(in->dtype);
    if (!integral && in->dtype == c10::ScalarType::Float && out->dtype == c10::ScalarType::Float) {
        /* Element by element, each read before it is written: `result` may be `self`. */
        const float *src = static_cast<const float *>(in->data);
        float *dst = static_cast<float *>(out->data);
        for (size_t i = 0; i < n; i++) {
            dst[i] = f(src[i]);
        }
        return result;
    }
    for (size_t i = 0; i < n; i++) {
        if (integral) {
            store_int(out, int64_t(i), g(load_int(in, int64_t(i))));
        } else {
            store_float(out, int64_t(i), f(load_float(in, int64_t(i))));
        }
    }
    return result;
}

/* A tensor operand's elements as T, and a scalar operand's value, for zip_typed: a
 * scalar is converted once, not at every element. */
template <class T>
struct TensorElements {
    const T *data;
    T operator[](size_t i) const { return data[i]; }
};

template <class V>
struct ScalarElements {
    V value;
    V operator[](size_t) const { return value; }
};

/* zip_into's loop when the tensor operands and the result all hold T: one loop over T,
 * with the dtype dispatch out of it. Each element is converted as load_float and
 * store_float (or, `Integral`, load_int and store_int) convert a T, so the result has
 * the same bits as the per-element path. Element by element, each read before it is
 * written: `result` may be an operand. */
template <class T, bool Integral, class A, class B, class F, class G>
torch::Tensor &zip_typed(torch::Tensor &result, const A &a, const B &b, F f, G g) {
    TensorImpl *out = result.unsafeGetTensorImpl();
    T *dst = static_cast<T *>(out->data);
    size_t n = elements_in_memory(out);
    if constexpr (Integral) {
        auto x = a.template integers<T>();
        auto y = b.template integers<T>();
        for (size_t i = 0; i < n; i++) {
            dst[i] = T(int64_t(g(int64_t(x[i]), int64_t(y[i]))));
        }
    } else {
        auto x = a.template reals<T>();
        auto y = b.template reals<T>();
        for (size_t i = 0; i < n; i++) {
            dst[i] = T(float(f(float(x[i]), float(y[i]))));
        }
    }
    return result;
}

/* result[i] = f(a[i], b[i]) (float) or g(a[i], b[i]) (integer, when both operands are
 * integral), the operands given as element loaders so tensor and scalar mix. When every
 * tensor operand has the result's dtype (the usual case: float32 + float32 into
 * float32), one loop over that element type (zip_typed), the dtype switch out of it
 * (docs/PERFORMANCE.md, "Math on the FPU": torch::add and torch::mul); mixed dtypes,
 * and float arithmetic into an integral result, convert each element through float or
 * int64_t. */
template <class A, class B, class F, class G>
torch::Tensor &zip_into(torch::Tensor &result, A a, B b, bool integral, F f, G g) {
    TensorImpl *out = result.unsafeGetTensorImpl();
    if (out->data == nullptr) {
        return result;
    }
    using c10::ScalarType;
    if (a.has_dtype(out->dtype) && b.has_dtype(out->dtype)) {
        if (integral) {
            switch (out->dtype) {
            case ScalarType::Byte: return zip_typed<uint8_t, true>(result, a, b, f, g);
            case ScalarType::Char: return zip_typed<int8_t, true>(result, a, b, f, g);
            case ScalarType::Short: return zip_typed<int16_t, true>(result, a, b, f, g);
            case ScalarType::Int: return zip_typed<int32_t, true>(result, a, b, f, g);
            case ScalarType::Long: return zip_typed<int64_t, true>(result, a, b, f, g);
            default: break;
            }
        } else {
            switch (out->dtype) {
            case ScalarType::Half: return zip_typed<c10::Half, false>(result, a, b, f, g);
            case ScalarType::Float: return zip_typed<float, false>(result, a, b, f, g);
            case ScalarType::BFloat16: return zip_typed<c10::BFloat16, false>(result, a, b, f, g);
            default: break;
            }
        }
    }
    for (int64_t i = 0; i < out->numel; i++) {
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
    bool has_dtype(c10::ScalarType dtype) const { return impl->dtype == dtype; }
    template <class T>
    TensorElements<T> reals() const {
        return {static_cast<const T *>(impl->data)};
    }
    template <class T>
    TensorElements<T> integers() const {
        return {static_cast<const T *>(impl->data)};
    }
};

struct ScalarOperand {
    const c10::Scalar &value;
    float real(int64_t) const { return value.toFloat(); }
    int64_t integer(int64_t) const { return value.toLong(); }
    bool integral() const { return value.isIntegral(); }
    /* Any: the operation converts a scalar for the tensors' dtype. */
    bool has_dtype(c10::ScalarType) const { return true; }
    template <class T>
    ScalarElements<float> reals() const {
        return {value.toFloat()};
    }
    template <class T>
    ScalarElements<int64_t> integers() const {
        return {value.toLong()};
    }
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

} // namespace torch

#endif /* TORCHNEURON_TORCH_OPS_H */
