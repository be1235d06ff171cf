// conv2d_weight_grad: the weight gradient of conv2d (and, with input and gradient exchanged, of
// conv_transpose2d). oneDNN's convolution_backward_weights for f32 and bf16, im2col + one Eigen
// GEMM per group for f64 and for geometries oneDNN refuses.
#include <dlf/core/op.h>

#include "core/kernels/conv_geometry.h"
#include "core/kernels/conv_loops.h"
#include "core/kernels/conv_onednn.h"
#include "core/kernels/onednn_util.h"

namespace dlf {
namespace {

using kernels::ConvGeometry;

// x is the convolution's input, grad its output's gradient; the kernel comes from the attrs.
ConvGeometry weight_grad_geometry(const Tensor& x, const Tensor& grad, const Attrs& a) {
  const auto& weight_shape = a.ints("weight_shape");
  ConvGeometry g;
  g.batch = x.size(0);
  g.in_channels = x.size(1);
  g.in_h = x.size(2);
  g.in_w = x.size(3);
  g.out_channels = grad.size(1);
  g.out_h = grad.size(2);
  g.out_w = grad.size(3);
  g.kernel_h = weight_shape[2];
  g.kernel_w = weight_shape[3];
  g.groups = a.i("groups");
  for (size_t d = 0; d < 2; ++d) {
    g.stride[d] = a.ints("stride")[d];
    g.padding[d] = a.ints("padding")[d];
    g.dilation[d] = a.ints("dilation")[d];
  }
  return g;
}

// The gradient may cover fewer output points than the convolution has (conv_transpose2d's
// output_padding rows are never read by the adjoint convolution), never more.
std::vector<TensorMeta> infer_weight_grad(Inputs in, const Attrs& a) {
  const Tensor& x = in[0];
  const Tensor& grad = in[1];
  const Shape weight_shape = a.ints("weight_shape");
  const int64_t groups = a.i("groups");
  DLF_CHECK(x.dim() == 4 && grad.dim() == 4 && weight_shape.size() == 4,
            "conv2d_weight_grad: input ", shape_str(x.shape()), ", gradient ",
            shape_str(grad.shape()), " and weight ", shape_str(weight_shape), " must be 4-D");
  DLF_CHECK(is_floating(x.dtype()) && grad.dtype() == x.dtype(),
            "conv2d_weight_grad: input and gradient must have the same floating dtype, got ",
            dtype_name(x.dtype()), " and ", dtype_name(grad.dtype()));
  DLF_CHECK(groups >= 1 && x.size(0) == grad.size(0) && grad.size(1) == weight_shape[0] &&
                weight_shape[0] % groups == 0 && x.size(1) == weight_shape[1] * groups,
            "conv2d_weight_grad: input ", shape_str(x.shape()), " and gradient ",
            shape_str(grad.shape()), " do not fit weight ", shape_str(weight_shape),
            " with groups=", groups);
  const ConvGeometry g = weight_grad_geometry(x, grad, a);
  const std::array<int64_t, 2> in_size{g.in_h, g.in_w}, out_size{g.out_h, g.out_w};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t span = g.dilation[d] * (weight_shape[2 + d] - 1) + 1;
    const int64_t points = (in_size[d] + 2 * g.padding[d] - span) / g.stride[d] + 1;
    DLF_CHECK(span <= in_size[d] + 2 * g.padding[d] && out_size[d] >= 1 && out_size[d] <= points,
              "conv2d_weight_grad: gradient ", shape_str(grad.shape()),
              " does not match the output of input ", shape_str(x.shape()), " and weight ",
              shape_str(weight_shape), " (stride ", shape_str(a.ints("stride")), ", padding ",
              shape_str(a.ints("padding")), ", dilation ", shape_str(a.ints("dilation")), ")");
  }
  return {{weight_shape, x.dtype()}};
}

const OpDef& conv2d_weight_grad_op = register_op({
    .name = "conv2d_weight_grad",
    .infer = infer_weight_grad,
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const ConvGeometry g = weight_grad_geometry(in[0], in[1], a);
          if (kernels::onednn_supports(in[0].dtype()) && kernels::onednn_takes_geometry(g)) {
            kernels::conv2d_weight_grad_onednn(g, in[0], in[1], out[0],
                                               "conv2d_weight_grad|" + a.str());
          } else {
            kernels::conv2d_weight_grad_loops(g, in[0], in[1], out[0]);
          }
        },
    // One multiply-add per gradient point and weight of its group; all bytes in and out.
    .cost =
        [](Inputs in, const Attrs& a, std::span<const Tensor> out) {
          const ConvGeometry g = weight_grad_geometry(in[0], in[1], a);
          Cost c;
          c.flops = 2.0 * static_cast<double>(in[1].numel() * g.macs_per_point());
          c.bytes_read = static_cast<double>(in[0].nbytes() + in[1].nbytes());
          c.bytes_written = static_cast<double>(out[0].nbytes());
          return c;
        },
});

}  // namespace
}  // namespace dlf
