// Fused optimizer updates: one pass over a parameter and its state, in place.
#pragma once
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf {

/// Adam's hyper-parameters that stay from step to step.
struct AdamHyper {
  /// moment decays and epsilon
  ///@{
  double beta1, beta2, eps;
  ///@}
  double weight_decay = 0;  ///< decoupled (AdamW) or L2, as the op's caller says
  bool decoupled = false;   ///< AdamW: p ← p·(1 - lr·wd) first; else wd·p joins the gradient
};
/// m ← β1·m + (1-β1)·g;  v ← β2·v + (1-β2)·g²;  p ← p - lr·(m/(1-β1ᵗ)) / (sqrt(v/(1-β2ᵗ)) + eps).
/// param, grad, exp_avg, exp_avg_sq: one shape and dtype, contiguous state; updated in place.
/// lr_and_step: {lr, t} (t 1-based), an f64 tensor on their device read when the update runs,
/// so a captured step (graph::capture) replays with the values of the day.
void adam_update_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, const Tensor& lr_and_step, const AdamHyper& hyper);

/// Σ x² as an f64 scalar, accumulated in f64 in a fixed order (whatever the thread count), for
/// gradient-norm clipping.
Tensor sum_squares(const Tensor& x);
/// Σ x² over all of `xs` (any floating dtypes, one device) as one f64 scalar: each tensor's sum
/// as sum_squares(x) gives it, added in order — one op for a whole model's gradients.
Tensor sum_squares(const std::vector<Tensor>& xs);

}  // namespace dlf
