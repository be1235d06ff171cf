// Reduces a broadcast gradient back to the shape of the input that was broadcast.
#pragma once
#include <dlf/core/ops/reduce.h>

namespace dlf::autograd {

inline Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  Shape dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (grad.shape()[d] != 1 && (d < lead || shape[d - lead] == 1)) dims.push_back(d);
  }
  Tensor reduced = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return reduced.reshape(shape);
}

}  // namespace dlf::autograd
