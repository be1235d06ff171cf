// Convolution, pooling and upsampling over NCHW tensors.
#pragma once
#include <array>

#include <dlf/core/tensor.h>

namespace dlf {

using Pair = std::array<int64_t, 2>;  // (height, width)

struct Conv2dOptions {
  Pair stride{1, 1};
  Pair padding{0, 0};
  Pair dilation{1, 1};
  int64_t groups = 1;
};
/// x [N, C, H, W], weight [O, C/groups, kH, kW], bias [O] or undefined.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});

struct ConvTranspose2dOptions {
  Pair stride{1, 1};
  Pair padding{0, 0};
  Pair output_padding{0, 0};
  Pair dilation{1, 1};
  int64_t groups = 1;
};
/// x [N, C, H, W], weight [C, O/groups, kH, kW] (PyTorch layout), bias [O] or undefined.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& options = {});

struct Pool2dOptions {
  Pair kernel{2, 2};
  Pair stride{0, 0};  ///< 0 means the kernel size
  Pair padding{0, 0};
};
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options = {});
/// Padding counts towards the divisor (PyTorch's count_include_pad=True).
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options = {});

/// Resizes H, W to `size`.
Tensor upsample_nearest2d(const Tensor& x, Pair size);
Tensor upsample_bilinear2d(const Tensor& x, Pair size, bool align_corners = false);

}  // namespace dlf
