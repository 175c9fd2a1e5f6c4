/*
 * torchneuron/c_abi.h: the runtime's C ABI as the C++ torch API sees it. Every runtime
 * function the torch headers, the generated kernel entry and <neuron/neuron-utils.hpp>
 * call is declared once, in <neuroncustomop.h>; this header includes it with two
 * settings made first:
 *
 *  - TORCHNEURON_API: ::get_dst_tensor() is the torch API's (it returns a torch::Tensor,
 *    as the AWS documentation shows it), so the C function of that symbol is declared
 *    as torchneuron_c_get_dst_tensor instead;
 *  - on the host (TORCHNEURON_HOST: the shape functions), the system's C library
 *    declares memcpy, malloc and the rest with its own exception specifications, so
 *    the C header leaves its libc declarations out.
 */
#ifndef TORCHNEURON_C_ABI_H
#define TORCHNEURON_C_ABI_H

#define TORCHNEURON_API 1
#if defined(TORCHNEURON_HOST) && !defined(NEURONCUSTOMOP_NO_LIBC_DECLARATIONS)
#define NEURONCUSTOMOP_NO_LIBC_DECLARATIONS
#endif
#include <neuroncustomop.h>

#ifndef NEURONCUSTOMOP_TORCH_API
#error "<neuroncustomop.h> was included before the torch API: in C++, include <torch/torch.h> (or <neuron/neuron-utils.hpp>) first, so that get_dst_tensor() is the torch API's"
#endif

#endif /* TORCHNEURON_C_ABI_H */
