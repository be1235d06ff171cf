// out[index[i], :] += src[i, :]: the adjoint of a gather (embedding rows, max-pool picks).
#pragma once
#include <cstdint>

#include "core/kernels/dtype_dispatch.h"

namespace dlf::kernels {

/// Sums m rows of src (w elements each, rows src_stride apart) into the rows of out picked by
/// index (rows out_stride apart). Serial over rows, so the order of the additions, and the
/// result, never depends on the thread count.
template <typename T, typename I>
void scatter_add_rows(T* out, int64_t out_stride, const I* index, const T* src, int64_t src_stride,
                      int64_t m, int64_t w) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = out + static_cast<int64_t>(index[i]) * out_stride;
    const T* s = src + i * src_stride;
    for (int64_t j = 0; j < w; ++j)
      row[j] = static_cast<T>(static_cast<acc_t<T>>(row[j]) + static_cast<acc_t<T>>(s[j]));
  }
}

}  // namespace dlf::kernels
