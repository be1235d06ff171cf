// Parameter-free layers: GELU and Dropout.
#pragma once
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/random.h>
#include <dlf/nn/module.h>

namespace dlf::nn {

class GELU : public Module {
 public:
  explicit GELU(GeluApproximation approximation = GeluApproximation::erf)
      : approximation(approximation) {}
  Tensor forward(const Tensor& x) const { return gelu(x, approximation); }

  GeluApproximation approximation;
};

/// Active only in training mode; draws from `gen` (the default generator when null), whose
/// state a checkpoint saves.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) const;

  double p;

 private:
  Generator* gen_;
};

}  // namespace dlf::nn
