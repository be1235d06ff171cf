// group_norm and its backward on channels-last [N, C, H, W] data: each pixel's channels lie
// together, so every pass runs over the pixels with the channels as the vectorised inner loop
// (per-channel sums, then one multiply-add per element), never reordering the tensor.
#pragma once
#include <dlf/core/op.h>

namespace dlf::kernels {

/// out = {y, mean [N, groups], rstd [N, groups]}: x and y channels last (is_channels_last()),
/// weight and bias [C] or undefined; with `silu`, y is silu of the normalised values.
/// Statistics in double, two passes as the row-major kernel.
void group_norm_channels_last(const Tensor& x, int64_t groups, const Tensor& weight,
                              const Tensor& bias, double eps, bool silu, Outputs out);

/// As group_norm_backward (group_norm_backward.h) with g, x and dx channels last.
void group_norm_backward_channels_last(int64_t groups, const Tensor& g, const Tensor& x,
                                       const Tensor& weight, const Tensor& bias, const Tensor& mean,
                                       const Tensor& rstd, bool silu, const Tensor& dx,
                                       const Tensor& dweight, const Tensor& dbias);

}  // namespace dlf::kernels
