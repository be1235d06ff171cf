// Derivatives of activations, shared by the element-wise ops and linear's fused epilogue.
#pragma once
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/op.h>
#include <dlf/core/ops/elementwise.h>

#include <numbers>

namespace dlf::autograd {

/// g where the relu output y is positive, else 0.
inline Tensor relu_grad(const Tensor& g, const Tensor& y) {
  return g * gt(y, zeros({}, {.dtype = y.dtype(), .device = y.device()})).to(g.dtype());
}

/// gelu'(x), in dispatched (differentiable) ops.
inline Tensor gelu_derivative(const Tensor& x, bool tanh_form) {
  if (tanh_form) {
    // gelu = x/2 (1 + tanh(u)), u = k (x + 0.044715 x^3): gelu' = (1 + t)/2 + x/2 (1 - t^2) u'
    constexpr double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;
    const Tensor x2 = x * x;
    const Tensor t = tanh((x + x2 * x * 0.044715) * k);
    return (t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * ((x2 * (3 * 0.044715) + 1.0) * k);
  }
  // gelu = x Phi(x): gelu' = Phi(x) + x phi(x)
  const double inv_sqrt_2pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;
  return (erf(x * (1 / std::numbers::sqrt2)) + 1.0) * 0.5 + x * exp(x * x * -0.5) * inv_sqrt_2pi;
}

/// g · gelu'(x): one fused op for a first derivative, differentiable ops when a second one is
/// being built (grad mode on inside backward).
inline Tensor gelu_grad(const Tensor& g, const Tensor& x, bool tanh_form) {
  if (grad_enabled()) return g * gelu_derivative(x, tanh_form);
  static const OpDef& op = find_op("gelu_backward");
  return dispatch1(op, {g, x}, {{"approximation", std::string(tanh_form ? "tanh" : "erf")}});
}

/// g · silu'(x), silu' = s (1 + x (1 - s)) with s = sigmoid(x): one fused op for a first
/// derivative, differentiable ops when a second one is being built.
inline Tensor silu_grad(const Tensor& g, const Tensor& x) {
  if (grad_enabled()) {
    const Tensor s = sigmoid(x);
    return g * s * (x * (1.0 - s) + 1.0);
  }
  static const OpDef& op = find_op("silu_backward");
  return dispatch1(op, {g, x});
}

}  // namespace dlf::autograd
