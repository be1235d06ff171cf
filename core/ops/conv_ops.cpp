// conv2d and conv_transpose2d: oneDNN for f32 and bf16, im2col + Eigen GEMM loops for f64.
// The output is laid out as the input: channels last stays channels last (PyTorch's rule).
#include <dlf/core/op.h>
#include <dlf/core/ops/conv.h>

#include "core/kernels/conv_geometry.h"
#include "core/kernels/conv_loops.h"
#include "core/kernels/conv_onednn.h"
#include "core/kernels/onednn_util.h"
#include "core/kernels/strided_copy.h"

namespace dlf {
namespace {

using kernels::ConvGeometry;

std::string window_str(const std::vector<int64_t>& hw) {
  return std::to_string(hw[0]) + "x" + std::to_string(hw[1]);
}

// The checks both ops share: ranks, dtypes, attrs, groups and the bias.
void check_conv_operands(const char* op, Inputs in, const Attrs& a, bool transposed) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  DLF_CHECK(x.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ", shape_str(x.shape()));
  DLF_CHECK(w.dim() == 4, op, ": weight must be 4-D, got shape ", shape_str(w.shape()));
  DLF_CHECK(is_floating(x.dtype()) && w.dtype() == x.dtype(), op,
            ": input and weight must have the same floating dtype, got ", dtype_name(x.dtype()),
            " and ", dtype_name(w.dtype()));
  for (const char* name : {"stride", "dilation"}) {
    const auto& v = a.ints(name);
    DLF_CHECK(v[0] >= 1 && v[1] >= 1, op, ": ", name, " must be positive, got ", shape_str(v));
  }
  DLF_CHECK(a.ints("padding")[0] >= 0 && a.ints("padding")[1] >= 0, op,
            ": padding must be non-negative, got ", shape_str(a.ints("padding")));
  const int64_t groups = a.i("groups");
  DLF_CHECK(groups >= 1, op, ": groups must be positive, got ", groups);
  DLF_CHECK(x.size(1) % groups == 0, op, ": groups=", groups,
            " does not divide the input channels of shape ", shape_str(x.shape()));
  if (const Tensor& b = in[2]; b.defined()) {
    DLF_CHECK(b.dtype() == x.dtype(), op, ": bias dtype ", dtype_name(b.dtype()),
              " differs from the input's ", dtype_name(x.dtype()));
    const int64_t out_channels = transposed ? w.size(1) * groups : w.size(0);
    DLF_CHECK(b.dim() == 1 && b.size(0) == out_channels, op, ": bias of shape ",
              shape_str(b.shape()), " does not match the ", out_channels,
              " output channels of weight shape ", shape_str(w.shape()));
  }
}

std::vector<TensorMeta> infer_conv2d(Inputs in, const Attrs& a) {
  check_conv_operands("conv2d", in, a, false);
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const int64_t groups = a.i("groups");
  DLF_CHECK(w.size(1) * groups == x.size(1), "conv2d: input of shape ", shape_str(x.shape()),
            " has ", x.size(1), " channels but weight of shape ", shape_str(w.shape()),
            " with groups=", groups, " expects ", w.size(1) * groups);
  DLF_CHECK(w.size(0) % groups == 0, "conv2d: groups=", groups,
            " does not divide the output channels of weight shape ", shape_str(w.shape()));
  const auto& pad = a.ints("padding");
  const auto& dil = a.ints("dilation");
  const std::vector<int64_t> span{dil[0] * (w.size(2) - 1) + 1, dil[1] * (w.size(3) - 1) + 1};
  const std::vector<int64_t> padded{x.size(2) + 2 * pad[0], x.size(3) + 2 * pad[1]};
  DLF_CHECK(span[0] <= padded[0] && span[1] <= padded[1], "conv2d: kernel ",
            window_str({w.size(2), w.size(3)}), " (", window_str(span),
            " dilated) is larger than the padded input ", window_str(padded), " (input shape ",
            shape_str(x.shape()), ", weight shape ", shape_str(w.shape()), ")");
  const ConvGeometry g = kernels::conv_geometry(x, w, a, false);
  return {{{g.batch, g.out_channels, g.out_h, g.out_w}, x.dtype(), x.memory_format()}};
}

std::vector<TensorMeta> infer_conv_transpose2d(Inputs in, const Attrs& a) {
  check_conv_operands("conv_transpose2d", in, a, true);
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  DLF_CHECK(w.size(0) == x.size(1), "conv_transpose2d: input of shape ", shape_str(x.shape()),
            " has ", x.size(1), " channels but weight of shape ", shape_str(w.shape()), " expects ",
            w.size(0));
  const auto& out_pad = a.ints("output_padding");
  const auto& stride = a.ints("stride");
  const auto& dil = a.ints("dilation");
  for (size_t d = 0; d < 2; ++d) {
    DLF_CHECK(out_pad[d] >= 0 && (out_pad[d] < stride[d] || out_pad[d] < dil[d]),
              "conv_transpose2d: output_padding ", shape_str(out_pad),
              " must be non-negative and smaller than the stride ", shape_str(stride),
              " or the dilation ", shape_str(dil));
  }
  const ConvGeometry g = kernels::conv_geometry(x, w, a, true);
  DLF_CHECK(g.out_h > 0 && g.out_w > 0, "conv_transpose2d: output size ", g.out_h, "x", g.out_w,
            " is not positive (input shape ", shape_str(x.shape()), ", weight shape ",
            shape_str(w.shape()), ", padding ", shape_str(a.ints("padding")), ")");
  return {{{g.batch, g.out_channels, g.out_h, g.out_w}, x.dtype(), x.memory_format()}};
}

void run_conv(const char* op, Inputs in, const Attrs& a, const Tensor& out, bool transposed) {
  const ConvGeometry g = kernels::conv_geometry(in[0], in[1], a, transposed);
  if (kernels::onednn_supports(in[0].dtype()) &&
      (!transposed || kernels::onednn_takes_geometry(g))) {
    kernels::conv2d_onednn(g, in[0], in[1], in[2], out, std::string(op) + "|" + a.str());
  } else {
    // The loops write row-major.
    const Tensor dense =
        out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype(), out.device());
    kernels::conv2d_loops(g, in[0], in[1], in[2], dense);
    if (!out.is_contiguous()) kernels::strided_copy(out, dense);
  }
}

// 2 FLOPs per multiply-add, plus one add per output for the bias; all bytes in and out.
Cost conv_cost(Inputs in, const Attrs& a, std::span<const Tensor> out, bool transposed) {
  const ConvGeometry g = kernels::conv_geometry(in[0], in[1], a, transposed);
  const Tensor& points = transposed ? in[0] : out[0];
  Cost c;
  c.flops = 2.0 * static_cast<double>(points.numel()) * static_cast<double>(g.macs_per_point());
  if (in[2].defined()) c.flops += static_cast<double>(out[0].numel());
  for (const Tensor& t : in) c.bytes_read += t.defined() ? static_cast<double>(t.nbytes()) : 0;
  c.bytes_written = static_cast<double>(out[0].nbytes());
  return c;
}

const OpDef& conv2d_op = register_op({
    .name = "conv2d",
    .infer = infer_conv2d,
    .kernel = [](Inputs in, const Attrs& a,
                 Outputs out) { run_conv("conv2d", in, a, out[0], false); },
    .cost = [](Inputs in, const Attrs& a,
               std::span<const Tensor> out) { return conv_cost(in, a, out, false); },
});

const OpDef& conv_transpose2d_op = register_op({
    .name = "conv_transpose2d",
    .infer = infer_conv_transpose2d,
    .kernel = [](Inputs in, const Attrs& a,
                 Outputs out) { run_conv("conv_transpose2d", in, a, out[0], true); },
    .cost = [](Inputs in, const Attrs& a,
               std::span<const Tensor> out) { return conv_cost(in, a, out, true); },
});

std::vector<int64_t> ints(const Pair& p) { return {p[0], p[1]}; }

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  return dispatch1(conv2d_op, {x, weight, bias},
                   {{"stride", ints(o.stride)},
                    {"padding", ints(o.padding)},
                    {"dilation", ints(o.dilation)},
                    {"groups", o.groups}});
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& o) {
  return dispatch1(conv_transpose2d_op, {x, weight, bias},
                   {{"stride", ints(o.stride)},
                    {"padding", ints(o.padding)},
                    {"output_padding", ints(o.output_padding)},
                    {"dilation", ints(o.dilation)},
                    {"groups", o.groups}});
}

}  // namespace dlf
