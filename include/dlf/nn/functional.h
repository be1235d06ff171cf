// The functional API (torch.nn.functional): the layers' operations without their parameters.
// Most are dlf's ops themselves, gathered here under one name.
#pragma once
#include <dlf/core/ops/conv.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/linalg.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/core/ops/normalization.h>

namespace dlf::nn::functional {

using dlf::avg_pool2d;
using dlf::conv2d;
using dlf::conv_transpose2d;
using dlf::cross_entropy;
using dlf::dropout;
using dlf::embedding;
using dlf::gelu;
using dlf::group_norm;
using dlf::layer_norm;
using dlf::linear;
using dlf::log_softmax;
using dlf::max_pool2d;
using dlf::relu;
using dlf::scaled_dot_product_attention;
using dlf::sigmoid;
using dlf::softmax;
using dlf::upsample_bilinear2d;
using dlf::upsample_nearest2d;

/// Mean (or sum, or none) of (input - target)².
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
/// x · sigmoid(x): dlf::silu, as torch.nn.functional.silu.
Tensor silu(const Tensor& x);

}  // namespace dlf::nn::functional
