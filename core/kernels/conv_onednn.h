// oneDNN kernels (f32, bf16) of the conv family; primitives and reorders are cached by shape.
#pragma once
#include <dlf/core/op.h>

#include "core/kernels/conv_geometry.h"

namespace dlf::kernels {

/// Whether oneDNN can take this geometry: the right padding (what the last window reaches past
/// the larger side; padding - output_padding for a transposed convolution) must exceed -stride.
bool onednn_takes_geometry(const ConvGeometry& g);

/// conv2d or, when g.transposed, conv_transpose2d: out = conv(x, weight) + bias (if defined)
/// + residual (if defined: copied into out, unless it is out's bytes already, and summed into by
/// the primitive; x and out channels last, residual in out's layout).
/// `key` identifies the op and its attrs; the operands' layouts are added to it.
void conv2d_onednn(const ConvGeometry& g, const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Tensor& out, const std::string& key, const Tensor& residual = {});

/// Average pooling with the padding counted in the divisor.
void avg_pool2d_onednn(const Tensor& x, const PoolWindow& window, const Tensor& out,
                       const std::string& key);

/// The gradient of avg_pool2d (padding counted): grad [N, C, Ho, Wo] -> grad_input [N, C, H, W].
void avg_pool2d_backward_onednn(const Tensor& grad, const PoolWindow& window,
                                const Tensor& grad_input, const std::string& key);

/// The weight gradient of conv2d (g not transposed): x [N, C, H, W], grad [N, O, Ho, Wo] ->
/// grad_weight [O, C/groups, kH, kW] (contiguous).
void conv2d_weight_grad_onednn(const ConvGeometry& g, const Tensor& x, const Tensor& grad,
                               const Tensor& grad_weight, const std::string& key);

}  // namespace dlf::kernels
