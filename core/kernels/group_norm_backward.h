// group_norm's fused backward: dx, dweight and dbias in two passes over each (sample, group).
#pragma once
#include <dlf/core/tensor.h>

namespace dlf::kernels {

/// g, x [N, C, ...] as any strides, mean and rstd [N, groups] from the forward, weight and bias
/// [C] or undefined. Writes dx (contiguous, x's shape) and, when defined, dweight and dbias
/// [C]. With `silu`, g is the gradient of silu(z), z = x̂·weight + bias (GroupNorm + SiLU as
/// one op): g·silu'(z) is formed on the fly. The per-channel sums add the samples in order, so
/// results do not depend on the thread count.
void group_norm_backward(int64_t groups, const Tensor& g, const Tensor& x, const Tensor& weight,
                         const Tensor& bias, const Tensor& mean, const Tensor& rstd, bool silu,
                         const Tensor& dx, const Tensor& dweight, const Tensor& dbias);

}  // namespace dlf::kernels
