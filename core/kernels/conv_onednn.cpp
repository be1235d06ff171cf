#include "core/kernels/conv_onednn.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <unordered_map>

#include "core/kernels/conv_onednn_operand.h"
#include "core/kernels/onednn_util.h"

namespace dlf::kernels {
namespace {

using dnnl::memory;
using Role = OnednnOperand::Role;

// The padding oneDNN wants on the high side: what the window of the last position of the
// smaller side (conv output, transposed-conv input) actually reaches past the larger side.
int64_t right_padding(int64_t small, int64_t large, int64_t span, int64_t stride, int64_t left) {
  return (small - 1) * stride + span - large - left;
}

memory::dims spatial_right_padding(const ConvGeometry& g) {
  memory::dims pad(2);
  const std::array<int64_t, 2> in{g.in_h, g.in_w}, out{g.out_h, g.out_w},
      kernel{g.kernel_h, g.kernel_w};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t span = g.dilation[d] * (kernel[d] - 1) + 1;
    pad[d] = g.transposed ? right_padding(in[d], out[d], span, g.stride[d], g.padding[d])
                          : right_padding(out[d], in[d], span, g.stride[d], g.padding[d]);
  }
  return pad;
}

// The weight tensor as oneDNN's [(G,) O/G, C/G, kH, kW], through the tensor's own strides:
// conv2d's [O, C/G, kH, kW] splits dim 0 into groups; conv_transpose2d's [C, O/G, kH, kW]
// splits dim 0 too and swaps the in- and out-channel dims.
memory::desc user_weights_desc(const ConvGeometry& g, const Tensor& w) {
  const Shape& s = w.strides();
  const int64_t out_per_group = g.out_channels / g.groups;
  const int64_t in_per_group = g.in_channels / g.groups;
  const int64_t out_stride = g.transposed ? s[1] : s[0];
  const int64_t in_stride = g.transposed ? s[0] : s[1];
  const int64_t group_stride = s[0] * (g.transposed ? in_per_group : out_per_group);
  memory::dims dims{out_per_group, in_per_group, g.kernel_h, g.kernel_w};
  memory::dims strides{out_stride, in_stride, s[2], s[3]};
  if (g.groups > 1) {
    dims.insert(dims.begin(), g.groups);
    strides.insert(strides.begin(), group_stride);
  }
  return memory::desc(dims, onednn_type(w.dtype()), strides);
}

// Stride, dilation and padding of a convolution as oneDNN takes them.
struct ConvDims {
  explicit ConvDims(const ConvGeometry& g)
      : strides{g.stride[0], g.stride[1]},
        dilates{g.dilation[0] - 1, g.dilation[1] - 1},  // oneDNN counts the gaps
        pad_l{g.padding[0], g.padding[1]},
        pad_r(spatial_right_padding(g)) {}
  memory::dims strides, dilates, pad_l, pad_r;
};

memory::desc plain_desc(const memory::dims& dims, memory::data_type type) {
  return memory::desc(dims, type, memory::format_tag::nchw);
}

// A dense [N, C, H, W] activation, row-major or channels last.
memory::desc activation_desc(const memory::dims& dims, memory::data_type type, bool nhwc) {
  return nhwc ? memory::desc(dims, type, memory::format_tag::nhwc) : plain_desc(dims, type);
}

struct ConvPlan {
  dnnl::primitive primitive;
  OnednnOperand src, weights, bias, dst;
};

template <typename Primitive>
ConvPlan build_conv_plan(const typename Primitive::desc& desc, const dnnl::primitive_attr& attr,
                         const Tensor& x, const memory::desc& user_weights, const Tensor& bias,
                         const memory::desc& user_dst) {
  typename Primitive::primitive_desc pd(desc, attr, cpu::engine());
  ConvPlan plan;
  plan.primitive = Primitive(pd);
  plan.src = {onednn_desc(x), pd.src_desc(), Role::input};
  plan.weights = {user_weights, pd.weights_desc(), Role::input};
  if (bias.defined()) plan.bias = {onednn_desc(bias), pd.bias_desc(), Role::input};
  plan.dst = {user_dst, pd.dst_desc(), Role::output};
  return plan;
}

// On channels-last activations the primitive works in that layout (oneDNN's NHWC kernels are
// as fast as its blocked ones here): only the small weights are reordered. Otherwise oneDNN
// picks its preferred (blocked) layouts and the plan reorders from and to the tensors'.
ConvPlan make_conv_plan(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& bias,
                        const Tensor& residual) {
  const memory::data_type type = onednn_type(x.dtype());
  const memory::desc user_weights = user_weights_desc(g, w);
  const bool nhwc = x.is_channels_last();
  const memory::desc user_dst =
      activation_desc({g.batch, g.out_channels, g.out_h, g.out_w}, type, nhwc);
  auto any = [type](const memory::dims& dims) {
    return memory::desc(dims, type, memory::format_tag::any);
  };
  const memory::desc src = nhwc ? onednn_desc(x) : any({g.batch, g.in_channels, g.in_h, g.in_w});
  const memory::desc weights = any(user_weights.dims());
  const memory::desc bias_desc = bias.defined() ? any({g.out_channels}) : memory::desc();
  const memory::desc dst = nhwc ? user_dst : any(user_dst.dims());
  const ConvDims d(g);
  dnnl::primitive_attr attr;
  if (residual.defined()) {
    // A sum into the output, which holds the residual: oneDNN's fastest kernels (brgconv) take
    // a sum post-op, not a binary one.
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    attr.set_post_ops(ops);
  }
  constexpr auto prop = dnnl::prop_kind::forward_training;
  if (g.transposed) {
    return build_conv_plan<dnnl::deconvolution_forward>(
        {prop, dnnl::algorithm::deconvolution_direct, src, weights, bias_desc, dst, d.strides,
         d.dilates, d.pad_l, d.pad_r},
        attr, x, user_weights, bias, user_dst);
  }
  return build_conv_plan<dnnl::convolution_forward>(
      {prop, dnnl::algorithm::convolution_direct, src, weights, bias_desc, dst, d.strides,
       d.dilates, d.pad_l, d.pad_r},
      attr, x, user_weights, bias, user_dst);
}

struct PoolPlan {
  dnnl::primitive primitive;
  OnednnOperand src, dst;  // backward: diff_dst and diff_src
};

// A pooling window as oneDNN's dims; the right padding is what the last window reaches past
// the input (never negative: oneDNN's pooling rejects that).
struct PoolDims {
  PoolDims(const PoolWindow& w, const Shape& out, const Shape& in)
      : strides(w.stride.begin(), w.stride.end()),
        kernel(w.kernel.begin(), w.kernel.end()),
        pad_l(w.padding.begin(), w.padding.end()),
        pad_r(2) {
    for (size_t d = 0; d < 2; ++d) {
      pad_r[d] = std::max<int64_t>(
          0, right_padding(out[2 + d], in[2 + d], w.kernel[d], w.stride[d], w.padding[d]));
    }
  }
  memory::dims strides, kernel, pad_l, pad_r;
};

// Average pooling with the padding counted, over plain NCHW buffers of `type`.
dnnl::pooling_forward::primitive_desc avg_pool_forward_pd(dnnl::prop_kind prop, DType type,
                                                          const Shape& in, const Shape& out,
                                                          const PoolWindow& window) {
  const PoolDims dims(window, out, in);
  return {{prop, dnnl::algorithm::pooling_avg_include_padding,
           plain_desc(memory::dims(in.begin(), in.end()), onednn_type(type)),
           plain_desc(memory::dims(out.begin(), out.end()), onednn_type(type)), dims.strides,
           dims.kernel, dims.pad_l, dims.pad_r},
          cpu::engine()};
}

struct WeightGradPlan {
  dnnl::primitive primitive;
  OnednnOperand src, diff_dst, diff_weights;
};

// convolution_backward_weights, with the forward-training primitive as the layout hint.
WeightGradPlan make_weight_grad_plan(const ConvGeometry& g, const Tensor& x, const Tensor& grad,
                                     const Tensor& grad_weight) {
  const memory::data_type type = onednn_type(x.dtype());
  const memory::desc user_weights = user_weights_desc(g, grad_weight);
  auto any = [type](const memory::dims& dims) {
    return memory::desc(dims, type, memory::format_tag::any);
  };
  // Channels-last activations stay so, as in make_conv_plan.
  const bool nhwc = x.is_channels_last() && grad.is_channels_last();
  const memory::desc src = nhwc ? onednn_desc(x) : any({g.batch, g.in_channels, g.in_h, g.in_w});
  const memory::desc weights = any(user_weights.dims());
  const memory::desc dst =
      nhwc ? onednn_desc(grad) : any({g.batch, g.out_channels, g.out_h, g.out_w});
  const ConvDims dims(g);
  const dnnl::convolution_forward::primitive_desc hint(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src, weights, dst,
       dims.strides, dims.dilates, dims.pad_l, dims.pad_r},
      cpu::engine());
  const dnnl::convolution_backward_weights::primitive_desc pd(
      {dnnl::algorithm::convolution_direct, src, weights, dst, dims.strides, dims.dilates,
       dims.pad_l, dims.pad_r},
      cpu::engine(), hint);
  return {dnnl::convolution_backward_weights(pd),
          {onednn_desc(x), pd.src_desc(), Role::input},
          {onednn_desc(grad), pd.diff_dst_desc(), Role::input},
          {user_weights, pd.diff_weights_desc(), Role::output}};
}

}  // namespace

