// upsample_nearest2d and upsample_bilinear2d over NCHW: loops, parallel over planes. Nearest
// keeps channels-last data so, copying (and, backward, adding) each pixel's channels whole.
#include <dlf/core/op.h>
#include <dlf/core/ops/conv.h>

#include <algorithm>
#include <vector>

#include "core/kernels/convert.h"
#include "core/kernels/row_major.h"
#include "core/kernels/strided_copy.h"

namespace dlf {
namespace {

using kernels::acc_t;

std::vector<TensorMeta> infer_upsample(const char* op, Inputs in, const Attrs& a,
                                       MemoryFormat format = MemoryFormat::contiguous) {
  const Tensor& x = in[0];
  DLF_CHECK(x.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ", shape_str(x.shape()));
  DLF_CHECK(is_floating(x.dtype()), op, ": input dtype must be floating, got ",
            dtype_name(x.dtype()));
  const auto& size = a.ints("size");
  DLF_CHECK(size[0] >= 1 && size[1] >= 1, op, ": size ", shape_str(size),
            " must be positive (input shape ", shape_str(x.shape()), ")");
  return {{{x.size(0), x.size(1), size[0], size[1]}, x.dtype(), format}};
}

// Calls fn(in, out) for every plane of x and the matching plane of the contiguous output.
template <typename T, typename Fn>
void for_each_plane(const Tensor& x, const Tensor& out, Fn&& fn) {
  const int64_t channels = x.size(1), planes = x.size(0) * channels;
  const int64_t out_plane = out.size(2) * out.size(3);
  const T* src = x.data<T>();
  T* dst = out.data<T>();
#pragma omp parallel for if (out.numel() > 32768)
  for (int64_t p = 0; p < planes; ++p) {
    fn(src + (p / channels) * x.strides()[0] + (p % channels) * x.strides()[1],
       dst + p * out_plane);
  }
}

// Source offsets (in elements) of each output row or column: floor(dst * in / out).
std::vector<int64_t> nearest_offsets(int64_t in, int64_t out, int64_t stride) {
  std::vector<int64_t> offsets(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) offsets[i] = std::min(i * in / out, in - 1) * stride;
  return offsets;
}

// x and out channels last: out[n, i, j, :] = x[n, rows[i], cols[j], :].
template <typename T>
void nearest_channels_last(const Tensor& x, const Tensor& out) {
  const int64_t channels = x.size(1), out_h = out.size(2), out_w = out.size(3);
  const std::vector<int64_t> rows = nearest_offsets(x.size(2), out_h, x.strides()[2]);
  const std::vector<int64_t> cols = nearest_offsets(x.size(3), out_w, x.strides()[3]);
  const T* src = x.data<T>();
  T* dst = out.data<T>();
#pragma omp parallel for if (out.numel() > 32768)
  for (int64_t r = 0; r < x.size(0) * out_h; ++r) {
    const T* in = src + r / out_h * x.strides()[0] + rows[size_t(r % out_h)];
    T* o = dst + r * out_w * channels;
    for (int64_t j = 0; j < out_w; ++j)
      std::copy_n(in + cols[size_t(j)], channels, o + j * channels);
  }
}

template <typename T>
void nearest_loops(const Tensor& x, const Tensor& out) {
  if (out.is_channels_last()) {
    nearest_channels_last<T>(x, out);
    return;
  }
  const std::vector<int64_t> rows = nearest_offsets(x.size(2), out.size(2), x.strides()[2]);
  const std::vector<int64_t> cols = nearest_offsets(x.size(3), out.size(3), x.strides()[3]);
  for_each_plane<T>(x, out, [&](const T* in, T* o) {
    for (int64_t row : rows)
      for (int64_t col : cols) *o++ = in[row + col];
  });
}

// The two source taps of an output row (column) and the weight of the second.
struct Taps {
  int64_t first, second;  // element offsets
  double weight;
};

// PyTorch's source coordinate: dst * (in-1)/(out-1) with align_corners, else the pixel
// centres (dst + 0.5) * in/out - 0.5, clamped at 0.
std::vector<Taps> bilinear_taps(int64_t in, int64_t out, int64_t stride, bool align_corners) {
  std::vector<Taps> taps(static_cast<size_t>(out));
  const double scale = align_corners ? (out > 1 ? static_cast<double>(in - 1) / (out - 1) : 0.0)
                                     : static_cast<double>(in) / static_cast<double>(out);
  for (int64_t i = 0; i < out; ++i) {
    const double src = align_corners ? scale * static_cast<double>(i)
                                     : std::max(scale * (static_cast<double>(i) + 0.5) - 0.5, 0.0);
    const int64_t first = std::min(static_cast<int64_t>(src), in - 1);
    const int64_t second = std::min(first + 1, in - 1);
    taps[i] = {first * stride, second * stride, src - static_cast<double>(first)};
  }
  return taps;
}

template <typename T>
void bilinear_loops(const Tensor& x, const Tensor& out, bool align_corners) {
  using A = acc_t<T>;
  const std::vector<Taps> rows =
      bilinear_taps(x.size(2), out.size(2), x.strides()[2], align_corners);
  const std::vector<Taps> cols =
      bilinear_taps(x.size(3), out.size(3), x.strides()[3], align_corners);
  for_each_plane<T>(x, out, [&](const T* in, T* o) {
    for (const Taps& r : rows) {
      const A wy = static_cast<A>(r.weight);
      for (const Taps& c : cols) {
        const A wx = static_cast<A>(c.weight);
        auto at = [&](int64_t offset) { return static_cast<A>(in[offset]); };
        const A top = (1 - wx) * at(r.first + c.first) + wx * at(r.first + c.second);
        const A bottom = (1 - wx) * at(r.second + c.first) + wx * at(r.second + c.second);
        *o++ = kernels::convert<T>((1 - wy) * top + wy * bottom);
      }
    }
  });
}

const OpDef& upsample_nearest2d_op = register_op({
    .name = "upsample_nearest2d",
    .infer =
        [](Inputs in, const Attrs& a) {
          return infer_upsample("upsample_nearest2d", in, a, in[0].memory_format());
        },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          kernels::visit_floating(in[0].dtype(), "upsample_nearest2d", [&](auto tag) {
            nearest_loops<typename decltype(tag)::type>(in[0], out[0]);
          });
        },
});

const OpDef& upsample_bilinear2d_op = register_op({
    .name = "upsample_bilinear2d",
    .infer = [](Inputs in, const Attrs& a) { return infer_upsample("upsample_bilinear2d", in, a); },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::visit_floating(in[0].dtype(), "upsample_bilinear2d", [&](auto tag) {
            bilinear_loops<typename decltype(tag)::type>(in[0], out[0], a.b("align_corners"));
          });
        },
    // Six multiplies and three adds per output; all bytes in and out.
    .cost =
        [](Inputs in, const Attrs&, std::span<const Tensor> out) {
          return Cost{9.0 * static_cast<double>(out[0].numel()),
                      static_cast<double>(in[0].nbytes()), static_cast<double>(out[0].nbytes())};
        },
});

// The adjoints: each input pixel sums the gradient of the outputs that read it. Planes run in
// parallel; within a plane the sums run in a fixed order.
std::vector<TensorMeta> infer_upsample_backward(Inputs in, const Attrs& a,
                                                MemoryFormat format = MemoryFormat::contiguous) {
  const auto& size = a.ints("input_size");
  return {{{in[0].size(0), in[0].size(1), size[0], size[1]}, in[0].dtype(), format}};
}

// Channels last: each gradient pixel's channels are added to its source pixel's, per sample
// in a fixed order.
template <typename T>
void nearest_adjoint_channels_last(const Tensor& grad_in, const Tensor& out) {
  using A = acc_t<T>;
  const Tensor grad = kernels::dense_in(grad_in, MemoryFormat::channels_last);
  const int64_t channels = out.size(1), h = out.size(2), w = out.size(3);
  const int64_t gh = grad.size(2), gw = grad.size(3), plane = h * w * channels;
  const std::vector<int64_t> rows = nearest_offsets(h, gh, w * channels);
  const std::vector<int64_t> cols = nearest_offsets(w, gw, channels);
#pragma omp parallel for if (grad.numel() > 32768)
  for (int64_t n = 0; n < out.size(0); ++n) {
    std::vector<A> acc(static_cast<size_t>(plane), A(0));
    const T* g = grad.data<T>() + n * gh * gw * channels;
    for (int64_t i = 0; i < gh; ++i) {
      for (int64_t j = 0; j < gw; ++j, g += channels) {
        A* a = acc.data() + rows[size_t(i)] + cols[size_t(j)];
#pragma omp simd
        for (int64_t c = 0; c < channels; ++c) a[c] += static_cast<A>(g[c]);
      }
    }
    T* o = out.data<T>() + n * plane;
    for (int64_t i = 0; i < plane; ++i) o[i] = kernels::convert<T>(acc[size_t(i)]);
  }
}

template <typename Scatter>
void upsample_adjoint(const char* op, const Tensor& grad, const Tensor& out, Scatter scatter) {
  kernels::visit_floating(grad.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    kernels::RowMajorData<T> g(grad);
    const int64_t planes = out.size(0) * out.size(1);
    const int64_t plane_in = out.size(2) * out.size(3), plane_out = grad.size(2) * grad.size(3);
#pragma omp parallel for if (grad.numel() > 32768)
    for (int64_t p = 0; p < planes; ++p) {
      std::vector<A> acc(static_cast<size_t>(plane_in), A(0));
      scatter(acc.data(), g.data() + p * plane_out);
      T* o = out.data<T>() + p * plane_in;
      for (int64_t i = 0; i < plane_in; ++i) o[i] = kernels::convert<T>(acc[i]);
    }
  });
}

