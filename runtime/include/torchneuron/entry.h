/*
 * torchneuron/entry.h: the kernel entry the build generates for each function a
 * C++ library registers (what the vendor's build wraps a compute function in).
 *
 * torchneuron::entry::run(&kernel) is the whole entry: it pulls the arguments in the
 * order of the kernel's C++ parameters (the types come from decltype(&kernel), never
 * from the source text), calls the kernel, hands its result to the loader and cleans
 * up; the loader reads the invocation status. Each parameter type is an argument
 * kind (torchneuron/arg_kind.h), and each kind pulls one way (PullKind below): a
 * tensor with customop_next_tensor(), an int with customop_next_int(), a long
 * (int64_t) with customop_next_longlong(), a float with customop_next_float(), and a
 * double with customop_next_float(), widened (the wire carries a C float).
 *
 * Any other type does not compile (the generated unit's static_assert names the
 * argument). The result: if the kernel took get_dst_tensor(), it wrote the output
 * there and the tensor it returns is ignored; otherwise the tensor it returns (made
 * with torch::empty / zeros / ...) is checked against the output descriptor (dtype,
 * then shape: DTYPE_MISMATCH / SHAPE_MISMATCH) and copied into it.
 *
 * With -DSTACK_SIZE=N (the vendor's flag; at most 400 KiB) the kernel runs on a stack
 * of N bytes taken from the HBM heap (switch_stack_or_call_wrapper); without it, on
 * the core's own stack.
 */
#ifndef TORCHNEURON_ENTRY_H
#define TORCHNEURON_ENTRY_H

/* The runtime functions below are declared in <neuroncustomop.h>, which the torch API
 * includes. */
#include <torch/torch.h>
#include <torchneuron/arg_kind.h>
#include <string.h>

