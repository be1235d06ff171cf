// Backward of cat and split, embedding, cross_entropy, dropout, attention and rotary embeddings.
#include <dlf/autograd/backward.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/join.h>

#include "autograd/derivatives/sum_to.h"

namespace dlf::autograd {
namespace {

using Grads = std::vector<Tensor>;

Grads cat_backward(const BackwardContext& c) {
  const int64_t dim =
      wrap_dim(c.attrs().i("dim"), static_cast<int64_t>(c.input_meta(0).shape.size()));
  const Tensor g = c.grad();
  Grads out(c.num_inputs());
  int64_t start = 0;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const int64_t size = c.input_meta(i).shape[dim];
    if (c.needs_grad(i)) out[i] = g.narrow(dim, start, size);
    start += size;
  }
  return out;
}

// The pieces' gradients joined in one pass (zeros for a piece none reached).
Grads split_backward(const BackwardContext& c) {
  const size_t pieces = c.attrs().ints("sizes").size();
  std::vector<Tensor> grads;
  grads.reserve(pieces);
  for (size_t i = 0; i < pieces; ++i) grads.push_back(c.grad(static_cast<int>(i)));
  return {cat(grads, c.attrs().i("dim"))};
}

// The fused ops of core/ops/nn_backward_ops.cpp; attention's gradients come over the
// broadcast leading dims and are summed down to each operand's shape.
Grads cross_entropy_backward(const BackwardContext& c) {
  return {dispatch1(find_op("cross_entropy_backward"),
                    {c.grad(), c.input(0), c.input(1), c.output(1)}, c.attrs()),
          Tensor()};
}

Grads attention_backward(const BackwardContext& c) {
  const std::vector<Tensor> d =
      dispatch(find_op("scaled_dot_product_attention_backward"),
               {c.grad(), c.input(0), c.input(1), c.input(2), c.output(0), c.output(1)}, c.attrs());
  Grads out(3);
  for (int i = 0; i < 3; ++i) {
    if (c.needs_grad(i)) out[i] = sum_to(d[i], c.input_meta(i).shape);
  }
  return out;
}

[[maybe_unused]] const bool registered = [] {
  register_backward("cat", {.fn = cat_backward});
  register_backward("split", {.fn = split_backward});
  register_backward("embedding",
                    {.save_inputs = {1}, .fn = [](const BackwardContext& c) -> Grads {
                       return {dispatch1(find_op("embedding_backward"), {c.grad(), c.input(1)},
                                         {{"num_embeddings", c.input_meta(0).shape[0]}}),
                               Tensor()};
                     }});
  register_backward("cross_entropy",
                    {.save_inputs = {0, 1}, .save_outputs = {1}, .fn = cross_entropy_backward});
  register_backward("dropout",
                    {.save_outputs = {1}, .fn = [](const BackwardContext& c) -> Grads {
                       const Tensor g = c.grad();
                       return {g * c.output(1).to(g.dtype()) * (1 / (1 - c.attrs().f("p")))};
                     }});
  register_backward("scaled_dot_product_attention",
                    {.save_inputs = {0, 1, 2}, .save_outputs = {0, 1}, .fn = attention_backward});
  // A rotation's transpose is the rotation by minus the angle: the same op, inverse flipped.
  register_backward("rotary_embedding", {.fn = [](const BackwardContext& c) -> Grads {
                      Attrs a = c.attrs();
                      a.set("inverse", !a.b("inverse"));
                      return {dispatch1(find_op("rotary_embedding"), {c.grad()}, a)};
                    }});
  register_nondifferentiable("embedding_backward");
  register_nondifferentiable("cross_entropy_backward");
  register_nondifferentiable("scaled_dot_product_attention_backward");
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
