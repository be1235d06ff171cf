// Fused optimizer updates: one pass over a parameter and its state, in place.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf {

/// Adam's hyper-parameters for one update.
struct AdamHyper {
  /// learning rate, moment decays and epsilon
  ///@{
  double lr, beta1, beta2, eps;
  ///@}
  double weight_decay = 0;  ///< decoupled (AdamW) or L2, as the op's caller says
  bool decoupled = false;   ///< AdamW: p ← p·(1 - lr·wd) first; else wd·p joins the gradient
  int64_t step = 1;         ///< 1-based, for the bias corrections
};
/// m ← β1·m + (1-β1)·g;  v ← β2·v + (1-β2)·g²;  p ← p - lr·(m/(1-β1ᵗ)) / (sqrt(v/(1-β2ᵗ)) + eps).
/// param, grad, exp_avg, exp_avg_sq: one shape and dtype, contiguous state; updated in place.
void adam_update_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, const AdamHyper& hyper);

/// Σ x² as an f64 scalar, accumulated in f64 in a fixed order (whatever the thread count), for
/// gradient-norm clipping.
Tensor sum_squares(const Tensor& x);

}  // namespace dlf
