// Loop kernels of the conv family for dtypes (f64) or cases oneDNN does not take.
#pragma once
#include <dlf/core/tensor.h>

#include "core/kernels/conv_geometry.h"

namespace dlf::kernels {

/// conv2d or, when g.transposed, conv_transpose2d: im2col (col2im) and one GEMM per image and
/// group, computed in acc_t of the dtype (double for f64). Inputs may be strided.
void conv2d_loops(const ConvGeometry& g, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& out);

/// The weight gradient of conv2d (g not transposed): x [N, C, H, W], grad [N, O, Ho, Wo] ->
/// grad_weight [O, C/groups, kH, kW] (contiguous). im2col and one GEMM per group, in acc_t.
void conv2d_weight_grad_loops(const ConvGeometry& g, const Tensor& x, const Tensor& grad,
                              const Tensor& grad_weight);

}  // namespace dlf::kernels
