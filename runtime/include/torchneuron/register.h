/*
 * "torchneuron/register.h": NEURON_LIBRARY, the registration a shape source makes, as
 * the AWS Neuron custom-op documentation shows it:
 *
 *     NEURON_LIBRARY(my_ops, m) {
 *         m.def("tensor_negate", &tensor_negate_shape, "tensor_negate_compute");
 *     }
 *
 * The shape source is compiled for the host (with TORCHNEURON_HOST: torch::Tensor has
 * a shape and a dtype, no data) together with the build's shape driver, which runs the
 * registration to learn each op's name, its compute function's name and its argument
 * kinds, and calls the shape functions to learn output shapes. m.def records the shape
 * function with a caller derived from its C++ type (decltype), so the driver can call
 * it with arguments it makes up at run time.
 */
#ifndef TORCHNEURON_REGISTER_H
#define TORCHNEURON_REGISTER_H

#include <torch/torch.h>
#include <torchneuron/arg_kind.h>

namespace torchneuron {

/* One argument the driver passes to a shape function. */
struct HostArg {
    ArgKind kind;
    torch::Tensor tensor;
    int64_t integer;
    double real;
};

/* How an argument of kind K is made from a HostArg (the kinds: arg_kind.h). */
template <ArgKind K>
struct FromHostKind;
template <>
struct FromHostKind<ArgKind::Tensor> {
    static torch::Tensor get(const HostArg &a) { return a.tensor; }
};
template <>
struct FromHostKind<ArgKind::Int> {
    static int32_t get(const HostArg &a) { return int32_t(a.integer); }
};
template <>
struct FromHostKind<ArgKind::Long> {
    static int64_t get(const HostArg &a) { return a.integer; }
};
template <>
struct FromHostKind<ArgKind::Float> {
    static float get(const HostArg &a) { return float(a.real); }
};
template <>
struct FromHostKind<ArgKind::Double> {
    static double get(const HostArg &a) { return a.real; }
};

/* How a parameter of type T is made from a HostArg: by its kind. */
template <class T, bool = KindOf<T>::supported>
struct FromHost {
    static constexpr bool supported = false;
};
template <class T>
struct FromHost<T, true> : FromHostKind<KindOf<T>::kind> {
    static constexpr bool supported = true;
    static constexpr ArgKind kind = KindOf<T>::kind;
};

/* The most ops a registry records (more are counted, and refused by the driver). */
constexpr size_t kMaxRecordedOps = 64;
constexpr size_t kMaxArgs = 10;

/* One m.def. */
struct OpDef {
    const char *name;
    const char *kernel;
    void *shape_fn;
    torch::Tensor (*call)(void *shape_fn, const HostArg *args);
    size_t arity;
    ArgKind kinds[kMaxArgs];
};

struct Registry {
    const char *library = nullptr;
    size_t count = 0;
    OpDef ops[kMaxRecordedOps];
    bool too_many_args = false;
};

inline Registry &registry() {
    static Registry instance;
    return instance;
}

template <class R, class... A>
struct ShapeCaller {
    template <size_t... I>
    static torch::Tensor call(R (*fn)(A...), const HostArg *args, Indices<I...>) {
        return fn(FromHost<A>::get(args[I])...);
    }
    static torch::Tensor invoke(void *fn, const HostArg *args) {
        return call(reinterpret_cast<R (*)(A...)>(fn), args, typename MakeIndices<sizeof...(A)>::type{});
    }
};

template <class... A>
struct AllSupported {
    static constexpr bool value = true;
};
template <class T, class... A>
struct AllSupported<T, A...> {
    static constexpr bool value = FromHost<T>::supported && AllSupported<A...>::value;
};

class Library {
  public:
    /* Registers op `name`: its shape function, and the name of its compute function. */
    template <class R, class... A>
    Library &def(const char *name, R (*shape_fn)(A...), const char *kernel) {
        static_assert(is_same<R, torch::Tensor>::value, "NEURON_LIBRARY: a shape function returns torch::Tensor");
        static_assert(AllSupported<A...>::value,
                      "NEURON_LIBRARY: a shape function parameter is not torch::Tensor, const torch::Tensor&, "
                      "int, int32_t, int64_t, float or double");
        Registry &r = registry();
        if (r.count < kMaxRecordedOps) {
            OpDef &op = r.ops[r.count];
            op.name = name;
            op.kernel = kernel;
            op.shape_fn = reinterpret_cast<void *>(shape_fn);
            op.call = &ShapeCaller<R, A...>::invoke;
            op.arity = sizeof...(A);
            if (sizeof...(A) > kMaxArgs) {
                r.too_many_args = true;
            } else {
                ArgKind kinds[] = {FromHost<A>::kind..., ArgKind::Tensor};
                for (size_t i = 0; i < sizeof...(A); i++) {
                    op.kinds[i] = kinds[i];
                }
            }
        }
        r.count++;
        return *this;
    }
};

/* Runs a library's registration once, before the driver's main. */
struct LibraryInit {
    LibraryInit(const char *name, void (*init)(Library &)) {
        registry().library = name;
        Library library;
        init(library);
    }
};

} // namespace torchneuron

#define NEURON_LIBRARY(lib, m)                                                                            \
    static void torchneuron_library_init_##lib(torchneuron::Library &);                                    \
    static const torchneuron::LibraryInit torchneuron_library_##lib(#lib, &torchneuron_library_init_##lib); \
    static void torchneuron_library_init_##lib(torchneuron::Library &m)

#endif /* TORCHNEURON_REGISTER_H */
