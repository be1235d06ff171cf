// layer_norm_backward: the fused first-order backward of layer_norm (the formula in
// autograd/ composes differentiable ops instead when a second derivative is being built).
#include <dlf/core/op.h>

#include "core/kernels/layer_norm_backward.h"

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

}  // namespace
}  // namespace dlf
