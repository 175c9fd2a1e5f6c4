/*
 * "torchneuron/arg_kind.h": the argument kinds of a C++ library's functions, written
 * once. A shape function's parameters (register.h, run on the host) and its compute
 * function's (entry.h, on the device) take the same C++ types, and each type is one
 * kind:
 *
 *   const torch::Tensor& / torch::Tensor   Tensor   "tensor"
 *   int / int32_t                          Int      "int"
 *   int64_t                                Long     "long"
 *   float                                  Float    "float"
 *   double                                 Double   "double"
 *
 * The host tools' Rust `cxx::ArgKind` (its `ALL` and names) is the source of this
 * list: its unit test fails on a header that disagrees.
 */
#ifndef TORCHNEURON_ARG_KIND_H
#define TORCHNEURON_ARG_KIND_H

#include <torch/torch.h>

namespace torchneuron {

enum class ArgKind { Tensor, Int, Long, Float, Double };

inline const char *arg_kind_name(ArgKind kind) {
    switch (kind) {
    case ArgKind::Tensor: return "tensor";
    case ArgKind::Int: return "int";
    case ArgKind::Long: return "long";
    case ArgKind::Float: return "float";
    case ArgKind::Double: return "double";
    }
    return "?";
}

/* The kind of a parameter of C++ type T; `supported` is false for any other type. */
template <class T>
struct KindOf {
    static constexpr bool supported = false;
};
template <ArgKind K>
struct Kind {
    static constexpr bool supported = true;
    static constexpr ArgKind kind = K;
};
template <>
struct KindOf<torch::Tensor> : Kind<ArgKind::Tensor> {};
template <>
struct KindOf<const torch::Tensor &> : Kind<ArgKind::Tensor> {};
template <>
struct KindOf<int32_t> : Kind<ArgKind::Int> {};
template <>
struct KindOf<int64_t> : Kind<ArgKind::Long> {};
template <>
struct KindOf<float> : Kind<ArgKind::Float> {};
template <>
struct KindOf<double> : Kind<ArgKind::Double> {};

} // namespace torchneuron

#endif /* TORCHNEURON_ARG_KIND_H */
