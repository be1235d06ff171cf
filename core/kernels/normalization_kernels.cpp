#include "core/kernels/normalization_kernels.h"
#include "core/kernels/activation_math.h"
#include "core/kernels/group_norm_channels_last.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/kernels/convert.h"
#include "core/kernels/onednn_util.h"
#include "core/kernels/reduce_common.h"
#include "core/kernels/strided_loop.h"

namespace dlf::kernels {
namespace {

void run(const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
  p.execute(cpu::stream(), args);
  cpu::stream().wait();
}

// ---- softmax ----

// An empty primitive when oneDNN has no implementation for this layout on this CPU.
const dnnl::primitive& onednn_softmax(const Tensor& x, int axis, bool log, const Tensor& y) {
  const std::string key = std::string(log ? "log_softmax|" : "softmax|") + layout_key(x) + "|" +
                          layout_key(y) + "|" + std::to_string(axis);
  return cpu::cached<dnnl::primitive>(key, [&]() -> dnnl::primitive {
    dnnl::softmax_v2_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, onednn_desc(x),
        onednn_desc(y), axis);
    dnnl::softmax_v2_forward::primitive_desc pd(desc, cpu::engine(), /*allow_empty=*/true);
    if (!pd) return {};
    return dnnl::softmax_v2_forward(pd);
  });
}

template <typename T>
void softmax_loop(const Tensor& x, int64_t dim, bool log, const Tensor& y) {
  // One row per position of the other dims; x's rows are strided, y's contiguous.
  StridedDims rows_in, rows_out;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == dim) continue;
    rows_in.push(x.shape()[d], x.strides()[d]);
    rows_out.push(y.shape()[d], y.strides()[d]);
  }
  const bool scalar = x.dim() == 0;
  const int64_t n = scalar ? 1 : x.shape()[dim];
  const int64_t x_step = scalar ? 0 : x.strides()[dim], y_step = scalar ? 0 : y.strides()[dim];
  const int64_t rows = rows_in.numel();
  const T* px = x.data<T>();
  T* py = y.data<T>();
#pragma omp parallel for if (rows * n >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = px + rows_in.offset(r);
    T* out = py + rows_out.offset(r);
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(in[i * x_step]);
      if (!(v <= max)) max = v;  // NaN propagates
    }
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(in[i * x_step]) - max);
    const double log_sum = max + std::log(sum);
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(in[i * x_step]);
      out[i * y_step] = convert<T>(log ? v - log_sum : std::exp(v - max) / sum);
    }
  }
}

// ---- layer_norm and group_norm ----

// Where the blocks that are normalised together lie, and which affine parameter each
// element uses: params[(block % groups) * group_params + position / params_every].
struct NormLayout {
  StridedDims blocks;    // offsets of each block's first element in x
  StridedDims elements;  // offsets of a block's elements from its first, coalesced
  int64_t groups = 1;
  int64_t group_params = 0;
  int64_t params_every = 1;
};

std::vector<double> gather(const Tensor& t) {
  if (!t.defined()) return {};
  std::vector<double> out(static_cast<size_t>(t.numel()));
  visit_floating(t.dtype(), "normalization", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    StridedDims{t.shape(), t.strides()}.coalesced().walk(
        0, t.numel(), [&](int64_t off, int64_t pos) { out[pos] = static_cast<double>(p[off]); });
  });
  return out;
}

