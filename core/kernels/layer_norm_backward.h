// layer_norm's fused backward: dx, dweight and dbias in two passes over the rows.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf::kernels {

/// g, x [rows, n] as any shape and strides, mean and rstd [rows] from the forward, weight [n] or
/// undefined. Writes dx (contiguous, x's shape) and, when defined, dweight and dbias [n]. The
/// column sums run over fixed blocks of rows, added in order, so results do not depend on the
/// thread count.
void layer_norm_backward(int64_t n, const Tensor& g, const Tensor& x, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                         const Tensor& dweight, const Tensor& dbias);

}  // namespace dlf::kernels
