// Reductions over one or several dims. An empty `dims` means every dim.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf {

/// Over `dims` (all when empty), keeping them as size 1 with keepdim.
Tensor sum(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Over `dims` (all when empty), keeping them as size 1 with keepdim.
Tensor mean(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Largest value (no indices; see argmax).
Tensor max(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Index (i64) of the first largest value along `dim`.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
/// Variance with Bessel's correction by default (correction = 1); 0 gives the biased one.
Tensor var(const Tensor& x, const Shape& dims = {}, int64_t correction = 1, bool keepdim = false);

}  // namespace dlf
