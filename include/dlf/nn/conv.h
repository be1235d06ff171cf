// Conv2d layer.
#pragma once
#include <dlf/core/ops/conv.h>
#include <dlf/nn/module.h>

namespace dlf::nn {

/// Weight [out, in/groups, kh, kw]; PyTorch's default init (uniform in ±1/sqrt(fan_in)).
class Conv2d : public Module, public Callable<Conv2d> {
 public:
  /// A kernel of `kernel` (height, width), `in` -> `out` channels.
  Conv2d(int64_t in, int64_t out, Pair kernel, Conv2dOptions conv = {}, bool with_bias = true,
         DType dtype = DType::f32);
  /// A square kernel: Conv2d(1, 8, 3).
  Conv2d(int64_t in, int64_t out, int64_t kernel, Conv2dOptions conv = {}, bool with_bias = true,
         DType dtype = DType::f32)
      : Conv2d(in, out, Pair{kernel, kernel}, conv, with_bias, dtype) {}
  Tensor forward(const Tensor& x) const;  ///< x [B, in, H, W] -> [B, out, H', W']
  /// "1, 8, kernel_size=(3, 3), stride=(1, 1)", as PyTorch.
  std::string extra_repr() const override;

  /// weight [out, in/groups, kh, kw]; bias [out], undefined without one
  ///@{
  Tensor weight, bias;
  ///@}
  Conv2dOptions options;  ///< stride, padding, dilation, groups
};

}  // namespace dlf::nn
