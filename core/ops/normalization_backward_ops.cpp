// layer_norm_backward, rms_norm_backward and group_norm_backward: the fused first-order backwards
// of the norms (the formulas in autograd/ compose differentiable ops instead when a second
// derivative is being built).
#include <dlf/core/op.h>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/group_norm_backward.h"
#include "core/kernels/group_norm_channels_last.h"
#include "core/kernels/layer_norm_backward.h"
#include "core/kernels/rms_norm.h"
#include "core/kernels/strided_copy.h"

namespace dlf {
namespace {

// Inputs: grad of y, x, weight (or undefined), mean and rstd as layer_norm gave them.
// Outputs: dx, dweight, dbias (the last two of normalized_shape).
const OpDef& layer_norm_backward_op = register_op({
    .name = "layer_norm_backward",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Tensor &g = in[0], &x = in[1], &w = in[2], &mean = in[3], &rstd = in[4];
      const Shape& normalized = a.ints("normalized_shape");
      const int64_t n = numel(normalized), rows = n > 0 ? x.numel() / n : 0;
      const DType stat = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
      DLF_CHECK(
          is_floating(x.dtype()) && g.shape() == x.shape() && g.dtype() == x.dtype() &&
              (!w.defined() || (w.shape() == normalized && w.dtype() == x.dtype())) &&
              mean.numel() == rows && rstd.numel() == rows && mean.dtype() == stat &&
              rstd.dtype() == stat && x.dim() >= int64_t(normalized.size()) &&
              Shape(x.shape().end() - int64_t(normalized.size()), x.shape().end()) == normalized,
          "layer_norm_backward: operands do not match a forward (grad ", shape_str(g.shape()),
          ", x ", shape_str(x.shape()), ", normalized_shape ", shape_str(normalized), ")");
      return {{x.shape(), x.dtype()}, {normalized, x.dtype()}, {normalized, x.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::layer_norm_backward(numel(a.ints("normalized_shape")), in[0], in[1], in[2],
                                       in[3], in[4], out[0], out[1], out[2]);
        },
    // Per element: about 12 flops over two passes; g and x are read twice.
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor> out) -> Cost {
      const double bytes = static_cast<double>(in[1].nbytes());
      return {12.0 * static_cast<double>(in[1].numel()), 4 * bytes,
              static_cast<double>(out[0].nbytes())};
    },
});

// Inputs: grad of y, x, weight (or undefined), rstd as rms_norm gave it. Outputs: dx, dweight.
const OpDef& rms_norm_backward_op = register_op({
    .name = "rms_norm_backward",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor &g = in[0], &x = in[1], &w = in[2], &rstd = in[3];
      const int64_t n = x.dim() >= 1 ? x.shape().back() : 0;
      DLF_CHECK(is_floating(x.dtype()) && n > 0 && g.shape() == x.shape() &&
                    g.dtype() == x.dtype() &&
                    (!w.defined() || (w.shape() == Shape{n} && w.dtype() == x.dtype())) &&
                    rstd.numel() == x.numel() / n && rstd.dtype() == kernels::acc_dtype(x.dtype()),
                "rms_norm_backward: operands do not match a forward (grad ", shape_str(g.shape()),
                ", x ", shape_str(x.shape()), ", rstd ", shape_str(rstd.shape()), ")");
      return {{x.shape(), x.dtype()}, {{n}, x.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          kernels::rms_norm_backward(in[0], in[1], in[2], in[3], out[0], out[1]);
        },
    // Per element: about 9 flops; g and x are read once (a row stays in cache for its second
    // pass), dx written once.
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor> out) -> Cost {
      double read = 0;
      for (const Tensor& t : in) read += t.defined() ? static_cast<double>(t.nbytes()) : 0;
      return {9.0 * static_cast<double>(in[1].numel()), read,
              static_cast<double>(out[0].nbytes() + out[1].nbytes())};
    },
});

// Inputs: grad of y, x [N, C, ...], weight [C] (or undefined), mean and rstd [N, groups] as
// group_norm gave them, and for group_norm_silu's backward (attr silu) its bias [C] (or
// undefined). Outputs: dx, dweight, dbias [C].
const OpDef& group_norm_backward_op = register_op({
    .name = "group_norm_backward",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Tensor &g = in[0], &x = in[1], &w = in[2], &mean = in[3], &rstd = in[4];
      const int64_t groups = a.i("groups");
      const DType stat = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
      DLF_CHECK(
          is_floating(x.dtype()) && x.dim() >= 2 && groups > 0 && x.shape()[1] % groups == 0 &&
              g.shape() == x.shape() && g.dtype() == x.dtype() &&
              (!w.defined() || (w.shape() == Shape{x.shape()[1]} && w.dtype() == x.dtype())) &&
              (in.size() <= 5 || !in[5].defined() ||
               (in[5].shape() == Shape{x.shape()[1]} && in[5].dtype() == x.dtype())) &&
              mean.numel() == x.shape()[0] * groups && rstd.numel() == mean.numel() &&
              mean.dtype() == stat && rstd.dtype() == stat,
          "group_norm_backward: operands do not match a forward (grad ", shape_str(g.shape()),
          ", x ", shape_str(x.shape()), ", ", groups, " groups)");
      const Shape channels{x.shape()[1]};
      return {
          {x.shape(), x.dtype(), x.memory_format()}, {channels, x.dtype()}, {channels, x.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const bool silu = a.has("silu") && a.b("silu");
          const Tensor bias = in.size() > 5 ? in[5] : Tensor();
          if (in[1].is_channels_last()) {
            kernels::group_norm_backward_channels_last(
                a.i("groups"), kernels::dense_in(in[0], MemoryFormat::channels_last), in[1], in[2],
                bias, in[3], in[4], silu, out[0], out[1], out[2]);
          } else {
            kernels::group_norm_backward(a.i("groups"), in[0], in[1], in[2], bias, in[3], in[4],
                                         silu, out[0], out[1], out[2]);
          }
        },
    // As layer_norm_backward's: about 12 flops per element, g and x read twice.
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor> out) -> Cost {
      const double bytes = static_cast<double>(in[1].nbytes());
      return {12.0 * static_cast<double>(in[1].numel()), 4 * bytes,
              static_cast<double>(out[0].nbytes())};
    },
});

}  // namespace
}  // namespace dlf
