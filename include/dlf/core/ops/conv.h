// Convolution, pooling and upsampling over NCHW tensors.
#pragma once
#include <array>

#include <dlf/core/tensor.h>

namespace dlf {

/// (height, width)
using Pair = std::array<int64_t, 2>;  // (height, width)

/// Options of conv2d, as torch.nn.functional.conv2d's.
struct Conv2dOptions {
  Pair stride{1, 1};    ///< (height, width)
  Pair padding{0, 0};   ///< zeros on each side, (height, width)
  Pair dilation{1, 1};  ///< spacing of the kernel's taps
  int64_t groups = 1;   ///< channel groups (in and out channels divide by it)
};
/// x [N, C, H, W], weight [O, C/groups, kH, kW], bias [O] or undefined.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});

/// Options of conv_transpose2d, as PyTorch's.
struct ConvTranspose2dOptions {
  Pair stride{1, 1};          ///< (height, width)
  Pair padding{0, 0};         ///< removed from each side of the output
  Pair output_padding{0, 0};  ///< added to one side of the output
  Pair dilation{1, 1};        ///< spacing of the kernel's taps
  int64_t groups = 1;         ///< channel groups
};
/// x [N, C, H, W], weight [C, O/groups, kH, kW] (PyTorch layout), bias [O] or undefined.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& options = {});

/// Options of max_pool2d and avg_pool2d.
struct Pool2dOptions {
  Pair kernel{2, 2};   ///< window (height, width)
  Pair stride{0, 0};   ///< 0 means the kernel size
  Pair padding{0, 0};  ///< on each side, (height, width)
};
/// The largest element of each window.
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options = {});
/// Padding counts towards the divisor (PyTorch's count_include_pad=True).
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options = {});

/// Resizes H, W to `size`.
Tensor upsample_nearest2d(const Tensor& x, Pair size);
/// Resizes H, W to `size` by bilinear interpolation (PyTorch's align_corners).
Tensor upsample_bilinear2d(const Tensor& x, Pair size, bool align_corners = false);

}  // namespace dlf
