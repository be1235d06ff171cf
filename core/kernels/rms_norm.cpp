#include "core/kernels/rms_norm.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/row_major.h"

namespace dlf::kernels {
namespace {

constexpr int64_t kRowsPerBlock = 32;
constexpr int64_t kParallelElements = 16384;

/// weight's elements, or nullptr when it is undefined.
template <typename T>
struct OptionalRows {
  explicit OptionalRows(const Tensor& t) {
    if (t.defined()) rows.emplace(t);
  }
  const T* data() const { return rows ? rows->data() : nullptr; }
  std::optional<RowMajorData<T>> rows;
};

template <typename T>
void forward(const Tensor& x_t, const Tensor& w_t, double eps, const Tensor& y_t,
             const Tensor& rstd_t) {
  using A = acc_t<T>;
  const int64_t n = x_t.shape().back(), rows = n > 0 ? x_t.numel() / n : 0;
  const RowMajorData<T> x_rows(x_t);
  const OptionalRows<T> w_rows(w_t);
  const T* x = x_rows.data();
  const T* w = w_rows.data();
  T* y = y_t.data<T>();
  A* rstd = rstd_t.data<A>();
#pragma omp parallel for schedule(static) if (rows * n > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    A squares = 0;
#pragma omp simd reduction(+ : squares)
    for (int64_t j = 0; j < n; ++j) squares += A(xr[j]) * A(xr[j]);
    const A rs = A(1 / std::sqrt(double(squares) / double(n) + eps));
    rstd[r] = rs;
    T* yr = y + r * n;
    if (w) {
      for (int64_t j = 0; j < n; ++j) yr[j] = T(A(xr[j]) * rs * A(w[j]));
    } else {
      for (int64_t j = 0; j < n; ++j) yr[j] = T(A(xr[j]) * rs);
    }
  }
}

template <typename T>
void backward(const Tensor& g_t, const Tensor& x_t, const Tensor& w_t, const Tensor& rstd_t,
              const Tensor& dx_t, const Tensor& dw_t) {
  using A = acc_t<T>;
  const int64_t n = x_t.shape().back(), rows = n > 0 ? x_t.numel() / n : 0;
  const RowMajorData<T> g_rows(g_t), x_rows(x_t);
  const RowMajorData<A> rstd_rows(rstd_t);
  const OptionalRows<T> w_rows(w_t);
  const T *g = g_rows.data(), *x = x_rows.data();
  const A* rstd = rstd_rows.data();
  // The weight in A (ones without one): loops without a branch, which vectorise.
  std::vector<A> weight(static_cast<size_t>(n), A(1));
  if (const T* w = w_rows.data()) std::copy(w, w + n, weight.begin());
  T* dx = dx_t.data<T>();
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  // Per block of rows: its share of dweight (kept even when dweight is not wanted: one
  // multiply-add an element, cheaper than a second form of the loop).
  std::vector<A> partial(static_cast<size_t>(blocks * n), A(0));
#pragma omp parallel for schedule(static) if (rows * n > kParallelElements)
  for (int64_t b = 0; b < blocks; ++b) {
    A* pw = partial.data() + b * n;
    const A* w = weight.data();
    for (int64_t r = b * kRowsPerBlock; r < std::min(rows, (b + 1) * kRowsPerBlock); ++r) {
      const T *gr = g + r * n, *xr = x + r * n;
      const A rs = rstd[r];
      A dot = 0;  // Σ g w x, then times rstd: Σ ĝ x̂
#pragma omp simd reduction(+ : dot)
      for (int64_t j = 0; j < n; ++j) {
        const A gx = A(gr[j]) * A(xr[j]);
        dot += gx * w[j];
        pw[j] += gx * rs;
      }
      const A mean_dot = dot * rs / A(n);
      T* dxr = dx + r * n;
      for (int64_t j = 0; j < n; ++j) dxr[j] = T(rs * (A(gr[j]) * w[j] - A(xr[j]) * rs * mean_dot));
    }
  }
  if (!dw_t.defined()) return;
  T* dw = dw_t.data<T>();
#pragma omp parallel for schedule(static) if (blocks * n > kParallelElements)
  for (int64_t j = 0; j < n; ++j) {
    A sum = 0;
    for (int64_t b = 0; b < blocks; ++b) sum += partial[size_t(b * n + j)];
    dw[j] = T(sum);
  }
}

}  // namespace

void rms_norm_forward(const Tensor& x, const Tensor& weight, double eps, const Tensor& y,
                      const Tensor& rstd) {
  visit_floating(x.dtype(), "rms_norm",
                 [&](auto tag) { forward<typename decltype(tag)::type>(x, weight, eps, y, rstd); });
}

void rms_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                       const Tensor& dx, const Tensor& dweight) {
  visit_floating(x.dtype(), "rms_norm_backward", [&](auto tag) {
    backward<typename decltype(tag)::type>(g, x, weight, rstd, dx, dweight);
  });
}

}  // namespace dlf::kernels
