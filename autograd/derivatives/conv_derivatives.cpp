// Backward of conv2d, conv_transpose2d, pooling and upsampling. The data gradient of a
// convolution is a transposed convolution and vice versa, so those are the forward ops again;
// the weight gradient is the conv2d_weight_grad op (of conv_transpose2d too, with input and
// gradient exchanged: it is the adjoint of conv2d). The backward ops are linear in the
// gradient, so they are differentiable again through the forward ops (max_pool2d's is not).
#include <dlf/autograd/backward.h>
#include <dlf/core/ops/conv.h>
#include <dlf/core/ops/reduce.h>

namespace dlf::autograd {
namespace {

using Grads = std::vector<Tensor>;

Pair pair(const Attrs& a, const char* name) {
  const auto& v = a.ints(name);
  return {v[0], v[1]};
}

// The attrs every convolution has, read from an op's attrs.
struct ConvAttrs {
  explicit ConvAttrs(const Attrs& a)
      : stride(pair(a, "stride")),
        padding(pair(a, "padding")),
        dilation(pair(a, "dilation")),
        groups(a.i("groups")) {}
  Pair stride, padding, dilation;
  int64_t groups;
};

// d<conv2d(x, w), g>/dx: the transposed convolution of g, with the output_padding that gives
// back x's size (the rows a strided window never reached).
Tensor conv2d_input_grad(const Tensor& g, const Tensor& w, const Shape& x_shape,
                         const ConvAttrs& c) {
  Pair output_padding;
  for (size_t d = 0; d < 2; ++d) {
    const int64_t span = c.dilation[d] * (w.size(2 + d) - 1) + 1;
    output_padding[d] =
        x_shape[2 + d] - ((g.size(2 + d) - 1) * c.stride[d] - 2 * c.padding[d] + span);
  }
  return conv_transpose2d(g, w, {},
                          {.stride = c.stride,
                           .padding = c.padding,
                           .output_padding = output_padding,
                           .dilation = c.dilation,
                           .groups = c.groups});
}

// d<conv2d(x, w), g>/dw, for w of `weight_shape`.
Tensor conv2d_weight_grad(const Tensor& x, const Tensor& g, const Shape& weight_shape,
                          const ConvAttrs& c) {
  return dispatch1(find_op("conv2d_weight_grad"), {x, g},
                   {{"stride", Shape{c.stride[0], c.stride[1]}},
                    {"padding", Shape{c.padding[0], c.padding[1]}},
                    {"dilation", Shape{c.dilation[0], c.dilation[1]}},
                    {"groups", c.groups},
                    {"weight_shape", weight_shape}});
}

// conv2d(x, w) cut to `shape`'s H and W: conv_transpose2d's output_padding rows (and an
// output of conv2d_weight_grad's smaller gradient) are never read by the adjoint.
Tensor conv2d_cut(const Tensor& x, const Tensor& w, const ConvAttrs& c, const Shape& shape) {
  const Tensor y = conv2d(
      x, w, {},
      {.stride = c.stride, .padding = c.padding, .dilation = c.dilation, .groups = c.groups});
  return y.narrow(2, 0, shape[2]).narrow(3, 0, shape[3]);
}

// The output's gradient in the layout of the input: the input's gradient is then laid out as
// the input (a channels-last network's backward stays channels last end to end).
Tensor grad_like_input(const BackwardContext& ctx) {
  return ctx.grad().contiguous(ctx.input(0).memory_format());
}

Grads conv2d_backward(const BackwardContext& ctx) {
  const ConvAttrs c(ctx.attrs());
  const Tensor g = grad_like_input(ctx);
  Grads out(3);
  if (ctx.needs_grad(0)) out[0] = conv2d_input_grad(g, ctx.input(1), ctx.input_meta(0).shape, c);
  if (ctx.needs_grad(1)) out[1] = conv2d_weight_grad(ctx.input(0), g, ctx.input_meta(1).shape, c);
  if (ctx.needs_grad(2)) out[2] = sum(g, {0, 2, 3});
  return out;
}

// conv_transpose2d(., w) is the adjoint of conv2d(., w): both gradients come from conv2d's.
Grads conv_transpose2d_backward(const BackwardContext& ctx) {
  const ConvAttrs c(ctx.attrs());
  const Tensor g = grad_like_input(ctx);
  Grads out(3);
  if (ctx.needs_grad(0)) out[0] = conv2d_cut(g, ctx.input(1), c, ctx.input_meta(0).shape);
  if (ctx.needs_grad(1)) out[1] = conv2d_weight_grad(g, ctx.input(0), ctx.input_meta(1).shape, c);
  if (ctx.needs_grad(2)) out[2] = sum(g, {0, 2, 3});
  return out;
}

// conv2d_weight_grad(x, g) is bilinear: <gw, dw(x, g)> = <g, conv2d(x, gw)>.
Grads conv2d_weight_grad_backward(const BackwardContext& ctx) {
  const ConvAttrs c(ctx.attrs());
  const Tensor gw = ctx.grad();
  Grads out(2);
  if (ctx.needs_grad(0)) out[0] = conv2d_input_grad(ctx.input(1), gw, ctx.input_meta(0).shape, c);
  if (ctx.needs_grad(1)) out[1] = conv2d_cut(ctx.input(0), gw, c, ctx.input_meta(1).shape);
  return out;
}

Attrs with_input_shape(Attrs attrs, const Shape& shape) {
  attrs.set("input_shape", shape);
  return attrs;
}

Attrs upsample_backward_attrs(const BackwardContext& ctx, bool bilinear) {
  const Shape& in = ctx.input_meta(0).shape;
  Attrs attrs{{"input_size", Shape{in[2], in[3]}}};
  if (bilinear) attrs.set("align_corners", ctx.attrs().b("align_corners"));
  return attrs;
}

// An upsampling backward op's input is shaped like the upsampling's output.
Pair upsampled_size(const BackwardContext& ctx) {
  const Shape& out = ctx.input_meta(0).shape;
  return {out[2], out[3]};
}

[[maybe_unused]] const bool registered = [] {
  register_backward("conv2d", {.save_inputs = {0, 1}, .fn = conv2d_backward});
  register_backward("conv_transpose2d", {.save_inputs = {0, 1}, .fn = conv_transpose2d_backward});
  register_backward("conv2d_weight_grad",
                    {.save_inputs = {0, 1}, .fn = conv2d_weight_grad_backward});
  register_backward("avg_pool2d", {.fn = [](const BackwardContext& ctx) -> Grads {
                      return {dispatch1(find_op("avg_pool2d_backward"), {ctx.grad()},
                                        with_input_shape(ctx.attrs(), ctx.input_meta(0).shape))};
                    }});
  register_backward("avg_pool2d_backward", {.fn = [](const BackwardContext& ctx) -> Grads {
                      return {dispatch1(find_op("avg_pool2d"), {ctx.grad()},
                                        {{"kernel", ctx.attrs().ints("kernel")},
                                         {"stride", ctx.attrs().ints("stride")},
                                         {"padding", ctx.attrs().ints("padding")}})};
                    }});
  register_backward(
      "max_pool2d",
      {.save_outputs = {1}, .fn = [](const BackwardContext& ctx) -> Grads {
         return {dispatch1(find_op("max_pool2d_backward"), {ctx.grad(), ctx.output(1)},
                           {{"input_shape", ctx.input_meta(0).shape}})};
       }});
  register_backward("upsample_nearest2d", {.fn = [](const BackwardContext& ctx) -> Grads {
                      return {dispatch1(find_op("upsample_nearest2d_backward"), {ctx.grad()},
                                        upsample_backward_attrs(ctx, false))};
                    }});
  register_backward("upsample_bilinear2d", {.fn = [](const BackwardContext& ctx) -> Grads {
                      return {dispatch1(find_op("upsample_bilinear2d_backward"), {ctx.grad()},
                                        upsample_backward_attrs(ctx, true))};
                    }});
  // The upsampling backward ops are the adjoints of linear maps: their backward is the forward.
  register_backward("upsample_nearest2d_backward", {.fn = [](const BackwardContext& ctx) -> Grads {
                      return {upsample_nearest2d(ctx.grad(), upsampled_size(ctx))};
                    }});
  register_backward("upsample_bilinear2d_backward", {.fn = [](const BackwardContext& ctx) -> Grads {
                      return {upsample_bilinear2d(ctx.grad(), upsampled_size(ctx),
                                                  ctx.attrs().b("align_corners"))};
                    }});
  register_nondifferentiable("max_pool2d_backward");
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
