// Backward of the reductions (sum, mean, max, var), softmax/log_softmax, layer_norm, rms_norm
// and group_norm, composed of dispatched ops so that they can be differentiated again.
#include <dlf/autograd/backward.h>
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/reduce.h>

#include <algorithm>

namespace dlf::autograd {
namespace {

using Grads = std::vector<Tensor>;

// The reduced dims of a reduction, wrapped and sorted (empty attr = all dims).
Shape reduced_dims(const Attrs& a, int64_t rank) {
  Shape dims = a.ints("dims");
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  }
  for (int64_t& d : dims) d = wrap_dim(d, rank);
  std::sort(dims.begin(), dims.end());
  return dims;
}

// The input's shape with the reduced dims set to 1: where a reduction's output broadcasts.
Shape kept_shape(const Shape& input, const Shape& dims) {
  Shape s = input;
  for (int64_t d : dims) s[d] = 1;
  return s;
}

// A reduction's output (or its gradient) viewed with keepdim, ready to broadcast back.
Tensor keep(const Tensor& t, const BackwardContext& c) {
  const Shape& in = c.input_meta(0).shape;
  return t.reshape(kept_shape(in, reduced_dims(c.attrs(), static_cast<int64_t>(in.size()))));
}

double reduced_count(const BackwardContext& c) {
  const Shape& in = c.input_meta(0).shape;
  double n = 1;
  for (int64_t d : reduced_dims(c.attrs(), static_cast<int64_t>(in.size())))
    n *= static_cast<double>(in[d]);
  return n;
}

// dx of a normalisation, per row of xr [rows..., n] (statistics over the last dim):
// rstd * (gw - mean(gw) - xhat * mean(gw * xhat)).
Tensor normalized_input_grad(const Tensor& gw, const Tensor& xhat, const Tensor& rstd) {
  const int64_t last = gw.dim() - 1;
  return rstd * (gw - mean(gw, {last}, true) - xhat * mean(gw * xhat, {last}, true));
}

// Mean and rstd over the last dim of xr, with keepdim: recomputed from x when the backward is
// itself recorded (so second derivatives see their dependence on x), else the saved ones.
std::pair<Tensor, Tensor> statistics(const Tensor& xr, const BackwardContext& c,
                                     const Shape& shape) {
  if (grad_enabled()) {
    const int64_t last = xr.dim() - 1;
    return {mean(xr, {last}, true), rsqrt(var(xr, {last}, 0, true) + c.attrs().f("eps"))};
  }
  const DType t = xr.dtype();
  return {c.output(1).to(t).reshape(shape), c.output(2).to(t).reshape(shape)};
}

Grads layer_norm_backward(const BackwardContext& c) {
  const Tensor& x = c.input(0);
  const Shape& normalized = c.attrs().ints("normalized_shape");
  if (!grad_enabled()) {  // first order: one fused pass
    static const OpDef& fused = find_op("layer_norm_backward");
    std::vector<Tensor> g = dispatch(
        fused, {c.grad(0), x, c.has_input(1) ? c.input(1) : Tensor(), c.output(1), c.output(2)},
        {{"normalized_shape", normalized}});
    return {c.needs_grad(0) ? g[0] : Tensor(), c.needs_grad(1) ? g[1] : Tensor(),
            c.needs_grad(2) ? g[2] : Tensor()};
  }
  const int64_t n = numel(normalized);
  const Shape lead(x.shape().begin(), x.shape().end() - static_cast<int64_t>(normalized.size()));
  Shape rows = lead;
  rows.push_back(n);
  Shape stat = lead;
  stat.push_back(1);
  const Tensor xr = x.reshape(rows);
  auto [mu, rstd] = statistics(xr, c, stat);
  const Tensor xhat = (xr - mu) * rstd;
  const Tensor g = c.grad(0).reshape(rows);
  const Tensor weight = c.has_input(1) ? c.input(1) : Tensor();
  Grads out(3);
  if (c.needs_grad(0)) {
    const Tensor gw = weight.defined() ? g * weight.reshape({n}) : g;
    out[0] = normalized_input_grad(gw, xhat, rstd).reshape(x.shape());
  }
  Shape lead_dims;
  for (size_t d = 0; d < lead.size(); ++d) lead_dims.push_back(static_cast<int64_t>(d));
  if (c.needs_grad(1)) out[1] = sum(g * xhat, lead_dims).reshape(normalized);
  if (c.needs_grad(2)) out[2] = sum(g, lead_dims).reshape(normalized);
  return out;
}

// dx = rstd · (ĝ − x̂ · mean(ĝ x̂)) with x̂ = x · rstd and ĝ = g · weight; dweight = Σ_rows g x̂.
Grads rms_norm_backward(const BackwardContext& c) {
  const Tensor& x = c.input(0);
  const Tensor weight = c.has_input(1) ? c.input(1) : Tensor();
  if (!grad_enabled()) {  // first order: one fused pass
    static const OpDef& fused = find_op("rms_norm_backward");
    std::vector<Tensor> g = dispatch(fused, {c.grad(0), x, weight, c.output(1)});
    return {c.needs_grad(0) ? g[0] : Tensor(), c.needs_grad(1) ? g[1] : Tensor()};
  }
  const int64_t last = x.dim() - 1;
  const Tensor rstd = rsqrt(mean(x * x, {last}, true) + c.attrs().f("eps"));
  const Tensor xhat = x * rstd;
  const Tensor g = c.grad(0);
  Grads out(2);
  if (c.needs_grad(0)) {
    const Tensor gw = weight.defined() ? g * weight : g;
    out[0] = rstd * (gw - xhat * mean(gw * xhat, {last}, true));
  }
  if (c.needs_grad(1)) {
    Shape lead_dims;
    for (int64_t d = 0; d < last; ++d) lead_dims.push_back(d);
    out[1] = lead_dims.empty() ? g * xhat : sum(g * xhat, lead_dims);
  }
  return out;
}

// The gradients of group_norm, or with `silu` of group_norm_silu (silu of group_norm's output).
Grads group_norm_grads(const BackwardContext& c, bool silu) {
  const Tensor& x = c.input(0);
  const int64_t groups = c.attrs().i("groups");
  const Tensor weight = c.has_input(1) ? c.input(1) : Tensor();
  const Tensor bias = silu && c.has_input(2) ? c.input(2) : Tensor();
  if (!grad_enabled()) {  // first order: one fused pass
    static const OpDef& fused = find_op("group_norm_backward");
    std::vector<Tensor> g = dispatch(fused, {c.grad(0), x, weight, c.output(1), c.output(2), bias},
                                     {{"groups", groups}, {"silu", silu}});
    return {c.needs_grad(0) ? g[0] : Tensor(), c.needs_grad(1) ? g[1] : Tensor(),
            c.needs_grad(2) ? g[2] : Tensor()};
  }
  const int64_t batch = x.shape()[0], channels = x.shape()[1];
  const Shape grouped{batch, groups, x.numel() / (batch * groups)};
  const Tensor xr = x.reshape(grouped);
  auto [mu, rstd] = statistics(xr, c, {batch, groups, 1});
  const Tensor xhat = ((xr - mu) * rstd).reshape(x.shape());
  Shape per_channel(x.shape().size(), 1);
  per_channel[1] = channels;
  Tensor g = c.grad(0);
  if (silu) {  // the gradient of silu's input z = x̂·w + b
    Tensor z = weight.defined() ? xhat * weight.reshape(per_channel) : xhat;
    if (bias.defined()) z = z + bias.reshape(per_channel);
    const Tensor s = sigmoid(z);
    g = g * s * (1.0 + z * (1.0 - s));
  }
  Shape all_but_channel;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != 1) all_but_channel.push_back(d);
  }
  Grads out(3);
  if (c.needs_grad(0)) {
    const Tensor gw = weight.defined() ? g * weight.reshape(per_channel) : g;
    out[0] =
        normalized_input_grad(gw.reshape(grouped), xhat.reshape(grouped), rstd).reshape(x.shape());
  }
  if (c.needs_grad(1)) out[1] = sum(g * xhat, all_but_channel);
  if (c.needs_grad(2)) out[2] = sum(g, all_but_channel);
  return out;
}