template <typename T>
void normalize_loop(const Tensor& x, const NormLayout& l, const Tensor& weight, const Tensor& bias,
                    double eps, bool silu, Outputs out) {
  using A = acc_t<T>;  // silu in the compute type: float for f32, vectorised
  const auto act = [silu](double v) { return silu ? double(silu_of(A(v))) : v; };
  using Stat = acc_t<T>;  // statistics of bf16 data are kept in f32
  const std::vector<double> w = gather(weight), b = gather(bias);
  const int64_t blocks = l.blocks.numel(), n = l.elements.numel();
  const T* px = x.data<T>();
  T* py = out[0].data<T>();
  Stat* mean_out = out[1].data<Stat>();
  Stat* rstd_out = out[2].data<Stat>();
  // A block of contiguous elements (GroupNorm of NCHW, LayerNorm's rows): plain loops the
  // compiler vectorises, one multiply-add per element with each channel's scale and shift.
  // Otherwise the strided walk. unet-small's GroupNorms: 3.3 GB/s by the walk, 17.9 GB/s so.
  const bool contiguous = l.elements.sizes.size() == 1 && l.elements.strides[0] == 1;
#pragma omp parallel for if (blocks * n >= kParallelGrain)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const T* in = px + l.blocks.offset(blk);
    T* y = py + blk * n;
    const int64_t first_param = blk % l.groups * l.group_params;
    double mean = 0, rstd = 0;
    if (contiguous) {
      double sum = 0, squares = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(in[i]);
      mean = sum / static_cast<double>(n);
#pragma omp simd reduction(+ : squares)
      for (int64_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(in[i]) - mean;
        squares += d * d;
      }
      rstd = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
      for (int64_t start = 0; start < n; start += l.params_every) {
        const auto p = static_cast<size_t>(first_param + start / l.params_every);
        const double scale = w.empty() ? rstd : rstd * w[p], shift = b.empty() ? 0 : b[p];
        const int64_t end = std::min(start + l.params_every, n);
#pragma omp simd
        for (int64_t i = start; i < end; ++i)
          y[i] = convert<T>(act((static_cast<double>(in[i]) - mean) * scale + shift));
      }
    } else {
      double sum = 0, squares = 0;
      l.elements.walk(0, n, [&](int64_t off, int64_t) { sum += static_cast<double>(in[off]); });
      mean = sum / static_cast<double>(n);
      l.elements.walk(0, n, [&](int64_t off, int64_t) {
        const double d = static_cast<double>(in[off]) - mean;
        squares += d * d;
      });
      rstd = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
      l.elements.walk(0, n, [&](int64_t off, int64_t pos) {
        double v = (static_cast<double>(in[off]) - mean) * rstd;
        const size_t p = static_cast<size_t>(first_param + pos / l.params_every);
        if (!w.empty()) v *= w[p];
        if (!b.empty()) v += b[p];
        y[pos] = convert<T>(act(v));
      });
    }
    mean_out[blk] = static_cast<Stat>(mean);
    rstd_out[blk] = static_cast<Stat>(rstd);
  }
}

// silu: the output is silu of the normalised values (GroupNorm + SiLU in one pass).
void normalize(const Tensor& x, const NormLayout& l, const Tensor& weight, const Tensor& bias,
               double eps, Outputs out, bool silu = false) {
  visit_floating(x.dtype(), "normalization", [&](auto tag) {
    normalize_loop<typename decltype(tag)::type>(x, l, weight, bias, eps, silu, out);
  });
}

bool contiguous_or_absent(const Tensor& t) { return !t.defined() || t.is_contiguous(); }

