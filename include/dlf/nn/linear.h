// Linear and Embedding layers.
#pragma once
#include <dlf/core/ops/linalg.h>
#include <dlf/nn/module.h>

namespace dlf::nn {

struct LinearOptions {
  bool bias = true;
  DType dtype = DType::f32;
};
/// y = x Wᵀ + b with W [out, in]. PyTorch's default init: W and b uniform in ±1/sqrt(in).
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, LinearOptions options = {});
  /// The activation runs in the matmul's epilogue (one pass over the output).
  Tensor forward(const Tensor& x, Activation activation = Activation::none) const;

  Tensor weight, bias;  ///< bias is undefined without one
};

/// Rows of a [num, dim] table, initialised N(0, 1) as in PyTorch.
class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, DType dtype = DType::f32);
  Tensor forward(const Tensor& indices) const;

  Tensor weight;
};

}  // namespace dlf::nn
