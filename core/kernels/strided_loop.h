// Walks N operands of one shape with arbitrary (e.g. broadcast, zero) strides, in parallel.
//
// The body receives base pointers and byte strides for a run of n elements along the
// innermost (coalesced) dim, so a contiguous run can vectorise.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include <omp.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include <dlf/core/tensor.h>

namespace dlf::kernels {

/// Strides (in bytes) of `t` as seen from `shape`, which `t` broadcasts to.
std::vector<int64_t> broadcast_byte_strides(const Tensor& t, const Shape& shape);

template <size_t N>
struct StridedOperands {
  std::array<char*, N> base;
  std::array<std::vector<int64_t>, N> byte_strides;  // each of length shape.size()
};

namespace detail {
/// Reorders the dims so that operand 0's strides decrease: a dense output in another layout
/// (channels last) is walked in its memory order, its innermost run contiguous.
template <size_t N>
void order_by_first(Shape& shape, std::array<std::vector<int64_t>, N>& strides) {
  const std::vector<int64_t>& first = strides[0];
  if (std::is_sorted(first.begin(), first.end(), std::greater<>())) return;
  std::vector<size_t> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return first[a] > first[b]; });
  Shape s;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d : order) {
    s.push_back(shape[d]);
    for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
  }
  shape = std::move(s);
  strides = std::move(st);
}

/// Merges adjacent dims that are contiguous in every operand; drops size-1 dims.
template <size_t N>
void coalesce(Shape& shape, std::array<std::vector<int64_t>, N>& strides) {
  Shape s;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !s.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      s.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][d];
    } else {
      s.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
    }
  }
  if (s.empty()) {
    s.push_back(1);
    for (size_t k = 0; k < N; ++k) st[k].push_back(0);
  }
  shape = std::move(s);
  strides = std::move(st);
}
}  // namespace detail

/// The fewest elements of element-wise work worth waking the OpenMP pool for: below it one
/// thread finishes before a sleeping worker would have woken (50-100 µs on a VM).
inline constexpr int64_t kParallelGrain = 32768;

/// Calls body(ptrs, inner_byte_strides, n) over all elements of `shape`, in runs along the
/// innermost dim, split into contiguous ranges of elements across the OpenMP pool when
/// there is at least `grain` elements of work.
template <size_t N, typename Body>
void strided_for(Shape shape, StridedOperands<N> ops, Body&& body, int64_t grain = kParallelGrain) {
  const int64_t total = numel(shape);
  if (total == 0) return;
  detail::order_by_first<N>(shape, ops.byte_strides);
  detail::coalesce<N>(shape, ops.byte_strides);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t inner = shape.back();
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = ops.byte_strides[k].back();

  auto run = [&](int64_t begin, int64_t end) {
    int64_t pos = begin;
    while (pos < end) {
      int64_t rem = pos / inner, col = pos % inner;
      std::array<char*, N> ptr;
      for (size_t k = 0; k < N; ++k) ptr[k] = ops.base[k] + col * inner_stride[k];
      for (int64_t d = rank - 2; d >= 0; --d) {
        int64_t idx = rem % shape[d];
        rem /= shape[d];
        for (size_t k = 0; k < N; ++k) ptr[k] += idx * ops.byte_strides[k][d];
      }
      int64_t n = std::min(inner - col, end - pos);
      body(ptr, inner_stride, n);
      pos += n;
    }
  };
  if (total < grain || omp_get_max_threads() == 1) {
    run(0, total);
    return;
  }
#pragma omp parallel
  {
    int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    run(total * id / nt, total * (id + 1) / nt);
  }
}

}  // namespace dlf::kernels
