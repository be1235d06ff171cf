// Softmax, log_softmax, layer_norm, rms_norm and group_norm. The norms' extra outputs (mean
// and rstd per normalised block) are what their backward needs.
#include <dlf/core/op.h>
#include <dlf/core/ops/normalization.h>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/normalization_kernels.h"
#include "core/kernels/reduce_common.h"
#include "core/kernels/rms_norm.h"

namespace dlf {
namespace {

void check_floating(const char* op, const Tensor& x) {
  DLF_CHECK(is_floating(x.dtype()), op, ": dtype ", dtype_name(x.dtype()),
            " is not supported (expected f32, f64 or bf16)");
}

int64_t softmax_dim(const char* op, const Tensor& x, const Attrs& a) {
  const int64_t dim = a.i("dim");
  const int64_t r = std::max<int64_t>(x.dim(), 1);
  DLF_CHECK(dim >= -r && dim < r, op, ": dim ", dim, " is out of range for input shape ",
            shape_str(x.shape()), " (expected ", -r, " to ", r - 1, ")");
  return dim < 0 ? dim + r : dim;
}

std::function<std::vector<TensorMeta>(Inputs, const Attrs&)> softmax_infer(const char* op) {
  return [op](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
    check_floating(op, in[0]);
    softmax_dim(op, in[0], a);
    return {{in[0].shape(), in[0].dtype()}};
  };
}

Cost softmax_cost(Inputs in, const Attrs&, std::span<const Tensor> out) {
  return kernels::io_cost(in, out, 5);  // max, subtract, exp, sum, scale
}

Cost norm_cost(Inputs in, const Attrs&, std::span<const Tensor> out) {
  return kernels::io_cost(in, out, 8);  // mean, variance, normalise, scale and shift
}

const OpDef& softmax_op = register_op({
    .name = "softmax",
    .infer = softmax_infer("softmax"),
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::softmax_kernel(in[0], softmax_dim("softmax", in[0], a), false, out[0]);
        },
    .cost = softmax_cost,
});

const OpDef& log_softmax_op = register_op({
    .name = "log_softmax",
    .infer = softmax_infer("log_softmax"),
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::softmax_kernel(in[0], softmax_dim("log_softmax", in[0], a), true, out[0]);
        },
    .cost = softmax_cost,
});

void check_param(const char* op, const char* what, const Tensor& p, const Shape& shape,
                 const Tensor& x) {
  if (!p.defined()) return;
  DLF_CHECK(p.shape() == shape, op, ": ", what, " of shape ", shape_str(p.shape()),
            " does not match ", shape_str(shape), " (input shape ", shape_str(x.shape()), ")");
  DLF_CHECK(p.dtype() == x.dtype(), op, ": ", what, " dtype ", dtype_name(p.dtype()),
            " differs from the input's ", dtype_name(x.dtype()));
}

const OpDef& layer_norm_op = register_op({
    .name = "layer_norm",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Tensor& x = in[0];
      const Shape& normalized = a.ints("normalized_shape");
      check_floating("layer_norm", x);
      const int64_t lead = x.dim() - static_cast<int64_t>(normalized.size());
      DLF_CHECK(!normalized.empty() && lead >= 0 &&
                    Shape(x.shape().begin() + lead, x.shape().end()) == normalized,
                "layer_norm: normalized_shape ", shape_str(normalized),
                " does not match the trailing dims of input shape ", shape_str(x.shape()));
      check_param("layer_norm", "weight", in[1], normalized, x);
      check_param("layer_norm", "bias", in[2], normalized, x);
      const Shape rows{numel(Shape(x.shape().begin(), x.shape().begin() + lead))};
      const DType stat = kernels::acc_dtype(x.dtype());
      return {{x.shape(), x.dtype()}, {rows, stat}, {rows, stat}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::layer_norm_kernel(in[0], static_cast<int64_t>(a.ints("normalized_shape").size()),
                                     in[1], in[2], a.f("eps"), out);
        },
    .cost = norm_cost,
});

// Llama's RMSNorm over the last dim: y = x / sqrt(mean(x²) + eps) · weight, and rstd per row.
const OpDef& rms_norm_op = register_op({
    .name = "rms_norm",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor& x = in[0];
      check_floating("rms_norm", x);
      DLF_CHECK(x.dim() >= 1 && x.shape().back() > 0,
                "rms_norm: input needs a last dim of at least one element, got shape ",
                shape_str(x.shape()));
      check_param("rms_norm", "weight", in[1], {x.shape().back()}, x);
      return {{x.shape(), x.dtype()},
              {{x.numel() / x.shape().back()}, kernels::acc_dtype(x.dtype())}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::rms_norm_forward(in[0], in[1], a.f("eps"), out[0], out[1]);
        },
    .cost =
        [](Inputs in, const Attrs&, std::span<const Tensor> out) {
          return kernels::io_cost(in, out, 4);  // square, sum, scale, weight
        },
});

// group_norm, and group_norm_silu: silu of its output in the same pass (a UNet's GroupNorm
// and the SiLU after it, which would otherwise read and write the activation once more).
const OpDef& register_group_norm(const std::string& name, bool silu) {
  return register_op({
      .name = name,
      .infer = [name](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
        const Tensor& x = in[0];
        const int64_t groups = a.i("groups");
        check_floating(name.c_str(), x);
        DLF_CHECK(x.dim() >= 2, name, ": input must be [N, C, ...], got shape ",
                  shape_str(x.shape()));
        DLF_CHECK(groups > 0 && x.shape()[1] % groups == 0, name, ": ", x.shape()[1],
                  " channels (input shape ", shape_str(x.shape()), ") do not split into ", groups,
                  " groups");
        check_param(name.c_str(), "weight", in[1], {x.shape()[1]}, x);
        check_param(name.c_str(), "bias", in[2], {x.shape()[1]}, x);
        const DType stat = kernels::acc_dtype(x.dtype());
        return {{x.shape(), x.dtype(), x.memory_format()},
                {{x.shape()[0], groups}, stat},
                {{x.shape()[0], groups}, stat}};
      },
      .kernel =
          [silu](Inputs in, const Attrs& a, Outputs out) {
            kernels::group_norm_kernel(in[0], a.i("groups"), in[1], in[2], a.f("eps"), silu, out);
          },
      .cost = norm_cost,
  });
}

const OpDef& group_norm_op = register_group_norm("group_norm", false);
const OpDef& group_norm_silu_op = register_group_norm("group_norm_silu", true);

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return dispatch1(softmax_op, {x}, {{"dim", dim}}); }

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return dispatch1(log_softmax_op, {x}, {{"dim", dim}});
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  return dispatch1(layer_norm_op, {x, weight, bias},
                   {{"normalized_shape", normalized_shape}, {"eps", eps}});
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  return dispatch1(rms_norm_op, {x, weight}, {{"eps", eps}});
}

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  return dispatch1(group_norm_op, {x, weight, bias}, {{"groups", groups}, {"eps", eps}});
}

Tensor group_norm_silu(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                       double eps) {
  return dispatch1(group_norm_silu_op, {x, weight, bias}, {{"groups", groups}, {"eps", eps}});
}

}  // namespace dlf
