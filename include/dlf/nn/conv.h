// Conv2d layer.
#pragma once
#include <dlf/core/ops/conv.h>
#include <dlf/nn/module.h>

namespace dlf::nn {

/// Weight [out, in/groups, kh, kw]; PyTorch's default init (uniform in ±1/sqrt(fan_in)).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in, int64_t out, Pair kernel, Conv2dOptions options = {}, bool bias = true,
         DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const;

  Tensor weight, bias;
  Conv2dOptions options;
};

}  // namespace dlf::nn
