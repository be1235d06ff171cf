// Element-wise ops with NumPy broadcasting. Binary ops need equal dtypes (no implicit
// promotion: a mismatch is a dlf::Error naming both); scalars take the tensor's dtype.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf {

/// Unary, element by element, as the torch functions of the same names (floating dtypes; neg
/// and abs also integers).
///@{
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
///@}
Tensor log1p(const Tensor& x);       ///< log(1 + x), accurate near 0
Tensor expm1(const Tensor& x);       ///< exp(x) - 1, accurate near 0
Tensor square(const Tensor& x);      ///< x * x
Tensor reciprocal(const Tensor& x);  ///< 1 / x
/// -1, 0 or 1 (NaN stays NaN); like floor, ceil and round its gradient is 0.
Tensor sign(const Tensor& x);
Tensor floor(const Tensor& x);  ///< rounded down
Tensor ceil(const Tensor& x);   ///< rounded up
Tensor round(const Tensor& x);  ///< halves to even, as torch.round
/// Each element limited to [min, max] (a NaN stays NaN); the gradient flows where min <= x <= max.
Tensor clamp(const Tensor& x, double min, double max);
/// GELU's two forms: exact (x Φ(x), with erf) and GPT-2's tanh approximation.
enum class GeluApproximation { erf, tanh };
/// x Φ(x), or its tanh approximation.
Tensor gelu(const Tensor& x, GeluApproximation approximation = GeluApproximation::erf);
/// SiLU (swish): x · sigmoid(x), one pass forward and one backward.
Tensor silu(const Tensor& x);
/// SwiGLU's gate silu(a) · b (Llama's MLP: a the gate projection, b the up projection), fused
/// forward and backward; a and b broadcast.
Tensor swiglu(const Tensor& a, const Tensor& b);

/// Binary, broadcasting: a + b, a - b, a * b, a / b, a^b, the larger and the smaller.
///@{
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
///@}

/// With a scalar (an attribute of the op, not a tensor): a + b, a * b, a^exponent.
///@{
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);
///@}

/// Comparisons, broadcasting, giving bool tensors: ==, !=, <, <=, >, >=.
///@{
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
///@}
/// Comparisons with a scalar, which takes the tensor's dtype (so f32 compares with 0.1f, as
/// PyTorch does); a dlf::Error if it does not fit (2.5 with an integer tensor, 2 with bool).
///@{
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
///@}

/// cond ? a : b, all three broadcast together; cond is bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// x with `value` where mask (bool, broadcast to x's shape) is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

/// The arithmetic operators: the ops above (a scalar on either side).
///@{
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(const Tensor& a, double b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(const Tensor& a, double b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(const Tensor& a, double b);
Tensor operator/(double a, const Tensor& b);
///@}

/// The comparison operators: the comparisons above, giving bool tensors (libtorch's; a scalar
/// on either side, `0 < t` being `t > 0`).
///@{
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
Tensor operator==(double a, const Tensor& b);
Tensor operator!=(double a, const Tensor& b);
Tensor operator<(double a, const Tensor& b);
Tensor operator<=(double a, const Tensor& b);
Tensor operator>(double a, const Tensor& b);
Tensor operator>=(double a, const Tensor& b);
///@}

}  // namespace dlf