// f32 layer norm of contiguous [rows, cols] data; the variance lands in out[2], then
// becomes rstd.
void onednn_layer_norm(const Tensor& x, int64_t rows, int64_t cols, const Tensor& weight,
                       const Tensor& bias, double eps, Outputs out) {
  using tag = dnnl::memory::format_tag;
  const auto f32 = dnnl::memory::data_type::f32;
  const dnnl::memory::desc data({rows, cols}, f32, tag::ab), stat({rows}, f32, tag::a),
      param({cols}, f32, tag::a);
  auto flags = dnnl::normalization_flags::none;
  if (weight.defined()) flags |= dnnl::normalization_flags::use_scale;
  if (bias.defined()) flags |= dnnl::normalization_flags::use_shift;
  const std::string key = "layer_norm|" + std::to_string(rows) + "x" + std::to_string(cols) +
                          "|flags=" + std::to_string(static_cast<unsigned>(flags)) +
                          "|eps=" + std::to_string(eps);
  const auto& prim = cpu::cached<dnnl::primitive>(key, [&]() -> dnnl::primitive {
    dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_training, data, stat,
                                                 static_cast<float>(eps), flags);
    return dnnl::layer_normalization_forward(
        dnnl::layer_normalization_forward::primitive_desc(desc, cpu::engine()));
  });
  auto mem = [](const dnnl::memory::desc& d, const Tensor& t) {
    return dnnl::memory(d, cpu::engine(), t.raw_data());
  };
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, mem(data, x)},
                                                {DNNL_ARG_DST, mem(data, out[0])},
                                                {DNNL_ARG_MEAN, mem(stat, out[1])},
                                                {DNNL_ARG_VARIANCE, mem(stat, out[2])}};
  if (weight.defined()) args.emplace(DNNL_ARG_SCALE, mem(param, weight));
  if (bias.defined()) args.emplace(DNNL_ARG_SHIFT, mem(param, bias));
  run(prim, args);
  float* rstd = out[2].data<float>();
  const float feps = static_cast<float>(eps);
  for (int64_t i = 0; i < rows; ++i) rstd[i] = 1.0f / std::sqrt(rstd[i] + feps);
}

}  // namespace

void softmax_kernel(const Tensor& x, int64_t dim, bool log, const Tensor& y) {
  if (x.numel() == 0) return;
  // oneDNN 2.6's f32 log_softmax along the innermost axis is off by up to ~2e-6 (an
  // approximate log), so f32 log_softmax takes the double-accumulating loop.
  const bool onednn = x.dtype() == DType::bf16 || (x.dtype() == DType::f32 && !log);
  if (onednn && x.is_contiguous()) {
    const dnnl::primitive& p = onednn_softmax(x, static_cast<int>(dim), log, y);
    if (p) {
      run(p, {{DNNL_ARG_SRC, onednn_memory(x)}, {DNNL_ARG_DST, onednn_memory(y)}});
      return;
    }
  }
  visit_floating(x.dtype(), log ? "log_softmax" : "softmax",
                 [&](auto tag) { softmax_loop<typename decltype(tag)::type>(x, dim, log, y); });
}

void layer_norm_kernel(const Tensor& x, int64_t normalized_dims, const Tensor& weight,
                       const Tensor& bias, double eps, Outputs out) {
  NormLayout l;
  const int64_t lead = x.dim() - normalized_dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    (d < lead ? l.blocks : l.elements).push(x.shape()[d], x.strides()[d]);
  }
  l.blocks = l.blocks.coalesced();
  l.elements = l.elements.coalesced();
  const int64_t rows = l.blocks.numel(), cols = l.elements.numel();
  if (x.dtype() == DType::f32 && rows > 0 && cols > 0 && x.is_contiguous() &&
      contiguous_or_absent(weight) && contiguous_or_absent(bias)) {
    onednn_layer_norm(x, rows, cols, weight, bias, eps, out);
    return;
  }
  normalize(x, l, weight, bias, eps, out);
}

void group_norm_kernel(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                       double eps, bool silu, Outputs out) {
  if (x.is_channels_last()) {
    group_norm_channels_last(x, groups, weight, bias, eps, silu, out);
    return;
  }
  NormLayout l;
  const int64_t per_group = x.shape()[1] / groups;
  l.blocks.push(x.shape()[0], x.strides()[0]);
  l.blocks.push(groups, per_group * x.strides()[1]);
  l.blocks = l.blocks.coalesced();
  for (int64_t d = 1; d < x.dim(); ++d) {
    l.elements.push(d == 1 ? per_group : x.shape()[d], x.strides()[d]);
  }
  l.elements = l.elements.coalesced();
  l.groups = groups;
  l.group_params = per_group;
  l.params_every = std::max<int64_t>(l.elements.numel() / std::max<int64_t>(per_group, 1), 1);
  normalize(x, l, weight, bias, eps, out, silu);
}

}  // namespace dlf::kernels
