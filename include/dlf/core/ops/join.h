// Joining and splitting along a dim. split, chunk and unbind return views; the gradients of
// their pieces come back as one cat.
#pragma once
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);    ///< along dim `dim`
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);  ///< along a new dim `dim`
/// Pieces of `size` along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim);
/// Pieces of the given sizes, which must add up to the dim's size.
std::vector<Tensor> split_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
/// `chunks` pieces of ceil(n / chunks) (the last may be smaller, as in PyTorch).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim);
/// The slices at each index of `dim`, without it (PyTorch's unbind): x [B, T, 3, H, D] along
/// dim 2 gives q, k and v of shape [B, T, H, D].
std::vector<Tensor> unbind(const Tensor& x, int64_t dim);

}  // namespace dlf
