// The sizes of a 2-D convolution (or transposed convolution) and of a pooling window.
#pragma once
#include <array>
#include <cstdint>

#include <dlf/core/op.h>

namespace dlf::kernels {

struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0;
  std::array<int64_t, 2> stride{}, padding{}, dilation{}, output_padding{};
  int64_t groups = 1;
  bool transposed = false;

  /// Multiply-adds per output point of a convolution (per input point when transposed):
  /// the channels of one group on the other side times the kernel area.
  int64_t macs_per_point() const {
    const int64_t group_channels = (transposed ? out_channels : in_channels) / groups;
    return group_channels * kernel_h * kernel_w;
  }
};

/// x [N, C, H, W]; weight [O, C/groups, kH, kW] or, transposed, [C, O/groups, kH, kW].
/// Assumes the operands were validated; computes the output size.
inline ConvGeometry conv_geometry(const Tensor& x, const Tensor& weight, const Attrs& attrs,
                                  bool transposed) {
  ConvGeometry g;
  g.transposed = transposed;
  g.batch = x.size(0);
  g.in_channels = x.size(1);
  g.in_h = x.size(2);
  g.in_w = x.size(3);
  g.kernel_h = weight.size(2);
  g.kernel_w = weight.size(3);
  g.groups = attrs.i("groups");
  g.out_channels = transposed ? weight.size(1) * g.groups : weight.size(0);
  const std::array<int64_t, 2> in_size{g.in_h, g.in_w}, kernel{g.kernel_h, g.kernel_w};
  std::array<int64_t, 2> out_size{};
  for (size_t d = 0; d < 2; ++d) {
    g.stride[d] = attrs.ints("stride")[d];
    g.padding[d] = attrs.ints("padding")[d];
    g.dilation[d] = attrs.ints("dilation")[d];
    if (transposed) g.output_padding[d] = attrs.ints("output_padding")[d];
    const int64_t span = g.dilation[d] * (kernel[d] - 1) + 1;  // the dilated kernel's extent
    out_size[d] =
        transposed ? (in_size[d] - 1) * g.stride[d] - 2 * g.padding[d] + span + g.output_padding[d]
                   : (in_size[d] + 2 * g.padding[d] - span) / g.stride[d] + 1;
  }
  g.out_h = out_size[0];
  g.out_w = out_size[1];
  return g;
}

/// A pooling window, (height, width) each; the output is floor((in + 2p - k) / s) + 1.
struct PoolWindow {
  std::array<int64_t, 2> kernel{}, stride{}, padding{};
};

}  // namespace dlf::kernels
