// Element functions shared by the element-wise ops and the kernels that fuse an activation.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <type_traits>

namespace dlf::kernels {

/// e^x in a form the compiler vectorises (std::exp stays a scalar call in a simd loop; the
/// clamp is a select only without trapping math, cmake/dlf_warnings.cmake):
/// x = k·ln2 + r with |r| <= ln2/2 (ln2 in two parts, the first short enough that k times it
/// is exact), e^r by a degree-6 polynomial fitted to it on that interval (least squares in
/// relative error), times 2^k built in the exponent bits. Within 1.3 ulp of the exact e^x over
/// [-87, 88]; x is clamped to [-87.3, 88.7], where e^x is a normal float.
[[gnu::always_inline]] inline float exp_vectorizable(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  constexpr float kRound = 12582912.f;  // 1.5·2^23: adding it rounds to an integer
  const float k = (x * 1.44269504f + kRound) - kRound;
  const float r = (x - k * 0.693145751953125f) - k * 1.428606765330187e-6f;
  const float p =
      1.f + r * (1.f + r * (0.49999991f +
                            r * (0.16666421f +
                                 r * (0.041668359f + r * (0.0083747739f + r * 0.0013829420f)))));
  return p * std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
}

/// e^x: exp_vectorizable for float (f32 and bf16 compute in float), std::exp otherwise.
template <typename X>
X exp_of(X x) {
  if constexpr (std::is_same_v<X, float>) {
    return exp_vectorizable(x);
  } else {
    return std::exp(x);
  }
}

template <typename X>
X sigmoid_of(X x) {
  return X(1) / (X(1) + exp_of(-x));
}

/// x · sigmoid(x)
template <typename X>
X silu_of(X x) {
  return x * sigmoid_of(x);
}

/// d silu / dx = s (1 + x (1 - s)), s = sigmoid(x)
template <typename X>
X silu_derivative(X x) {
  const X s = sigmoid_of(x);
  return s * (X(1) + x * (X(1) - s));
}

/// 2u for GELU's tanh form: u = √(2/π)(x + 0.044715x³).
template <typename X>
X gelu_tanh_2u(X x) {
  constexpr double k = 2 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi;
  return X(k) * (x + X(0.044715) * x * x * x);
}

/// GELU's tanh form 0.5·x·(1 + tanh(u)), computed as the same function x·sigmoid(2u): through
/// exp_of, float loops vectorise (std::tanh is a scalar call; oneDNN's AVX2 gelu_tanh ran 4x
/// slower than its gelu_erf on a Zen 3).
template <typename X>
X gelu_tanh_of(X x) {
  return x * sigmoid_of(gelu_tanh_2u(x));
}

/// d gelu_tanh / dx = s + x·s(1 − s)·(2u)', s = sigmoid(2u)
template <typename X>
X gelu_tanh_derivative(X x) {
  constexpr double k = 2 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi;
  const X s = sigmoid_of(gelu_tanh_2u(x));
  return s + x * s * (X(1) - s) * X(k) * (X(1) + X(3 * 0.044715) * x * x);
}

/// erfc(z) for z >= 0 in a form that vectorises: Numerical Recipes' erfcc (a Chebyshev fit of
/// erfc(z)·e^(z²), fractional error below 1.2e-7) through exp_vectorizable.
[[gnu::always_inline]] inline float erfc_nonnegative(float z) {
  const float t = 1.f / (1.f + 0.5f * z);
  const float p =
      -1.26551223f +
      t * (1.00002368f +
           t * (0.37409196f +
                t * (0.09678418f +
                     t * (-0.18628806f +
                          t * (0.27886807f +
                               t * (-1.13520398f +
                                    t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  return t * exp_vectorizable(p - z * z);
}

/// GELU's exact form 0.5·x·(1 + erf(x/√2)); for float x·(1 − erfc/2) or x·erfc/2 by its sign,
/// through erfc_nonnegative (vectorises, and keeps its relative accuracy where GELU is tiny),
/// else std::erf. Always inlined: a loop calling it vectorises only then.
template <typename X>
[[gnu::always_inline]] inline X gelu_erf_of(X x) {
  if constexpr (std::is_same_v<X, float>) {
    const float half_c = 0.5f * erfc_nonnegative(std::abs(x) * float(std::numbers::sqrt2 / 2));
    return x >= 0.f ? x * (1.f - half_c) : x * half_c;
  } else {
    return X(0.5) * x * (X(1) + std::erf(x * X(std::numbers::sqrt2 / 2)));
  }
}

/// d gelu_erf / dx = Φ(x) + x·φ(x)
template <typename X>
[[gnu::always_inline]] inline X gelu_erf_derivative(X x) {
  constexpr double inv_sqrt_2pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;
  if constexpr (std::is_same_v<X, float>) {
    const float half_c = 0.5f * erfc_nonnegative(std::abs(x) * float(std::numbers::sqrt2 / 2));
    const float cdf = x >= 0.f ? 1.f - half_c : half_c;
    return cdf + x * exp_vectorizable(-0.5f * x * x) * float(inv_sqrt_2pi);
  } else {
    const X cdf = X(0.5) * (X(1) + std::erf(x * X(std::numbers::sqrt2 / 2)));
    return cdf + x * std::exp(X(-0.5) * x * x) * X(inv_sqrt_2pi);
  }
}

}  // namespace dlf::kernels
