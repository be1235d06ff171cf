// Parameter-free layers, as modules (for nn::Sequential and printing): activations, Flatten,
// Dropout.
#pragma once
#include <string>

#include <dlf/core/ops/elementwise.h>
#include <dlf/core/random.h>
#include <dlf/nn/module.h>

namespace dlf::nn {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) const { return relu(x); }
};

class GELU : public Module {
 public:
  explicit GELU(GeluApproximation form = GeluApproximation::erf) : approximation(form) {}
  Tensor forward(const Tensor& x) const { return gelu(x, approximation); }
  std::string extra_repr() const override;

  GeluApproximation approximation;
};

/// x · sigmoid(x) (also called swish).
class SiLU : public Module {
 public:
  Tensor forward(const Tensor& x) const;
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) const { return tanh(x); }
};

class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) const { return sigmoid(x); }
};

/// Dims start..end (end inclusive, negative from the back) made one, as torch.nn.Flatten.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start = 1, int64_t end = -1) : start_dim(start), end_dim(end) {}
  Tensor forward(const Tensor& x) const { return x.flatten(start_dim, end_dim); }
  std::string extra_repr() const override;

  int64_t start_dim, end_dim;
};

/// Active only in training mode; draws from `gen` (the default generator when null), whose
/// state a checkpoint saves.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  double p;

 private:
  Generator* gen_;
};

}  // namespace dlf::nn
