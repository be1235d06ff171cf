// Per row, with x̂ = (x - mean)·rstd and ĝ = g·weight:
//   dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ x̂)),  dweight = Σ_rows g x̂,  dbias = Σ_rows g.
#include "core/kernels/layer_norm_backward.h"

#include <optional>
#include <vector>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/row_major.h"

namespace dlf::kernels {
namespace {

constexpr int64_t kRowsPerBlock = 32;

template <typename T>
void run(int64_t n, const Tensor& g_t, const Tensor& x_t, const Tensor& w_t, const Tensor& mean_t,
         const Tensor& rstd_t, const Tensor& dx_t, const Tensor& dw_t, const Tensor& db_t) {
  using A = acc_t<T>;
  const int64_t rows = dx_t.numel() / n;
  const RowMajorData<T> g_rows(g_t), x_rows(x_t);
  const RowMajorData<A> mean_rows(mean_t), rstd_rows(rstd_t);
  const T *g = g_rows.data(), *x = x_rows.data();
  const A *mean = mean_rows.data(), *rstd = rstd_rows.data();
  std::optional<RowMajorData<T>> w_rows;
  if (w_t.defined()) w_rows.emplace(w_t);
  const T* w = w_rows ? w_rows->data() : nullptr;
  T* dx = dx_t.data<T>();
  const bool params = dw_t.defined() || db_t.defined();
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  // Per block: partial dweight then dbias sums.
  std::vector<A> partial(params ? size_t(blocks) * 2 * size_t(n) : 0, A(0));
#pragma omp parallel for schedule(static) if (rows * n > 16384)
  for (int64_t b = 0; b < blocks; ++b) {
    A* pw = params ? partial.data() + size_t(b) * 2 * size_t(n) : nullptr;
    for (int64_t r = b * kRowsPerBlock; r < std::min(rows, (b + 1) * kRowsPerBlock); ++r) {
      const T *gr = g + r * n, *xr = x + r * n;
      const A mu = A(mean[r]), rs = A(rstd[r]);
      A sum_gw = 0, sum_gw_xhat = 0;
      for (int64_t j = 0; j < n; ++j) {
        const A xhat = (A(xr[j]) - mu) * rs, gj = A(gr[j]);
        const A gw = w ? gj * A(w[j]) : gj;
        sum_gw += gw;
        sum_gw_xhat += gw * xhat;
        if (pw) {
          pw[j] += gj * xhat;
          pw[n + j] += gj;
        }
      }
      const A mean_gw = sum_gw / A(n), mean_gw_xhat = sum_gw_xhat / A(n);
      T* dxr = dx + r * n;
      for (int64_t j = 0; j < n; ++j) {
        const A xhat = (A(xr[j]) - mu) * rs;
        const A gw = w ? A(gr[j]) * A(w[j]) : A(gr[j]);
        dxr[j] = T(rs * (gw - mean_gw - xhat * mean_gw_xhat));
      }
    }
  }
  if (!params) return;
#pragma omp parallel for schedule(static) if (blocks * n > 16384)
  for (int64_t j = 0; j < n; ++j) {
    A sw = 0, sb = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      sw += partial[size_t(b) * 2 * size_t(n) + size_t(j)];
      sb += partial[size_t(b) * 2 * size_t(n) + size_t(n + j)];
    }
    if (dw_t.defined()) dw_t.data<T>()[j] = T(sw);
    if (db_t.defined()) db_t.data<T>()[j] = T(sb);
  }
}

}  // namespace

void layer_norm_backward(int64_t n, const Tensor& g, const Tensor& x, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                         const Tensor& dweight, const Tensor& dbias) {
  visit_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    run<typename decltype(tag)::type>(n, g, x, weight, mean, rstd, dx, dweight, dbias);
  });
}

}  // namespace dlf::kernels
