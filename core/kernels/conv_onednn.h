// oneDNN kernels (f32, bf16) of the conv family; primitives and reorders are cached by shape.
#pragma once
#include <dlf/core/op.h>

#include "core/kernels/conv_geometry.h"

namespace dlf::kernels {

/// Whether oneDNN can take this transposed convolution: its right padding
/// (padding - output_padding) must exceed -stride.
bool onednn_takes_conv_transpose(const ConvGeometry& g);

/// conv2d or, when g.transposed, conv_transpose2d: out = conv(x, weight) + bias (if defined).
/// `key` identifies the op and its attrs; the operands' layouts are added to it.
void conv2d_onednn(const ConvGeometry& g, const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Tensor& out, const std::string& key);

/// Average pooling with the padding counted in the divisor.
void avg_pool2d_onednn(const Tensor& x, const PoolWindow& window, const Tensor& out,
                       const std::string& key);

}  // namespace dlf::kernels
