// Host kernels of softmax, layer_norm and group_norm: oneDNN for f32/bf16 on contiguous
// data where it has the primitive, loops (max-subtracted, double accumulation) otherwise.
#pragma once
#include <dlf/core/op.h>

namespace dlf::kernels {

/// y (contiguous) = softmax or log_softmax of x along `dim` (already wrapped).
void softmax_kernel(const Tensor& x, int64_t dim, bool log, const Tensor& y);

/// out = {y, mean, rstd}: x normalised over its trailing `normalized_dims` dims.
void layer_norm_kernel(const Tensor& x, int64_t normalized_dims, const Tensor& weight,
                       const Tensor& bias, double eps, Outputs out);

/// out = {y, mean [N, groups], rstd [N, groups]} for x [N, C, ...]; y is laid out as x when
/// that is channels last; with `silu`, y is silu of the normalised values.
void group_norm_kernel(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                       double eps, bool silu, Outputs out);

}  // namespace dlf::kernels
