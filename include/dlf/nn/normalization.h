// LayerNorm and GroupNorm layers (gain 1, shift 0).
#pragma once
#include <dlf/nn/module.h>

namespace dlf::nn {

/// Normalises over the last dim of size `dim`.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool affine = true, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  Tensor weight, bias;  ///< undefined when not affine
  int64_t dim;
  double eps;
};

/// x [N, C, ...] normalised over `groups` groups of C/groups channels.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t groups, int64_t channels, double eps = 1e-5, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  Tensor weight, bias;
  int64_t groups;
  double eps;
};

}  // namespace dlf::nn