bool onednn_takes_geometry(const ConvGeometry& g) {
  const memory::dims pad_r = spatial_right_padding(g);
  return pad_r[0] > -g.stride[0] && pad_r[1] > -g.stride[1];
}

void conv2d_onednn(const ConvGeometry& g, const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Tensor& out, const std::string& key, const Tensor& residual) {
  DLF_CHECK(!residual.defined() || (x.is_channels_last() && out.is_channels_last() &&
                                    residual.strides() == out.strides()),
            "conv2d: a residual post-op needs channels-last activations in the output's layout");
  const std::string full_key =
      key + "|" + layout_key(x) + layout_key(weight) +
      (bias.defined() ? layout_key(bias) : "nobias") +
      (residual.defined() ? "|residual" + layout_key(residual) : std::string());
  const ConvPlan& plan =
      cpu::cached<ConvPlan>(full_key, [&] { return make_conv_plan(g, x, weight, bias, residual); });
  dnnl::stream& stream = cpu::stream();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, plan.src.input(x.raw_data(), stream)},
      {DNNL_ARG_WEIGHTS, plan.weights.input(weight.raw_data(), stream)},
      {DNNL_ARG_DST, plan.dst.output(out.raw_data())}};
  if (bias.defined()) args[DNNL_ARG_BIAS] = plan.bias.input(bias.raw_data(), stream);
  if (residual.defined() && residual.raw_data() != out.raw_data())
    std::memcpy(out.raw_data(), residual.raw_data(), out.nbytes());
  plan.primitive.execute(stream, args);
  plan.dst.finish_output(args[DNNL_ARG_DST], out.raw_data(), stream);
  stream.wait();
}