const OpDef& upsample_nearest2d_backward_op = register_op({
    .name = "upsample_nearest2d_backward",
    .infer = [](Inputs in,
                const Attrs& a) { return infer_upsample_backward(in, a, in[0].memory_format()); },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          if (out[0].is_channels_last()) {
            kernels::visit_floating(in[0].dtype(), "upsample_nearest2d_backward", [&](auto tag) {
              nearest_adjoint_channels_last<typename decltype(tag)::type>(in[0], out[0]);
            });
            return;
          }
          const int64_t h = out[0].size(2), w = out[0].size(3);
          const std::vector<int64_t> rows = nearest_offsets(h, in[0].size(2), w);
          const std::vector<int64_t> cols = nearest_offsets(w, in[0].size(3), 1);
          upsample_adjoint("upsample_nearest2d_backward", in[0], out[0],
                           [&](auto* acc, const auto* g) {
                             for (int64_t row : rows)
                               for (int64_t col : cols) acc[row + col] += *g++;
                           });
        },
});

const OpDef& upsample_bilinear2d_backward_op = register_op({
    .name = "upsample_bilinear2d_backward",
    .infer = [](Inputs in, const Attrs& a) { return infer_upsample_backward(in, a); },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const int64_t h = out[0].size(2), w = out[0].size(3);
          const bool corners = a.b("align_corners");
          const std::vector<Taps> rows = bilinear_taps(h, in[0].size(2), w, corners);
          const std::vector<Taps> cols = bilinear_taps(w, in[0].size(3), 1, corners);
          upsample_adjoint("upsample_bilinear2d_backward", in[0], out[0],
                           [&](auto* acc, const auto* g) {
                             using A = std::remove_pointer_t<decltype(acc)>;
                             for (const Taps& r : rows) {
                               const A wy = static_cast<A>(r.weight);
                               for (const Taps& c : cols) {
                                 const A wx = static_cast<A>(c.weight), v = static_cast<A>(*g++);
                                 acc[r.first + c.first] += (1 - wy) * (1 - wx) * v;
                                 acc[r.first + c.second] += (1 - wy) * wx * v;
                                 acc[r.second + c.first] += wy * (1 - wx) * v;
                                 acc[r.second + c.second] += wy * wx * v;
                               }
                             }
                           });
        },
});

std::vector<int64_t> size_attr(Pair size) { return {size[0], size[1]}; }

}  // namespace

Tensor upsample_nearest2d(const Tensor& x, Pair size) {
  return dispatch1(upsample_nearest2d_op, {x}, {{"size", size_attr(size)}});
}

Tensor upsample_bilinear2d(const Tensor& x, Pair size, bool align_corners) {
  return dispatch1(upsample_bilinear2d_op, {x},
                   {{"size", size_attr(size)}, {"align_corners", align_corners}});
}

}  // namespace dlf
