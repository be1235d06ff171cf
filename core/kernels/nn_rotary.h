// Rotary position embeddings: the frequency table (with Llama 3's scaling) and the fused
// rotation kernel.
#pragma once
#include <dlf/core/op.h>

#include <vector>

namespace dlf::kernels {

/// The rotation frequencies θ^(−2j/d), j < d/2, with Llama 3's scaling when attr
/// scaling_factor > 0: wavelengths above original_context / low_freq_factor are divided by
/// the factor, those below original_context / high_freq_factor kept, the ones between blended.
std::vector<double> rotary_frequencies(int64_t head_dim, const Attrs& a);

/// y = x rotated in pairs of its last dim (j, j + d/2, or 2j, 2j + 1 when attr interleaved) by
/// the angle (offset + t) · frequency_j, t the index along attr seq_dim (wrapped); by minus that
/// angle when attr inverse (the transpose: the gradient). x of any strides; y contiguous.
void rotary_forward(const Tensor& x, const Attrs& a, const Tensor& y);

}  // namespace dlf::kernels