[[maybe_unused]] const bool registered = [] {
  register_backward("sum", {.fn = [](const BackwardContext& c) -> Grads {
                      return {keep(c.grad(), c).expand(c.input_meta(0).shape)};
                    }});
  register_backward("mean", {.fn = [](const BackwardContext& c) -> Grads {
                      return {keep(c.grad() / reduced_count(c), c).expand(c.input_meta(0).shape)};
                    }});
  // Ties share the gradient equally, as PyTorch's amax does.
  register_backward(
      "max", {.save_inputs = {0}, .save_outputs = {0}, .fn = [](const BackwardContext& c) -> Grads {
                const Tensor& x = c.input(0);
                const Tensor hits = eq(x, keep(c.output(0), c)).to(x.dtype());
                const Shape dims = reduced_dims(c.attrs(), x.dim());
                return {hits * (keep(c.grad(), c) / sum(hits, dims, true))};
              }});
  register_backward("var",
                    {.save_inputs = {0}, .fn = [](const BackwardContext& c) -> Grads {
                       const Tensor& x = c.input(0);
                       const Shape dims = reduced_dims(c.attrs(), x.dim());
                       const double denom =
                           reduced_count(c) - static_cast<double>(c.attrs().i("correction"));
                       return {keep(c.grad(), c) * (x - mean(x, dims, true)) * (2.0 / denom)};
                     }});
  register_backward("softmax", {.save_outputs = {0}, .fn = [](const BackwardContext& c) -> Grads {
                                  const Tensor& y = c.output(0);
                                  const int64_t dim = c.attrs().i("dim");
                                  const Tensor g = c.grad();
                                  return {y * (g - sum(g * y, {dim}, true))};
                                }});
  register_backward("log_softmax",
                    {.save_outputs = {0}, .fn = [](const BackwardContext& c) -> Grads {
                       const int64_t dim = c.attrs().i("dim");
                       const Tensor g = c.grad();
                       return {g - exp(c.output(0)) * sum(g, {dim}, true)};
                     }});
  register_nondifferentiable("layer_norm_backward");
  register_nondifferentiable("group_norm_backward");
  register_nondifferentiable("rms_norm_backward");
  register_backward("rms_norm",
                    {.save_inputs = {0, 1}, .save_outputs = {1}, .fn = rms_norm_backward});
  register_backward("layer_norm",
                    {.save_inputs = {0, 1}, .save_outputs = {1, 2}, .fn = layer_norm_backward});
  register_backward("group_norm",
                    {.save_inputs = {0, 1},
                     .save_outputs = {1, 2},
                     .fn = [](const BackwardContext& c) { return group_norm_grads(c, false); }});
  register_backward("group_norm_silu",
                    {.save_inputs = {0, 1, 2},
                     .save_outputs = {1, 2},
                     .fn = [](const BackwardContext& c) { return group_norm_grads(c, true); }});
  register_nondifferentiable("argmax");
  register_nondifferentiable("sum_squares");  // gradient clipping reads it, never differentiates
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
