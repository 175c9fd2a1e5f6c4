/*
 * torchneuron/support.h: what every part of the torch API builds on: the runtime's
 * status codes it reports, the failure path (a named status and a line on stdout, then
 * the kernel ends), the few type traits the headers need without the STL, and the
 * allocation of tensor memory (the HBM heap on the device, malloc on the host).
 */
#ifndef TORCHNEURON_SUPPORT_H
#define TORCHNEURON_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include <torchneuron/c_abi.h>

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
    if (block == nullptr) {
        fail(STATUS_OUT_OF_MEMORY, "torch: no memory for a new tensor");
    }
#else
    void *block = neuron_hbm_malloc(bytes == 0 ? 1 : bytes);
    if (block == nullptr) {
        size_t free_bytes = 0, largest_free = 0;
        neuron_cxx_heap_room(&free_bytes, &largest_free);
        char message[192];
        snprintf(message, sizeof message,
                 "torch: the HBM heap has no room for %u bytes (a new tensor): %u bytes are free, the largest free "
                 "block is %u bytes",
                 unsigned(bytes), unsigned(free_bytes), unsigned(largest_free));
        fail(STATUS_OUT_OF_MEMORY, message);
    }
#endif
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

#endif /* TORCHNEURON_SUPPORT_H */
