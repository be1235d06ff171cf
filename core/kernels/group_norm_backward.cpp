// Per (sample, group) of m = C/groups·HW elements, with x̂ = (x - mean)·rstd and ĝ = g·w[c]:
//   dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ x̂)),  dweight[c] = Σ g x̂,  dbias[c] = Σ g
// (the sums over the samples and the spatial positions of channel c).
#include "core/kernels/group_norm_backward.h"

#include <optional>
#include <vector>

#include "core/kernels/activation_math.h"
#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/row_major.h"

namespace dlf::kernels {
namespace {

template <typename T>
void run(int64_t groups, const Tensor& g_t, const Tensor& x_t, const Tensor& w_t, const Tensor& b_t,
         const Tensor& mean_t, const Tensor& rstd_t, bool silu, const Tensor& dx_t,
         const Tensor& dw_t, const Tensor& db_t) {
  using A = acc_t<T>;
  const int64_t n = x_t.size(0), channels = x_t.size(1), per = channels / groups;
  const int64_t hw = n * channels > 0 ? x_t.numel() / (n * channels) : 0, m = per * hw;
  const RowMajorData<T> g_rows(g_t), x_rows(x_t);
  const RowMajorData<A> mean_rows(mean_t), rstd_rows(rstd_t);
  const T *g = g_rows.data(), *x = x_rows.data();
  const A *mean = mean_rows.data(), *rstd = rstd_rows.data();
  std::optional<RowMajorData<T>> w_rows;
  if (w_t.defined()) w_rows.emplace(w_t);
  const T* w = w_rows ? w_rows->data() : nullptr;
  std::optional<RowMajorData<T>> b_rows;
  if (b_t.defined()) b_rows.emplace(b_t);
  const T* b = b_rows ? b_rows->data() : nullptr;
  T* dx = dx_t.data<T>();
  const bool params = dw_t.defined() || db_t.defined();
  // Per (sample, channel): the partial dweight and dbias sums.
  std::vector<A> partial(params ? size_t(n * channels) * 2 : 0, A(0));
#pragma omp parallel for schedule(static) if (n * groups * m > 16384)
  for (int64_t row = 0; row < n * groups; ++row) {
    const int64_t first_channel = (row % groups) * per;
    const T *gr = g + row * m, *xr = x + row * m;
    const A mu = A(mean[row]), rs = A(rstd[row]);
    A sum_gw = 0, sum_gw_xhat = 0;
    for (int64_t c = 0; c < per; ++c) {
      const A wc = w ? A(w[first_channel + c]) : A(1);
      const A bc = b ? A(b[first_channel + c]) : A(0);
      A sum_g = 0, sum_g_xhat = 0;
      for (int64_t j = c * hw; j < (c + 1) * hw; ++j) {
        const A xhat = (A(xr[j]) - mu) * rs;
        const A gj = silu ? A(gr[j]) * silu_derivative(xhat * wc + bc) : A(gr[j]);
        sum_g += gj;
        sum_g_xhat += gj * xhat;
      }
      sum_gw += wc * sum_g;
      sum_gw_xhat += wc * sum_g_xhat;
      if (params) {
        A* p = partial.data() + size_t((row / groups) * channels + first_channel + c) * 2;
        p[0] = sum_g_xhat;
        p[1] = sum_g;
      }
    }
    const A mean_gw = sum_gw / A(m), mean_gw_xhat = sum_gw_xhat / A(m);
    T* dxr = dx + row * m;
    for (int64_t c = 0; c < per; ++c) {
      const A wc = w ? A(w[first_channel + c]) : A(1);
      const A bc = b ? A(b[first_channel + c]) : A(0);
      for (int64_t j = c * hw; j < (c + 1) * hw; ++j) {
        const A xhat = (A(xr[j]) - mu) * rs;
        const A gj = silu ? A(gr[j]) * silu_derivative(xhat * wc + bc) : A(gr[j]);
        dxr[j] = T(rs * (gj * wc - mean_gw - xhat * mean_gw_xhat));
      }
    }
  }
  if (!params) return;
  for (int64_t c = 0; c < channels; ++c) {
    A sw = 0, sb = 0;
    for (int64_t s = 0; s < n; ++s) {
      sw += partial[size_t(s * channels + c) * 2];
      sb += partial[size_t(s * channels + c) * 2 + 1];
    }
    if (dw_t.defined()) dw_t.data<T>()[c] = T(sw);
    if (db_t.defined()) db_t.data<T>()[c] = T(sb);
  }
}

}  // namespace

void group_norm_backward(int64_t groups, const Tensor& g, const Tensor& x, const Tensor& weight,
                         const Tensor& bias, const Tensor& mean, const Tensor& rstd, bool silu,
                         const Tensor& dx, const Tensor& dweight, const Tensor& dbias) {
  visit_floating(x.dtype(), "group_norm_backward", [&](auto tag) {
    run<typename decltype(tag)::type>(groups, g, x, weight, bias, mean, rstd, silu, dx, dweight,
                                      dbias);
  });
}

}  // namespace dlf::kernels
