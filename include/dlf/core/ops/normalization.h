// Softmax and normalisation layers' functional forms.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf {

Tensor softmax(const Tensor& x, int64_t dim);      ///< exp(x) / sum(exp(x)) along `dim`
Tensor log_softmax(const Tensor& x, int64_t dim);  ///< log(softmax(x, dim)), computed stably

/// Normalises over the trailing `normalized_shape` dims; weight and bias (of that shape)
/// may be undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

/// RMSNorm (Llama's): x / sqrt(mean(x²) + eps) · weight over the last dim; weight [C] may be
/// undefined. The op's second output is the per-row rstd (f32, or f64 for f64), for backward.
Tensor rms_norm(const Tensor& x, const Tensor& weight = {}, double eps = 1e-6);

/// x [N, C, ...] normalised over each of `groups` groups of C/groups channels; weight and
/// bias [C] may be undefined.
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
/// silu(group_norm(...)) as one op: one pass over memory each way, and no normalised
/// activation kept for backward (it is recomputed from x there).
Tensor group_norm_silu(const Tensor& x, int64_t groups, const Tensor& weight = {},
                       const Tensor& bias = {}, double eps = 1e-5);

}  // namespace dlf