void avg_pool2d_onednn(const Tensor& x, const PoolWindow& window, const Tensor& out,
                       const std::string& key) {
  const PoolPlan& plan = cpu::cached<PoolPlan>(key + "|" + layout_key(x), [&] {
    const auto pd = avg_pool_forward_pd(dnnl::prop_kind::forward_inference, x.dtype(), x.shape(),
                                        out.shape(), window);
    return PoolPlan{dnnl::pooling_forward(pd),
                    {onednn_desc(x), pd.src_desc(), Role::input},
                    {pd.dst_desc(), pd.dst_desc(), Role::output}};
  });
  dnnl::stream& stream = cpu::stream();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, plan.src.input(x.raw_data(), stream)},
                                       {DNNL_ARG_DST, plan.dst.output(out.raw_data())}};
  plan.primitive.execute(stream, args);
  stream.wait();
}

void avg_pool2d_backward_onednn(const Tensor& grad, const PoolWindow& window,
                                const Tensor& grad_input, const std::string& key) {
  const PoolPlan& plan = cpu::cached<PoolPlan>(key + "|" + layout_key(grad), [&] {
    const auto hint = avg_pool_forward_pd(dnnl::prop_kind::forward_training, grad.dtype(),
                                          grad_input.shape(), grad.shape(), window);
    const PoolDims dims(window, grad.shape(), grad_input.shape());
    dnnl::pooling_backward::primitive_desc pd(
        {dnnl::algorithm::pooling_avg_include_padding, hint.src_desc(), hint.dst_desc(),
         dims.strides, dims.kernel, dims.pad_l, dims.pad_r},
        cpu::engine(), hint);
    return PoolPlan{dnnl::pooling_backward(pd),
                    {onednn_desc(grad), pd.diff_dst_desc(), Role::input},
                    {pd.diff_src_desc(), pd.diff_src_desc(), Role::output}};
  });
  dnnl::stream& stream = cpu::stream();
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, plan.src.input(grad.raw_data(), stream)},
                                       {DNNL_ARG_DIFF_SRC, plan.dst.output(grad_input.raw_data())}};
  plan.primitive.execute(stream, args);
  stream.wait();
}

void conv2d_weight_grad_onednn(const ConvGeometry& g, const Tensor& x, const Tensor& grad,
                               const Tensor& grad_weight, const std::string& key) {
  const std::string full_key = key + "|" + layout_key(x) + layout_key(grad);
  const WeightGradPlan& plan = cpu::cached<WeightGradPlan>(
      full_key, [&] { return make_weight_grad_plan(g, x, grad, grad_weight); });
  dnnl::stream& stream = cpu::stream();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, plan.src.input(x.raw_data(), stream)},
      {DNNL_ARG_DIFF_DST, plan.diff_dst.input(grad.raw_data(), stream)},
      {DNNL_ARG_DIFF_WEIGHTS, plan.diff_weights.output(grad_weight.raw_data())}};
  plan.primitive.execute(stream, args);
  plan.diff_weights.finish_output(args[DNNL_ARG_DIFF_WEIGHTS], grad_weight.raw_data(), stream);
  stream.wait();
}

}  // namespace dlf::kernels
