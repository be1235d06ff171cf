// Backward of conv2d, conv_transpose2d, pooling and upsampling. The data gradient of a
// convolution is a transposed convolution and vice versa, the weight gradient is a convolution
// of input and gradient with stride and dilation exchanged, and average pooling is a depthwise
// convolution: so most of this is the forward ops again (and differentiable again).
#include <dlf/autograd/backward.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/conv.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/reduce.h>

namespace dlf::autograd {
namespace {

using Grads = std::vector<Tensor>;

Pair pair(const Attrs& a, const char* name) {
  const auto& v = a.ints(name);
  return {v[0], v[1]};
}

// output_padding that makes a transposed convolution of `out` rows give back `in` rows.
int64_t output_padding(int64_t in, int64_t out, int64_t stride, int64_t padding, int64_t dilation,
                       int64_t kernel) {
  return in - ((out - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1);
}

// d<conv2d(x, w), g>/dw for w of shape [O, C/groups, kh, kw]: per group, a convolution over
// the batch of x's channels with g's channels as the kernel.
Tensor conv2d_weight_grad(const Tensor& x, const Tensor& g, const Shape& weight_shape, Pair stride,
                          Pair padding, Pair dilation, int64_t groups) {
  const int64_t in_per_group = weight_shape[1], out_per_group = weight_shape[0] / groups;
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < groups; ++i) {
    const Tensor xg = x.narrow(1, i * in_per_group, in_per_group).transpose(0, 1);
    const Tensor gg = g.narrow(1, i * out_per_group, out_per_group).transpose(0, 1);
    const Tensor full =
        conv2d(xg, gg, {}, {.stride = dilation, .padding = padding, .dilation = stride});
    parts.push_back(
        full.narrow(2, 0, weight_shape[2]).narrow(3, 0, weight_shape[3]).transpose(0, 1));
  }
  return groups == 1 ? parts[0].contiguous() : cat(parts, 0);
}

struct ConvAttrs {
  Pair stride, padding, dilation;
  int64_t groups;
};

// The three gradients of a convolution-like op y = op(x, w) + b; data_grad and weight_grad
// get (x, w, g, attrs).
template <typename DataGrad, typename WeightGrad>
Grads conv_like_backward(const BackwardContext& c, DataGrad data_grad, WeightGrad weight_grad) {
  const Attrs& a = c.attrs();
  const ConvAttrs attrs{pair(a, "stride"), pair(a, "padding"), pair(a, "dilation"), a.i("groups")};
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  const Tensor g = c.grad();
  Grads out(3);
  if (c.needs_grad(0)) out[0] = data_grad(x, w, g, attrs);
  if (c.needs_grad(1)) out[1] = weight_grad(x, w, g, attrs);
  if (c.needs_grad(2)) out[2] = sum(g, {0, 2, 3});
  return out;
}

Grads conv2d_backward(const BackwardContext& c) {
  return conv_like_backward(
      c,
      [](const Tensor& x, const Tensor& w, const Tensor& g, const ConvAttrs& a) {
        Pair op;
        for (int d = 0; d < 2; ++d) {
          op[d] = output_padding(x.size(2 + d), g.size(2 + d), a.stride[d], a.padding[d],
                                 a.dilation[d], w.size(2 + d));
        }
        return conv_transpose2d(g, w, {},
                                {.stride = a.stride,
                                 .padding = a.padding,
                                 .output_padding = op,
                                 .dilation = a.dilation,
                                 .groups = a.groups});
      },
      [](const Tensor& x, const Tensor& w, const Tensor& g, const ConvAttrs& a) {
        return conv2d_weight_grad(x, g, w.shape(), a.stride, a.padding, a.dilation, a.groups);
      });
}

// convT(x, w) is the adjoint of conv2d(., w): both gradients come from conv2d's.
Grads conv_transpose2d_backward(const BackwardContext& c) {
  return conv_like_backward(
      c,
      [](const Tensor& x, const Tensor& w, const Tensor& g, const ConvAttrs& a) {
        const Tensor gx = conv2d(
            g, w, {},
            {.stride = a.stride, .padding = a.padding, .dilation = a.dilation, .groups = a.groups});
        return gx.narrow(2, 0, x.size(2)).narrow(3, 0, x.size(3));
      },
      [](const Tensor& x, const Tensor& w, const Tensor& g, const ConvAttrs& a) {
        return conv2d_weight_grad(g, x, w.shape(), a.stride, a.padding, a.dilation, a.groups);
      });
}

// Average pooling with padding counted is a depthwise convolution with weights 1/(kh kw).
Grads avg_pool2d_backward(const BackwardContext& c) {
  const Shape& in = c.input_meta(0).shape;
  const Attrs& a = c.attrs();
  const Pair kernel = pair(a, "kernel"), stride = pair(a, "stride"), padding = pair(a, "padding");
  const Tensor g = c.grad();
  const Tensor w =
      full({in[1], 1, kernel[0], kernel[1]}, 1.0 / static_cast<double>(kernel[0] * kernel[1]),
           {.dtype = g.dtype(), .device = g.device()});
  Pair op;
  for (int d = 0; d < 2; ++d)
    op[d] = output_padding(in[2 + d], g.size(2 + d), stride[d], padding[d], 1, kernel[d]);
  return {conv_transpose2d(
      g, w, {}, {.stride = stride, .padding = padding, .output_padding = op, .groups = in[1]})};
}

Grads dispatched(const char* op, Tensor g, Attrs attrs) {
  return {dispatch1(find_op(op), {std::move(g)}, std::move(attrs))};
}

[[maybe_unused]] const bool registered = [] {
  register_backward("conv2d", {.save_inputs = {0, 1}, .fn = conv2d_backward});
  register_backward("conv_transpose2d", {.save_inputs = {0, 1}, .fn = conv_transpose2d_backward});
  register_backward("avg_pool2d", {.fn = avg_pool2d_backward});
  register_backward("max_pool2d",
                    {.save_outputs = {1}, .fn = [](const BackwardContext& c) -> Grads {
                       return {dispatch1(find_op("max_pool2d_backward"), {c.grad(), c.output(1)},
                                         {{"input_shape", c.input_meta(0).shape}})};
                     }});
  register_backward("upsample_nearest2d", {.fn = [](const BackwardContext& c) -> Grads {
                      const Shape& in = c.input_meta(0).shape;
                      return dispatched("upsample_nearest2d_backward", c.grad(),
                                        {{"input_size", Shape{in[2], in[3]}}});
                    }});
  register_backward("upsample_bilinear2d", {.fn = [](const BackwardContext& c) -> Grads {
                      const Shape& in = c.input_meta(0).shape;
                      return dispatched("upsample_bilinear2d_backward", c.grad(),
                                        {{"input_size", Shape{in[2], in[3]}},
                                         {"align_corners", c.attrs().b("align_corners")}});
                    }});
  for (const char* op :
       {"max_pool2d_backward", "upsample_nearest2d_backward", "upsample_bilinear2d_backward"}) {
    register_nondifferentiable(op);
  }
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
