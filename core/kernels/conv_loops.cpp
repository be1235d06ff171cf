#include "core/kernels/conv_loops.h"

// GCC 12 reports false (maybe-)uninitialized values inside Eigen's inlined AVX-512 code (the
// intrinsics' deliberately undefined source operands).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>

#include "core/kernels/convert.h"
#include "core/kernels/dtype_dispatch.h"

namespace dlf::kernels {
namespace {

template <typename T>
using Matrix = Eigen::Matrix<acc_t<T>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Reads a 4-D tensor of any strides in the compute type.
template <typename T>
struct Reader4d {
  explicit Reader4d(const Tensor& t) : data(t.data<T>()), s(t.strides()) {}
  acc_t<T> operator()(int64_t a, int64_t b, int64_t c, int64_t d) const {
    return static_cast<acc_t<T>>(data[a * s[0] + b * s[1] + c * s[2] + d * s[3]]);
  }
  const T* data;
  Shape s;
};

// The weight as the matrix [dim 0, rest]: [O, C/G*kH*kW] (conv), [C, O/G*kH*kW] (transposed).
template <typename T>
Matrix<T> weight_matrix(const Tensor& w) {
  Reader4d<T> read(w);
  Matrix<T> m(w.size(0), w.size(1) * w.size(2) * w.size(3));
  for (int64_t a = 0; a < w.size(0); ++a)
    for (int64_t b = 0, col = 0; b < w.size(1); ++b)
      for (int64_t c = 0; c < w.size(2); ++c)
        for (int64_t d = 0; d < w.size(3); ++d) m(a, col++) = read(a, b, c, d);
  return m;
}

// Row (c, ky, kx) of the column matrix pairs the small side's point (y, x) with the large
// side's point (y * stride - padding + ky * dilation, ...): conv reads it, transposed writes it.
template <typename Fn>
void for_each_tap(const ConvGeometry& g, int64_t channels, int64_t small_h, int64_t small_w,
                  int64_t large_h, int64_t large_w, Fn&& fn) {
  for (int64_t c = 0, row = 0; c < channels; ++c) {
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      for (int64_t kx = 0; kx < g.kernel_w; ++kx, ++row) {
        for (int64_t y = 0; y < small_h; ++y) {
          const int64_t ly = y * g.stride[0] - g.padding[0] + ky * g.dilation[0];
          if (ly < 0 || ly >= large_h) continue;
          for (int64_t x = 0; x < small_w; ++x) {
            const int64_t lx = x * g.stride[1] - g.padding[1] + kx * g.dilation[1];
            if (lx >= 0 && lx < large_w) fn(c, row, y * small_w + x, ly, lx);
          }
        }
      }
    }
  }
}

template <typename T>
void conv_loops(const ConvGeometry& g, const Tensor& x, const Tensor& weight, const Tensor& bias,
                const Tensor& out) {
  const Matrix<T> w = weight_matrix<T>(weight);
  const Reader4d<T> read_x(x);
  const T* b = bias.defined() ? bias.data<T>() : nullptr;
  const int64_t bias_stride = bias.defined() ? bias.strides()[0] : 0;
  T* y = out.data<T>();
  const int64_t in_group = g.in_channels / g.groups, out_group = g.out_channels / g.groups;
  const int64_t out_plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  const int64_t tasks = g.batch * g.groups;
#pragma omp parallel for if (tasks > 1)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t n = task / g.groups, grp = task % g.groups;
    Matrix<T> result;
    if (!g.transposed) {
      Matrix<T> col = Matrix<T>::Zero(in_group * g.kernel_h * g.kernel_w, out_plane);
      for_each_tap(g, in_group, g.out_h, g.out_w, g.in_h, g.in_w,
                   [&](int64_t c, int64_t row, int64_t p, int64_t iy, int64_t ix) {
                     col(row, p) = read_x(n, grp * in_group + c, iy, ix);
                   });
      result.noalias() = w.middleRows(grp * out_group, out_group) * col;
    } else {
      Matrix<T> in(in_group, in_plane);
      for (int64_t c = 0; c < in_group; ++c)
        for (int64_t iy = 0; iy < g.in_h; ++iy)
          for (int64_t ix = 0; ix < g.in_w; ++ix)
            in(c, iy * g.in_w + ix) = read_x(n, grp * in_group + c, iy, ix);
      const Matrix<T> col = w.middleRows(grp * in_group, in_group).transpose() * in;
      result = Matrix<T>::Zero(out_group, out_plane);
      for_each_tap(g, out_group, g.in_h, g.in_w, g.out_h, g.out_w,
                   [&](int64_t o, int64_t row, int64_t p, int64_t oy, int64_t ox) {
                     result(o, oy * g.out_w + ox) += col(row, p);
                   });
    }
    for (int64_t o = 0; o < out_group; ++o) {
      const int64_t channel = grp * out_group + o;
      const acc_t<T> shift = b ? static_cast<acc_t<T>>(b[channel * bias_stride]) : acc_t<T>(0);
      T* dst = y + (n * g.out_channels + channel) * out_plane;
      for (int64_t p = 0; p < out_plane; ++p) dst[p] = convert<T>(result(o, p) + shift);
    }
  }
}

// One GEMM per group over the whole batch: grad [O/G, N*Ho*Wo] times the columns of x
// [C/G*kH*kW, N*Ho*Wo] transposed. The order of the sums does not depend on the thread count.
template <typename T>
void weight_grad_loops(const ConvGeometry& g, const Tensor& x, const Tensor& grad,
                       const Tensor& grad_weight) {
  const Reader4d<T> read_x(x), read_grad(grad);
  const int64_t in_group = g.in_channels / g.groups, out_group = g.out_channels / g.groups;
  const int64_t out_plane = g.out_h * g.out_w, taps = in_group * g.kernel_h * g.kernel_w;
  T* dw = grad_weight.data<T>();
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    Matrix<T> col = Matrix<T>::Zero(taps, g.batch * out_plane);
    Matrix<T> dy(out_group, g.batch * out_plane);
#pragma omp parallel for if (g.batch * taps * out_plane > 32768)
    for (int64_t n = 0; n < g.batch; ++n) {
      for_each_tap(g, in_group, g.out_h, g.out_w, g.in_h, g.in_w,
                   [&](int64_t c, int64_t row, int64_t p, int64_t iy, int64_t ix) {
                     col(row, n * out_plane + p) = read_x(n, grp * in_group + c, iy, ix);
                   });
      for (int64_t o = 0; o < out_group; ++o)
        for (int64_t y = 0; y < g.out_h; ++y)
          for (int64_t xi = 0; xi < g.out_w; ++xi)
            dy(o, n * out_plane + y * g.out_w + xi) = read_grad(n, grp * out_group + o, y, xi);
    }
    const Matrix<T> result = dy * col.transpose();
    T* dst = dw + grp * out_group * taps;
    for (int64_t i = 0; i < out_group * taps; ++i) dst[i] = convert<T>(result.data()[i]);
  }
}

}  // namespace

void conv2d_weight_grad_loops(const ConvGeometry& g, const Tensor& x, const Tensor& grad,
                              const Tensor& grad_weight) {
  visit_floating(x.dtype(), "conv2d_weight_grad", [&](auto tag) {
    weight_grad_loops<typename decltype(tag)::type>(g, x, grad, grad_weight);
  });
}

void conv2d_loops(const ConvGeometry& g, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& out) {
  visit_floating(x.dtype(), "conv2d", [&](auto tag) {
    conv_loops<typename decltype(tag)::type>(g, x, weight, bias, out);
  });
}

}  // namespace dlf::kernels
