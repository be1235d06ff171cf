// What the attention kernels share: Eigen maps of (strided) q/k/v rows and each operand's
// layout over the broadcast leading dims.
#pragma once
#include <dlf/core/tensor.h>

// GCC 12 reports false (maybe-)uninitialized values inside Eigen's inlined AVX-512
// intrinsics (the intrinsics' own undefined-on-purpose source operands).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace dlf::kernels::attention_rows {

template <typename A>
using RowMatrix = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename A>
using ConstRows = Eigen::Map<const RowMatrix<A>, 0, Eigen::OuterStride<>>;
template <typename A>
using Rows = Eigen::Map<RowMatrix<A>, 0, Eigen::OuterStride<>>;

/// Rows of softmax work go through Eigen's vectorized exp in fixed chunks counted from the
/// row's start, the tail padded: every element takes the same code path and sums run in one
/// order wherever the row lies in memory, so results are bitwise reproducible (Eigen's own
/// loops over a dynamic run peel scalar elements up to the first aligned address).
inline constexpr int64_t kChunk = 16;
template <typename A>
using Chunk = Eigen::Array<A, kChunk, 1>;

/// A row of `cols` scores padded to whole chunks (the row stride of the kernels' score blocks,
/// so that their softmax reads and writes whole chunks only).
inline int64_t chunk_padded(int64_t cols) { return (cols + kChunk - 1) / kChunk * kChunk; }

/// What each row's logsumexp is kept in between forward and backward: double, or float for
/// bf16 (see attention_lse_dtype).
template <typename T>
using Lse = std::conditional_t<std::is_same_v<T, bf16>, float, double>;

/// n <= kChunk values from p; lanes past n are 0.
template <typename A>
Chunk<A> load_chunk(const A* p, int64_t n) {
  if (n == kChunk) return Eigen::Map<const Chunk<A>>(p);
  Chunk<A> c = Chunk<A>::Zero();
  std::copy(p, p + n, c.data());
  return c;
}

/// The first n <= kChunk lanes of c to p (a whole chunk as vector stores, not a copy loop).
template <typename A>
void store_chunk(const Chunk<A>& c, A* p, int64_t n) {
  if (n == kChunk) {
    Eigen::Map<Chunk<A>> dst(p);
    dst = c;
  } else {
    std::copy(c.data(), c.data() + n, p);
  }
}

/// One operand's layout: element offset of each batch entry, row and column strides.
struct Operand {
  std::vector<int64_t> batch_offset;
  int64_t row_stride, col_stride;
};

/// t [..., rows, cols] whose leading dims broadcast to `lead`.
inline Operand layout(const Tensor& t, const Shape& lead) {
  const int64_t r = t.dim(), lead_rank = static_cast<int64_t>(lead.size());
  Operand op{std::vector<int64_t>(static_cast<size_t>(numel(lead)), t.offset()), t.strides()[r - 2],
             t.strides()[r - 1]};
  for (int64_t b = 0; b < numel(lead); ++b) {
    int64_t rem = b;
    for (int64_t d = lead_rank - 1; d >= 0; --d) {
      const int64_t idx = rem % lead[d];
      rem /= lead[d];
      const int64_t td = d - (lead_rank - (r - 2));  // the matching dim of t, if any
      if (td >= 0 && t.shape()[td] != 1) op.batch_offset[b] += idx * t.strides()[td];
    }
  }
  return op;
}

/// rows x cols elements from p (row stride rs, column stride cs) as a row-major map of A:
/// in place when T is A and the rows are laid out like a matrix's (adjacent columns, rows
/// apart by at least a row), else packed into `scratch`.
template <typename A, typename T>
ConstRows<A> rows_of(const T* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                     std::vector<A>& scratch) {
  if constexpr (std::is_same_v<A, T>) {
    if (cs == 1 && (rs >= cols || rows == 1)) {
      return ConstRows<A>(p, rows, cols, Eigen::OuterStride<>(std::max(rs, cols)));
    }
  }
  scratch.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) scratch[i * cols + j] = static_cast<A>(p[i * rs + j * cs]);
  }
  return ConstRows<A>(scratch.data(), rows, cols, Eigen::OuterStride<>(cols));
}

/// The base pointer of a tensor's storage (offsets in Operand are from it).
template <typename T>
const T* storage_base(const Tensor& t) {
  return static_cast<const T*>(t.storage()->data());
}

}  // namespace dlf::kernels::attention_rows
