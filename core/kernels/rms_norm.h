// rms_norm's fused forward and backward kernels: one pass over a row each way (two reads of it
// in backward), statistics in double for f64 and float otherwise.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf::kernels {

/// y = x · rstd · weight over the last dim (n), rstd = 1/sqrt(mean(x²) + eps) per row. x of any
/// strides; weight [n] or undefined; y contiguous, rstd [rows] of acc_dtype(x).
void rms_norm_forward(const Tensor& x, const Tensor& weight, double eps, const Tensor& y,
                      const Tensor& rstd);

/// With x̂ = x · rstd and ĝ = g · weight, per row: dx = rstd · (ĝ − x̂ · mean(ĝ x̂)), and
/// dweight = Σ_rows g x̂ (when defined). The column sums run over fixed blocks of rows added
/// in order: results do not depend on the thread count.
void rms_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                       const Tensor& dx, const Tensor& dweight);

}  // namespace dlf::kernels
