// Pieces shared by the reductions and the normalisations: walking a strided subset of a
// tensor's dims in row-major order, checking dim lists, and their I/O cost.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <dlf/core/op.h>

namespace dlf::kernels {

/// Sizes and element strides of some dims of a tensor, walked in row-major order.
struct StridedDims {
  Shape sizes;
  Shape strides;

  void push(int64_t size, int64_t stride) {
    sizes.push_back(size);
    strides.push_back(stride);
  }
  int64_t numel() const { return dlf::numel(sizes); }

  /// The same walk with adjacent dims merged where they are contiguous with each other and
  /// size-1 dims dropped; never empty (a scalar becomes one dim of size 1).
  StridedDims coalesced() const {
    StridedDims c;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 1) continue;
      if (!c.sizes.empty() && c.strides.back() == strides[d] * sizes[d]) {
        c.sizes.back() *= sizes[d];
        c.strides.back() = strides[d];
      } else {
        c.push(sizes[d], strides[d]);
      }
    }
    if (c.sizes.empty()) c.push(1, 0);
    return c;
  }

  /// Element offset of the element at row-major position `linear`.
  int64_t offset(int64_t linear) const {
    int64_t off = 0;
    for (size_t d = sizes.size(); d-- > 0;) {
      off += (linear % sizes[d]) * strides[d];
      linear /= sizes[d];
    }
    return off;
  }

  /// fn(element_offset, position, count) for each run of positions [begin, end) along the
  /// innermost dim (elements `strides.back()` apart), in order. Call on a coalesced walk.
  template <typename Fn>
  void walk_runs(int64_t begin, int64_t end, Fn&& fn) const {
    const int64_t inner = sizes.back(), step = strides.back();
    int64_t pos = begin;
    while (pos < end) {
      const int64_t col = pos % inner;
      const int64_t n = std::min(inner - col, end - pos);
      fn(offset(pos - col) + col * step, pos, n);
      pos += n;
    }
  }

  /// fn(element_offset, position) for positions [begin, end), in order. Call on a coalesced
  /// walk: the innermost dim runs without index arithmetic.
  template <typename Fn>
  void walk(int64_t begin, int64_t end, Fn&& fn) const {
    const int64_t step = strides.back();
    walk_runs(begin, end, [&](int64_t off, int64_t pos, int64_t n) {
      for (int64_t i = 0; i < n; ++i) fn(off + i * step, pos + i);
    });
  }
};

/// The dims of `x` listed in `dims` (negative ones wrap; empty means every dim) as a mask.
/// Throws dlf::Error naming `op` and the shape for a dim out of range or listed twice.
inline std::vector<bool> dims_mask(const char* op, const Shape& shape, const Shape& dims) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> mask(shape.size(), dims.empty());
  for (int64_t dim : dims) {
    const int64_t r = std::max<int64_t>(rank, 1);
    DLF_CHECK(dim >= -r && dim < r, op, ": dim ", dim, " is out of range for input shape ",
              shape_str(shape), " (expected ", -r, " to ", r - 1, ")");
    if (rank == 0) continue;  // a scalar's dim 0 / -1 reduces nothing
    const int64_t d = dim < 0 ? dim + rank : dim;
    DLF_CHECK(!mask[d], op, ": dim ", dim, " is listed twice in dims ", shape_str(dims),
              " for input shape ", shape_str(shape));
    mask[d] = true;
  }
  return mask;
}

/// Bytes of every defined input and output, and `flops_per_element` per element of input 0.
inline Cost io_cost(Inputs in, std::span<const Tensor> out, double flops_per_element) {
  Cost c;
  c.flops = flops_per_element * static_cast<double>(in[0].numel());
  for (const Tensor& t : in) c.bytes_read += t.defined() ? static_cast<double>(t.nbytes()) : 0;
  for (const Tensor& t : out) c.bytes_written += static_cast<double>(t.nbytes());
  return c;
}

}  // namespace dlf::kernels
