// max_pool2d and avg_pool2d over NCHW.
//
// max_pool2d is one loop kernel for every dtype: it returns the flat index (h * W + w within
// the plane) of each max as a second output for backward, and oneDNN's pooling workspace is
// an opaque, implementation-defined buffer that does not give that index. The loop also
// keeps PyTorch's rules exactly: the first max wins ties and NaN propagates.
// avg_pool2d uses oneDNN's pooling for f32 and bf16, a loop for f64 (and bf16 where oneDNN
// has no bf16: cpu::has_bf16).
#include <dlf/core/op.h>
#include <dlf/core/ops/conv.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/kernels/conv_geometry.h"
#include "core/kernels/conv_onednn.h"
#include "core/kernels/convert.h"
#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/onednn_util.h"
#include "core/kernels/row_major.h"

namespace dlf {
namespace {

using kernels::acc_t;
using kernels::PoolWindow;

PoolWindow pool_window(const Attrs& a) {
  PoolWindow w;
  for (size_t d = 0; d < 2; ++d) {
    w.kernel[d] = a.ints("kernel")[d];
    w.stride[d] = a.ints("stride")[d];
    w.padding[d] = a.ints("padding")[d];
  }
  return w;
}

Shape pooled_shape(const Shape& x, const PoolWindow& w) {
  return {x[0], x[1], (x[2] + 2 * w.padding[0] - w.kernel[0]) / w.stride[0] + 1,
          (x[3] + 2 * w.padding[1] - w.kernel[1]) / w.stride[1] + 1};
}

Shape infer_pooled_shape(const char* op, Inputs in, const Attrs& a) {
  const Tensor& x = in[0];
  DLF_CHECK(x.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ", shape_str(x.shape()));
  DLF_CHECK(is_floating(x.dtype()), op, ": input dtype must be floating, got ",
            dtype_name(x.dtype()));
  const PoolWindow w = pool_window(a);
  for (size_t d = 0; d < 2; ++d) {
    DLF_CHECK(w.kernel[d] >= 1 && w.stride[d] >= 1, op, ": kernel ", shape_str(a.ints("kernel")),
              " and stride ", shape_str(a.ints("stride")), " must be positive");
    DLF_CHECK(w.padding[d] >= 0 && 2 * w.padding[d] <= w.kernel[d], op, ": padding ",
              shape_str(a.ints("padding")), " must be between 0 and half the kernel ",
              shape_str(a.ints("kernel")));
    DLF_CHECK(w.kernel[d] <= x.size(2 + d) + 2 * w.padding[d], op, ": kernel ",
              shape_str(a.ints("kernel")), " is larger than the padded input (input shape ",
              shape_str(x.shape()), ", padding ", shape_str(a.ints("padding")), ")");
  }
  return pooled_shape(x.shape(), w);
}

// Calls visit(plane, out_index, y_begin, y_end, x_begin, x_end) for every output element:
// `plane` is the element offset of its plane in a tensor of `in_shape` and `in_strides`, the
// range is its window clipped to the input. Parallel over planes, in order within a plane.
template <typename Visit>
void for_each_window(const Shape& in_shape, const Shape& in_strides, const PoolWindow& w,
                     const Shape& out_shape, Visit&& visit) {
  const int64_t channels = in_shape[1], height = in_shape[2], width = in_shape[3];
  const int64_t out_h = out_shape[2], out_w = out_shape[3];
  const int64_t planes = in_shape[0] * channels;
#pragma omp parallel for if (numel(out_shape) * w.kernel[0] * w.kernel[1] > 32768)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const int64_t offset = (plane / channels) * in_strides[0] + (plane % channels) * in_strides[1];
    for (int64_t oy = 0; oy < out_h; ++oy) {
      const int64_t y0 = oy * w.stride[0] - w.padding[0];
      const int64_t y_begin = std::max<int64_t>(y0, 0);
      const int64_t y_end = std::min(y0 + w.kernel[0], height);
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const int64_t x0 = ox * w.stride[1] - w.padding[1];
        visit(offset, (plane * out_h + oy) * out_w + ox, y_begin, y_end, std::max<int64_t>(x0, 0),
              std::min(x0 + w.kernel[1], width));
      }
    }
  }
}

template <typename T>
void max_pool_loops(const Tensor& x, const PoolWindow& w, const Tensor& out,
                    const Tensor& indices) {
  const int64_t sy = x.strides()[2], sx = x.strides()[3], width = x.size(3);
  T* values = out.data<T>();
  int64_t* where = indices.data<int64_t>();
  for_each_window(x.shape(), x.strides(), w, out.shape(),
                  [&](int64_t plane, int64_t o, int64_t y_begin, int64_t y_end, int64_t x_begin,
                      int64_t x_end) {
                    const T* in = x.data<T>() + plane;
                    acc_t<T> best = -std::numeric_limits<acc_t<T>>::infinity();
                    int64_t best_index = y_begin * width + x_begin;
                    for (int64_t y = y_begin; y < y_end; ++y) {
                      for (int64_t xi = x_begin; xi < x_end; ++xi) {
                        const acc_t<T> v = static_cast<acc_t<T>>(in[y * sy + xi * sx]);
                        if (v > best || std::isnan(v)) {
                          best = v;
                          best_index = y * width + xi;
                        }
                      }
                    }
                    values[o] = kernels::convert<T>(best);
                    where[o] = best_index;
                  });
}

template <typename T>
void avg_pool_loops(const Tensor& x, const PoolWindow& w, const Tensor& out) {
  const int64_t sy = x.strides()[2], sx = x.strides()[3];
  const double area = static_cast<double>(w.kernel[0] * w.kernel[1]);
  T* values = out.data<T>();
  for_each_window(x.shape(), x.strides(), w, out.shape(),
                  [&](int64_t plane, int64_t o, int64_t y_begin, int64_t y_end, int64_t x_begin,
                      int64_t x_end) {
                    const T* in = x.data<T>() + plane;
                    double sum = 0;
                    for (int64_t y = y_begin; y < y_end; ++y)
                      for (int64_t xi = x_begin; xi < x_end; ++xi)
                        sum += static_cast<double>(in[y * sy + xi * sx]);
                    values[o] = kernels::convert<T>(sum / area);
                  });
}

// Each output's gradient, divided by the window area, goes to every input of its window.
template <typename T>
void avg_pool_backward_loops(const Tensor& grad, const PoolWindow& w, const Tensor& grad_input) {
  const Tensor& dx = grad_input;
  const int64_t width = dx.size(3);
  const double area = static_cast<double>(w.kernel[0] * w.kernel[1]);
  const kernels::RowMajorData<T> g(grad);
  std::vector<double> acc(static_cast<size_t>(dx.numel()), 0.0);
  for_each_window(dx.shape(), dx.strides(), w, grad.shape(),
                  [&](int64_t plane, int64_t o, int64_t y_begin, int64_t y_end, int64_t x_begin,
                      int64_t x_end) {
                    const double share = static_cast<double>(g[o]) / area;
                    for (int64_t y = y_begin; y < y_end; ++y)
                      for (int64_t xi = x_begin; xi < x_end; ++xi)
                        acc[plane + y * width + xi] += share;
                  });
  T* out = dx.data<T>();
  for (size_t i = 0; i < acc.size(); ++i) out[i] = kernels::convert<T>(acc[i]);
}

// One comparison or add per window element; all bytes in and out.
Cost pool_cost(Inputs in, const Attrs& a, std::span<const Tensor> out) {
  const PoolWindow w = pool_window(a);
  Cost c;
  c.flops = static_cast<double>(out[0].numel() * w.kernel[0] * w.kernel[1]);
  c.bytes_read = static_cast<double>(in[0].nbytes());
  for (const Tensor& t : out) c.bytes_written += static_cast<double>(t.nbytes());
  return c;
}

const OpDef& max_pool2d_op = register_op({
    .name = "max_pool2d",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Shape shape = infer_pooled_shape("max_pool2d", in, a);
      return {{shape, in[0].dtype()}, {shape, DType::i64}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::visit_floating(in[0].dtype(), "max_pool2d", [&](auto tag) {
            max_pool_loops<typename decltype(tag)::type>(in[0], pool_window(a), out[0], out[1]);
          });
        },
    .cost = pool_cost,
});

const OpDef& avg_pool2d_op = register_op({
    .name = "avg_pool2d",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      return {{infer_pooled_shape("avg_pool2d", in, a), in[0].dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          if (kernels::onednn_supports(in[0].dtype())) {
            kernels::avg_pool2d_onednn(in[0], pool_window(a), out[0], "avg_pool2d|" + a.str());
          } else {
            kernels::visit_floating(in[0].dtype(), "avg_pool2d", [&](auto tag) {
              avg_pool_loops<typename decltype(tag)::type>(in[0], pool_window(a), out[0]);
            });
          }
        },
    .cost = pool_cost,
});

// grad [N, C, Ho, Wo] -> the gradient of avg_pool2d's input, of shape attr input_shape.
const OpDef& avg_pool2d_backward_op = register_op({
    .name = "avg_pool2d_backward",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Shape input_shape = a.ints("input_shape");
      const Tensor& grad = in[0];
      DLF_CHECK(input_shape.size() == 4 && grad.dim() == 4 && is_floating(grad.dtype()),
                "avg_pool2d_backward: gradient ", shape_str(grad.shape()), " of dtype ",
                dtype_name(grad.dtype()), " and input shape ", shape_str(input_shape),
                " must be 4-D and floating");
      const PoolWindow w = pool_window(a);
      for (size_t d = 0; d < 2; ++d) {
        DLF_CHECK(w.kernel[d] >= 1 && w.stride[d] >= 1, "avg_pool2d_backward: kernel ",
                  shape_str(a.ints("kernel")), " and stride ", shape_str(a.ints("stride")),
                  " must be positive");
      }
      const Shape pooled = pooled_shape(input_shape, w);
      DLF_CHECK(grad.shape() == pooled, "avg_pool2d_backward: gradient ", shape_str(grad.shape()),
                " does not match the pooled input shape ", shape_str(pooled));
      return {{input_shape, grad.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          if (kernels::onednn_supports(in[0].dtype())) {
            kernels::avg_pool2d_backward_onednn(in[0], pool_window(a), out[0],
                                                "avg_pool2d_backward|" + a.str());
          } else {
            kernels::visit_floating(in[0].dtype(), "avg_pool2d_backward", [&](auto tag) {
              avg_pool_backward_loops<typename decltype(tag)::type>(in[0], pool_window(a), out[0]);
            });
          }
        },
    // One add per window element; all bytes in and out.
    .cost =
        [](Inputs in, const Attrs& a, std::span<const Tensor> out) {
          const PoolWindow w = pool_window(a);
          Cost c;
          c.flops = static_cast<double>(in[0].numel() * w.kernel[0] * w.kernel[1]);
          c.bytes_read = static_cast<double>(in[0].nbytes());
          c.bytes_written = static_cast<double>(out[0].nbytes());
          return c;
        },
});

Attrs pool_attrs(const Pool2dOptions& o) {
  std::vector<int64_t> stride{o.stride[0], o.stride[1]};
  for (size_t d = 0; d < 2; ++d) {
    if (stride[d] == 0) stride[d] = o.kernel[d];
  }
  return {{"kernel", std::vector<int64_t>{o.kernel[0], o.kernel[1]}},
          {"stride", stride},
          {"padding", std::vector<int64_t>{o.padding[0], o.padding[1]}}};
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) {
  return dispatch1(max_pool2d_op, {x}, pool_attrs(options));
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) {
  return dispatch1(avg_pool2d_op, {x}, pool_attrs(options));
}

}  // namespace dlf
