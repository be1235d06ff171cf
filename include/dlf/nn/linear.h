// Linear and Embedding layers.
#pragma once
#include <functional>
#include <memory>

#include <dlf/core/ops/linalg.h>
#include <dlf/nn/module.h>

namespace dlf::nn {

/// Options of a Linear layer.
struct LinearOptions {
  bool bias = true;          ///< with a bias
  DType dtype = DType::f32;  ///< of the parameters
};
/// y = x Wᵀ + b with W [out, in]. PyTorch's default init: W and b uniform in ±1/sqrt(in).
class Linear : public Module, public Callable<Linear> {
 public:
  /// Y = x W^T + b, W [out, in] (PyTorch's init)
  Linear(int64_t in, int64_t out, LinearOptions options = {});
  /// The activation runs in the matmul's epilogue (one pass over the output). Tensor-parallel
  /// layers (parallel/) override it with their collectives.
  virtual Tensor forward(const Tensor& x, Activation activation = Activation::none) const;
  std::string extra_repr() const override;  ///< "in_features=784, out_features=64, bias=true"

  /// weight [out, in]; bias [out], undefined without one
  ///@{
  Tensor weight, bias;
  ///@}
};

/// How tensor parallelism splits a model's Linear (Megatron-LM): `column` splits its outputs
/// (the projections into attention heads, an MLP's first layer), `row` its inputs (the layers
/// that follow those). On one device every Linear is whole.
enum class LinearParallel { column, row };

/// Makes a model's Linear layers; parallel::megatron_linears(group) makes tensor-parallel ones.
using LinearMaker =
    std::function<std::shared_ptr<Linear>(int64_t in, int64_t out, LinearParallel, LinearOptions)>;

/// `maker`'s Linear, or a whole nn::Linear when `maker` is empty.
std::shared_ptr<Linear> make_linear(const LinearMaker& maker, int64_t in, int64_t out,
                                    LinearParallel split, LinearOptions options = {});

/// Rows of a [num, dim] table, initialised N(0, 1) as in PyTorch.
class Embedding : public Module, public Callable<Embedding> {
 public:
  /// `num` vectors of `dim`, N(0, 1)
  Embedding(int64_t num, int64_t dim, DType dtype = DType::f32);
  Tensor forward(const Tensor& indices) const;  ///< indices (integers) [...] -> [..., dim]
  std::string extra_repr() const override;      ///< "num, dim"

  Tensor weight;  ///< [num, dim]
};

}  // namespace dlf::nn
