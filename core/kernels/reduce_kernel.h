// The reduction engine: reduces a strided (possibly broadcast) tensor over a set of dims
// straight from its storage, in parallel over outputs or over the reduced range.
#pragma once
#include <omp.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/kernels/reduce_common.h"

namespace dlf::kernels {

/// A Reducer has `Acc init()`, `void add(Acc&, T value, int64_t position)` (positions come
/// in increasing order), `void merge(Acc& earlier, const Acc& later)` and
/// `Out finish(const Acc&)`. One that also has `void add_run(Acc&, const T* p, int64_t n)`
/// (the same as adding p[0..n) in order, up to rounding) is given contiguous runs whole.
template <typename T, typename Out, typename Reducer>
void reduce(const Tensor& x, const std::vector<bool>& reduced, Out* out, const Reducer& r) {
  using Acc = decltype(r.init());
  StridedDims kept, over;
  for (size_t d = 0; d < reduced.size(); ++d) {
    (reduced[d] ? over : kept).push(x.shape()[d], x.strides()[d]);
  }
  // The order of reduced dims only matters to argmax, which reduces one dim: walk them
  // largest stride first so that the innermost loop has the smallest stride.
  std::vector<size_t> order(over.sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return over.strides[a] > over.strides[b]; });
  StridedDims sorted;
  for (size_t i : order) sorted.push(over.sizes[i], over.strides[i]);
  kept = kept.coalesced();
  over = sorted.coalesced();

  const T* base = x.data<T>();
  const int64_t n_out = kept.numel(), len = over.numel();
  if (n_out == 0) return;
  const int threads = omp_get_max_threads();
  const bool parallel = threads > 1 && n_out * len >= 32768;
  // Adds positions [begin, end) of the reduced range starting at p to acc.
  const auto add_range = [&](Acc& acc, const T* p, int64_t begin, int64_t end) {
    if constexpr (requires { r.add_run(acc, p, len); }) {
      if (over.strides.back() == 1) {
        over.walk_runs(begin, end,
                       [&](int64_t off, int64_t, int64_t n) { r.add_run(acc, p + off, n); });
        return;
      }
    }
    over.walk(begin, end, [&](int64_t off, int64_t pos) { r.add(acc, p[off], pos); });
  };

  // The outputs one contiguous row (per-channel sums of a channels-last tensor): every reduced
  // position adds a whole row, vectorised; the threads take ranges of positions, their rows
  // merged in order.
  constexpr int64_t kMaxRow = 4096;
  if (kept.sizes.size() == 1 && kept.strides[0] == 1 && n_out <= kMaxRow &&
      over.strides.back() != 1) {
    std::vector<std::vector<Acc>> rows(size_t(threads), std::vector<Acc>(size_t(n_out), r.init()));
    int used = 1;
#pragma omp parallel if (parallel)
    {
      const int nt = omp_get_num_threads(), id = omp_get_thread_num();
      if (id == 0) used = nt;
      Acc* acc = rows[size_t(id)].data();
      over.walk(len * id / nt, len * (id + 1) / nt, [&](int64_t off, int64_t pos) {
        const T* row = base + off;
        for (int64_t i = 0; i < n_out; ++i) r.add(acc[i], row[i], pos);
      });
    }
    for (int t = 1; t < used; ++t) {
      for (int64_t i = 0; i < n_out; ++i) r.merge(rows[0][size_t(i)], rows[size_t(t)][size_t(i)]);
    }
    for (int64_t i = 0; i < n_out; ++i) out[i] = r.finish(rows[0][size_t(i)]);
    return;
  }
  if (!parallel || n_out >= 2 * threads) {
    // Blocks of consecutive outputs along the innermost kept dim; when that dim has the
    // smaller stride, a block reads neighbouring elements at each reduced position.
    const int64_t row = kept.sizes.back(), out_step = kept.strides.back();
    constexpr int64_t kMaxBlock = 16;
    const int64_t block = out_step < over.strides.back() ? kMaxBlock : 1;
    const int64_t per_row = (row + block - 1) / block;
#pragma omp parallel for if (parallel) schedule(static)
    for (int64_t b = 0; b < n_out / row * per_row; ++b) {
      const int64_t o0 = b / per_row * row + b % per_row * block;
      const int64_t count = std::min(block, row - b % per_row * block);
      const T* p = base + kept.offset(o0);
      Acc acc[kMaxBlock];
      std::fill(acc, acc + count, r.init());
      if (block == 1) {
        add_range(acc[0], p, 0, len);
      } else {
        over.walk(0, len, [&](int64_t off, int64_t pos) {
          for (int64_t i = 0; i < count; ++i) r.add(acc[i], p[off + i * out_step], pos);
        });
      }
      for (int64_t i = 0; i < count; ++i) out[o0 + i] = r.finish(acc[i]);
    }
    return;
  }
  // Few outputs: split each one's reduced range across the threads.
  std::vector<Acc> partial(threads, r.init());
  for (int64_t o = 0; o < n_out; ++o) {
    const T* p = base + kept.offset(o);
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
      Acc acc = r.init();
      add_range(acc, p, len * id / nt, len * (id + 1) / nt);
      partial[id] = acc;
    }
    Acc total = r.init();
    for (const Acc& a : partial) r.merge(total, a);
    std::fill(partial.begin(), partial.end(), r.init());
    out[o] = r.finish(total);
  }
}

}  // namespace dlf::kernels
