// LayerNorm, RMSNorm and GroupNorm layers (gain 1, shift 0).
#pragma once
#include <dlf/nn/module.h>

namespace dlf::nn {

/// Normalises over the last dim of size `dim`.
class LayerNorm : public Module, public Callable<LayerNorm> {
 public:
  /// Over the last dim of size `dim`; affine: weight and bias.
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool affine = true, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const;    ///< x [..., dim] -> normalized, same shape
  std::string extra_repr() const override;  ///< "(768,), eps=1e-05, elementwise_affine=true"

  /// weight and bias [dim], undefined when not affine
  ///@{
  Tensor weight, bias;
  ///@}
  int64_t dim;  ///< the normalized size
  double eps;   ///< added to the variance
};

/// Llama's RMSNorm over the last dim of size `dim`: x / sqrt(mean(x²) + eps) · weight.
class RMSNorm : public Module, public Callable<RMSNorm> {
 public:
  /// Over the last dim of size `dim`, with weight [dim] (ones).
  explicit RMSNorm(int64_t dim, double eps = 1e-6, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const;    ///< x [..., dim] -> normalized, same shape
  std::string extra_repr() const override;  ///< "(4096,), eps=1e-05"

  Tensor weight;  ///< [dim]
  double eps;     ///< added to the mean square
};

/// x [N, C, ...] normalised over `groups` groups of C/groups channels.
class GroupNorm : public Module, public Callable<GroupNorm> {
 public:
  /// `channels` in `groups` groups, with weight and bias [channels].
  GroupNorm(int64_t groups, int64_t channels, double eps = 1e-5, DType dtype = DType::f32);
  /// X [B, channels, ...] -> normalized per sample and group.
  Tensor forward(const Tensor& x) const;
  /// silu(forward(x)) as one op (group_norm_silu): what a UNet's resnet blocks run.
  Tensor forward_silu(const Tensor& x) const;
  std::string extra_repr() const override;  ///< "32, 64, eps=1e-05, affine=true"

  /// weight and bias [channels]
  ///@{
  Tensor weight, bias;
  ///@}
  int64_t groups;  ///< groups (channels divide by it)
  double eps;      ///< added to the variance
};

}  // namespace dlf::nn
