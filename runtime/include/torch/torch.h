/*
 * <torch/torch.h>: the device-side subset of the torch C++ API that the AWS Neuron
 * custom-op documentation lists, over the neuroncustomop runtime's C ABI, with no STL.
 *
 * What is here, and what of the documented API is not (with the reason), is the C++
 * chapter of docs/op-author-guide.md. In short: torch::Tensor (numel, sizes, size,
 * dim, scalar_type, data_ptr, fill_, the element / stream / TCM accessors and the
 * coherence policy), the factories empty / zeros / ones / full / eye, the documented
 * element-wise operations in their plain and _out forms, torch::neuron::tcm_malloc /
 * tcm_free, get_dst_tensor(), get_cpu_id() / get_cpu_count(), and assert and printf,
 * as the vendor's headers give them.
 *
 * Tensors are contiguous and row-major; their data lives in device memory (inputs and
 * the output where the host placed them, new tensors on the HBM heap). A misuse that
 * cannot be a compile error (an accessor of the wrong dtype or rank, operands of
 * different shapes, an exhausted heap) ends the op with a named status (docs/abi,
 * descriptors.md) and a line on stdout saying why.
 *
 * Compiled with TORCHNEURON_HOST defined, the same headers are the host stub the shape
 * functions run against: tensors there have a shape and a dtype but no data.
 *
 * This header only includes its parts, cut where PyTorch cuts its own:
 *   <torch/types.h>        Half, BFloat16, ScalarType, IntArrayRef, Scalar, TensorOptions
 *   <torch/tensor_impl.h>  what a tensor refers to          (c10/core/TensorImpl.h)
 *   <torch/accessors.h>    element, stream and TCM accessors (ATen/core/TensorAccessor.h)
 *   <torch/tensor.h>       torch::Tensor                     (ATen/core/TensorBody.h)
 *   <torch/factories.h>    empty, zeros, ones, full, eye     (ATen/ops)
 *   <torch/ops.h>          the element-wise operations       (ATen/ops)
 *   <torch/neuron.h>       get_dst_tensor, torch::neuron::tcm_malloc / tcm_free
 * Each part includes what it needs; the runtime's C functions they call are declared
 * once, in <neuroncustomop.h> (through <torchneuron/c_abi.h>).
 */
#ifndef TORCHNEURON_TORCH_H
#define TORCHNEURON_TORCH_H

#include <torch/types.h>
#include <torch/tensor_impl.h>
#include <torch/accessors.h>
#include <torch/tensor.h>
#include <torch/factories.h>
#include <torch/ops.h>
#include <torch/neuron.h>

#include <neuron/neuron-utils.hpp>

/* The vendor's <torch/torch.h> gives assert (the AWS reference's own examples use it
 * with no include) and printf; so does this one. On the device, a failed assert ends
 * the op with ASSERT_FAILED and prints the expression and file:line (<assert.h>). */
#include <assert.h>
#include <stdio.h>

#endif /* TORCHNEURON_TORCH_H */
