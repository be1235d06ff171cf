// One pass over x: each row of d elements reads its position's cos/sin row from a table built
// once per call ([T, d/2], in double then the compute type), so no sin or cos per element.
#include "core/kernels/nn_rotary.h"

#include <cmath>
#include <numbers>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/row_major.h"

namespace dlf::kernels {

std::vector<double> rotary_frequencies(int64_t head_dim, const Attrs& a) {
  const int64_t half = head_dim / 2;
  const double theta = a.f("theta"), factor = a.f("scaling_factor");
  std::vector<double> freq(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) {
    double f = std::pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
    if (factor > 0) {
      const double context = static_cast<double>(a.i("original_context"));
      const double low = a.f("low_freq_factor"), high = a.f("high_freq_factor");
      const double wavelength = 2 * std::numbers::pi / f;
      if (wavelength > context / low) {
        f /= factor;
      } else if (wavelength >= context / high) {
        const double smooth = (context / wavelength - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
    freq[static_cast<size_t>(j)] = f;
  }
  return freq;
}

namespace {

template <typename T>
void rotate(const Tensor& x_t, const Attrs& a, const Tensor& y_t) {
  using A = acc_t<T>;
  const int64_t rank = x_t.dim(), seq = wrap_dim(a.i("seq_dim"), rank);
  const int64_t d = x_t.shape().back(), half = d / 2, positions = x_t.shape()[seq];
  int64_t inner = 1;  // rows of d between the position dim and the last
  for (int64_t i = seq + 1; i < rank - 1; ++i) inner *= x_t.shape()[i];
  const int64_t rows = d > 0 ? x_t.numel() / d : 0;

  const std::vector<double> freq = rotary_frequencies(d, a);
  const double offset = static_cast<double>(a.i("offset")), sign = a.b("inverse") ? -1 : 1;
  // One table of positions x d/2 per row of dim 0 with an offset of its own, else one for all.
  const std::vector<int64_t>& row_offsets = a.ints("row_offsets");
  const int64_t tables = row_offsets.empty() ? 1 : int64_t(row_offsets.size());
  const int64_t rows_per_table = tables > 0 ? rows / tables : 0;
  std::vector<A> cos_table(static_cast<size_t>(tables * positions * half)),
      sin_table(cos_table.size());
  for (int64_t b = 0; b < tables; ++b) {
    const double first = offset + (row_offsets.empty() ? 0.0 : double(row_offsets[size_t(b)]));
    for (int64_t t = 0; t < positions; ++t) {
      for (int64_t j = 0; j < half; ++j) {
        const double angle = (first + static_cast<double>(t)) * freq[static_cast<size_t>(j)];
        const auto at = static_cast<size_t>((b * positions + t) * half + j);
        cos_table[at] = A(std::cos(angle));
        sin_table[at] = A(sign * std::sin(angle));
      }
    }
  }
  const RowMajorData<T> x_rows(x_t);
  const T* x = x_rows.data();
  T* y = y_t.data<T>();
  // Rotate-half pairs element j with j + d/2; interleaved pairs 2j with 2j + 1 (the pairing a
  // compile-time constant, so that the loop vectorises).
  auto run = [&]<bool Interleaved>() {
    const int64_t pair = Interleaved ? 1 : half;
    constexpr int64_t step = Interleaved ? 2 : 1;
#pragma omp parallel for schedule(static) if (x_t.numel() > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t t = (r / inner) % positions + (tables > 1 ? r / rows_per_table : 0) * positions;
      const A* c = cos_table.data() + t * half;
      const A* s = sin_table.data() + t * half;
      const T* xr = x + r * d;
      T* yr = y + r * d;
      for (int64_t j = 0; j < half; ++j) {
        const A first = A(xr[j * step]), second = A(xr[j * step + pair]);
        yr[j * step] = T(first * c[j] - second * s[j]);
        yr[j * step + pair] = T(second * c[j] + first * s[j]);
      }
    }
  };
  if (a.b("interleaved")) {
    run.template operator()<true>();
  } else {
    run.template operator()<false>();
  }
}

}  // namespace

void rotary_forward(const Tensor& x, const Attrs& a, const Tensor& y) {
  visit_floating(x.dtype(), "rotary_embedding",
                 [&](auto tag) { rotate<typename decltype(tag)::type>(x, a, y); });
}

}  // namespace dlf::kernels