namespace torchneuron {
namespace entry {

/* How an argument of kind K is pulled (the kinds: arg_kind.h): `Stored` holds it
 * for the call; `index` is its position, which a tensor keeps for messages. */
template <ArgKind K>
struct PullKind;
template <>
struct PullKind<ArgKind::Tensor> {
    using Stored = torch::Tensor;
    static Stored pull(int index) {
        TensorImpl *impl = impl_from_descriptor(customop_next_tensor());
        if (impl != nullptr) {
            impl->origin = index;
        }
        return torch::Tensor(impl);
    }
};
template <>
struct PullKind<ArgKind::Int> {
    using Stored = int32_t;
    static Stored pull(int) { return customop_next_int(); }
};
template <>
struct PullKind<ArgKind::Long> {
    using Stored = int64_t;
    static Stored pull(int) { return customop_next_longlong(); }
};
template <>
struct PullKind<ArgKind::Float> {
    using Stored = float;
    static Stored pull(int) { return customop_next_float(); }
};
template <>
struct PullKind<ArgKind::Double> {
    using Stored = double;
    static Stored pull(int) { return customop_next_float(); }
};

/* How a parameter of type T is pulled: by its kind. */
template <class T, bool = KindOf<T>::supported>
struct Pull {
    static constexpr bool supported = false;
};
template <class T>
struct Pull<T, true> : PullKind<KindOf<T>::kind> {
    static constexpr bool supported = true;
};

/* The parameters of a function type, by position. */
template <class F>
struct Signature;
template <class R, class... A>
struct Signature<R (*)(A...)> {
    static constexpr size_t arity = sizeof...(A);
    using Result = R;
};

template <size_t I, class... A>
struct Nth;
template <size_t I, class T, class... A>
struct Nth<I, T, A...> : Nth<I - 1, A...> {};
template <class T, class... A>
struct Nth<0, T, A...> {
    using type = T;
};

/* Parameter I of function pointer type F. */
template <size_t I, class F>
struct Parameter;
template <size_t I, class R, class... A>
struct Parameter<I, R (*)(A...)> {
    using type = typename Nth<I, A...>::type;
};

/* One pulled argument, tagged with its position. */
template <size_t I, class T>
struct Slot {
    typename Pull<T>::Stored value;
};

template <class Seq, class... A>
struct Pulled;
template <size_t... I, class... A>
struct Pulled<Indices<I...>, A...> : Slot<I, A>... {};

/* The library's shape sources, for messages (the build defines it). */
#ifndef TORCHNEURON_SHAPE_SRCS
#define TORCHNEURON_SHAPE_SRCS "shape_srcs"
#endif

/* `shape` as "[32, 120]", in `text`. */
inline const char *format_shape(c10::IntArrayRef shape, char *text, size_t size) {
    size_t used = size_t(snprintf(text, size, "["));
    for (size_t i = 0; i < shape.size() && used < size; i++) {
        used += size_t(snprintf(text + used, size - used, i == 0 ? "%ld" : ", %ld", long(shape[i])));
    }
    if (used < size) {
        snprintf(text + used, size - used, "]");
    }
    return text;
}

/* Records `status` with "kernel entry: the returned tensor is <returned>, but the shape
 * function (<sources>) says the output is <expected>: ...". */
inline void disagree(Status status, const char *returned, const char *expected) {
    char message[256];
    snprintf(message, sizeof message,
             "kernel entry: the returned tensor is %s, but the shape function (%s) says the output is %s: the "
             "kernel and its shape function must agree",
             returned, TORCHNEURON_SHAPE_SRCS, expected);
    neuron_cxx_record(status, message);
}

/* The kernel's result into the output: the returned tensor, unless the kernel wrote
 * through get_dst_tensor(). */
inline void deliver(const torch::Tensor &returned) {
    DstState &state = dst_state();
    if (state.impl == nullptr) {
        if (!returned.defined()) {
            neuron_cxx_record(STATUS_SHAPE_MISMATCH, "kernel entry: the kernel returned no tensor and did not write get_dst_tensor()");
            return;
        }
        torch::Tensor out = get_dst_tensor(); /* fails the op if there is no output */
        if (returned.scalar_type() != out.scalar_type()) {
            disagree(STATUS_DTYPE_MISMATCH, dtype_name(returned.scalar_type()), dtype_name(out.scalar_type()));
            return;
        }
        if (returned.sizes() != out.sizes()) {
            char got[96], expected[96];
            disagree(STATUS_SHAPE_MISMATCH, format_shape(returned.sizes(), got, sizeof got),
                     format_shape(out.sizes(), expected, sizeof expected));
            return;
        }
        if (out.nbytes() != 0) {
            /* A CPU copy: the vendor documents get_dst_tensor() as the way to avoid it. */
            memcpy(out.data_ptr(), returned.data_ptr(), out.nbytes());
        }
    }
    customop_return_tensor(dst_state().descriptor);
}

template <class F, class... A, size_t... I>
inline void pull_and_call(F kernel, Indices<I...>) {
    /* Braced initialisation runs the pulls left to right: argument order. */
    Pulled<Indices<I...>, A...> args{Slot<I, A>{Pull<A>::pull(int(I))}...};
    if (customop_invocation_status() != 0) {
        return; /* a pull failed: its status is the op's; the kernel does not run */
    }
    torch::Tensor returned = kernel(static_cast<Slot<I, A> &>(args).value...);
    deliver(returned);
}

template <class R, class... A>
struct Call {
    R (*kernel)(A...);
    static void invoke(void *self) {
        Call *call = static_cast<Call *>(self);
        pull_and_call<R (*)(A...), A...>(call->kernel, typename MakeIndices<sizeof...(A)>::type{});
    }
};

/* The entry of `kernel`: setup, pulls, the kernel, its result, cleanup. */
template <class R, class... A>
inline void run(R (*kernel)(A...)) {
    static_assert(is_same<R, torch::Tensor>::value, "a kernel returns torch::Tensor");
    dst_state().descriptor = nullptr;
    dst_state().impl = nullptr;
    if (customop_setup(false) == 0) {
        Call<R, A...> call{kernel};
#if defined(STACK_SIZE) && STACK_SIZE > 0
        static_assert(STACK_SIZE <= 400 * 1024, "STACK_SIZE: at most 400 KiB (409600 bytes)");
        int32_t stack_status = switch_stack_or_call_wrapper(&Call<R, A...>::invoke, &call, STACK_SIZE);
        if (stack_status != 0) {
            neuron_cxx_record(STATUS_OUT_OF_MEMORY, "kernel entry: no stack of STACK_SIZE bytes (see switch_stack_or_call_wrapper's status)");
        }
#else
        Call<R, A...>::invoke(&call);
#endif
    }
    /* The output tensor of get_dst_tensor() is released before cleanup. */
    drop_impl(dst_state().impl);
    dst_state().impl = nullptr;
    customop_cleanup();
}

} // namespace entry
} // namespace torchneuron

#endif /* TORCHNEURON_ENTRY_H */
