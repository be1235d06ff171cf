// Parameter-free layers, as modules (for nn::Sequential and printing): activations, Flatten,
// Dropout.
#pragma once
#include <string>

#include <dlf/core/ops/elementwise.h>
#include <dlf/core/random.h>
#include <dlf/nn/module.h>

namespace dlf::nn {

/// max(x, 0), as a module.
class ReLU : public Module, public Callable<ReLU> {
 public:
  /// Relu(x)
  Tensor forward(const Tensor& x) const { return relu(x); }
};

/// GELU as a module, exact (erf) or tanh-approximated.
class GELU : public Module, public Callable<GELU> {
 public:
  /// With `form`'s formula.
  explicit GELU(GeluApproximation form = GeluApproximation::erf) : approximation(form) {}
  /// Gelu(x, approximation)
  Tensor forward(const Tensor& x) const { return gelu(x, approximation); }
  std::string extra_repr() const override;  ///< "approximate='tanh'" or nothing

  GeluApproximation approximation;  ///< erf or tanh
};

/// x · sigmoid(x) (also called swish).
class SiLU : public Module, public Callable<SiLU> {
 public:
  Tensor forward(const Tensor& x) const;  ///< silu(x) = x sigmoid(x)
};

/// tanh as a module.
class Tanh : public Module, public Callable<Tanh> {
 public:
  /// Tanh(x)
  Tensor forward(const Tensor& x) const { return tanh(x); }
};

/// The logistic function as a module.
class Sigmoid : public Module, public Callable<Sigmoid> {
 public:
  /// Sigmoid(x)
  Tensor forward(const Tensor& x) const { return sigmoid(x); }
};

/// Dims start..end (end inclusive, negative from the back) made one, as torch.nn.Flatten.
class Flatten : public Module, public Callable<Flatten> {
 public:
  /// Dims start..end merged (PyTorch's defaults: all but the batch dim)
  explicit Flatten(int64_t start = 1, int64_t end = -1) : start_dim(start), end_dim(end) {}
  /// X.flatten(start_dim, end_dim)
  Tensor forward(const Tensor& x) const { return x.flatten(start_dim, end_dim); }
  std::string extra_repr() const override;  ///< "start_dim=1, end_dim=-1"

  /// the dims merged
  ///@{
  int64_t start_dim, end_dim;
  ///@}
};

/// Active only in training mode; draws from `gen` (the default generator when null), whose
/// state a checkpoint saves.
class Dropout : public Module, public Callable<Dropout> {
 public:
  /// Drops with probability `p`, drawing from `gen` (the default generator if null)
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  /// X with elements zeroed and the rest scaled by 1/(1-p) in training; x in eval.
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;  ///< "p=0.5"

  double p;  ///< the drop probability

 private:
  Generator* gen_;
};

}  // namespace dlf::nn
