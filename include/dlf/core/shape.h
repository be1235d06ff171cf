// Shapes and strides (in elements), broadcasting and dimension wrapping.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlf {

using Shape = std::vector<int64_t>;  ///< sizes, one per dim

int64_t numel(const Shape& shape);  ///< product of the sizes (1 for a scalar)
/// Row-major strides of a contiguous tensor of this shape.
Shape contiguous_strides(const Shape& shape);
/// How the elements of a 4-D [N, C, H, W] tensor lie in memory: row-major, or channels last
/// (row-major [N, H, W, C], PyTorch's torch.channels_last: oneDNN's convolutions run on it
/// without reordering).
enum class MemoryFormat { contiguous, channels_last };
/// The strides of a dense tensor of `shape` in `format` (channels_last needs 4 dims).
Shape dense_strides(const Shape& shape, MemoryFormat format);
/// "[2, 3, 4]"
std::string shape_str(const Shape& shape);
/// The shape both broadcast to (NumPy rules). Throws dlf::Error naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b);
/// Wraps a possibly negative dim into [0, rank); throws dlf::Error when out of range.
int64_t wrap_dim(int64_t dim, int64_t rank);

}  // namespace dlf
