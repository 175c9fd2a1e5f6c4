/*
 * <torch/factories.h>: the functions that make a new tensor on the HBM heap: empty,
 * zeros, ones, full and eye (PyTorch's ATen/ops/<name>.h, one per factory). The dtype
 * is required, as the AWS documentation says.
 */
#ifndef TORCHNEURON_TORCH_FACTORIES_H
#define TORCHNEURON_TORCH_FACTORIES_H

#include <stdint.h>

#include <torch/tensor.h>

#ifndef TORCHNEURON_HOST
#include <string.h>
#endif

namespace torch {

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

} // namespace torch

#endif /* TORCHNEURON_TORCH_FACTORIES_H */
