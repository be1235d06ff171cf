// Backward of matmul and linear, as matmuls (differentiable again).
#include <dlf/autograd/backward.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/linalg.h>
#include <dlf/core/ops/reduce.h>

#include "autograd/derivatives/activation_grad.h"
#include "autograd/derivatives/sum_to.h"

namespace dlf::autograd {
namespace {

using Grads = std::vector<Tensor>;

// a @ b with 1-D operands promoted to matrices, as the forward did; undone at the end.
Grads matmul_backward(const BackwardContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;
  Tensor g = c.grad();
  if (a.dim() == 1) g = g.unsqueeze(-2);
  if (b.dim() == 1) g = g.unsqueeze(-1);
  Grads out(2);
  if (c.needs_grad(0))
    out[0] = sum_to(matmul(g, b2.transpose(-1, -2)), a2.shape()).reshape(a.shape());
  if (c.needs_grad(1))
    out[1] = sum_to(matmul(a2.transpose(-1, -2), g), b2.shape()).reshape(b.shape());
  return out;
}

// y = act(z), z = x Wᵀ + b. gelu needs z, which is recomputed (one more matmul): layers that
// train call linear and gelu separately instead of fusing (nn::MLP does).
Grads linear_backward(const BackwardContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  const std::string& act = c.attrs().s("activation");
  Tensor gz = c.grad();
  if (act == "relu") {
    gz = relu_grad(gz, c.output(0));
  } else if (act != "none") {
    const Tensor bias = c.has_input(2) ? c.input(2) : Tensor();
    gz = gelu_grad(gz, linear(x, w, bias), act == "gelu_tanh");
  }
  const int64_t out_features = w.shape()[0];
  const Tensor gz2 = gz.reshape({-1, out_features});
  Grads out(3);
  if (c.needs_grad(0)) out[0] = matmul(gz, w).reshape(x.shape());
  if (c.needs_grad(1)) out[1] = matmul(gz2.transpose(0, 1), x.reshape({-1, w.shape()[1]}));
  if (c.needs_grad(2)) out[2] = sum(gz2, {0});
  return out;
}

[[maybe_unused]] const bool registered = [] {
  register_backward("matmul", {.save_inputs = {0, 1}, .fn = matmul_backward});
  register_backward("linear",
                    {.save_inputs = {0, 1, 2}, .save_outputs = {0}, .fn = linear_backward});
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
