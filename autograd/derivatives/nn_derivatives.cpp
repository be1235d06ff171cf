// Backward of cat, embedding, cross_entropy, dropout and attention.
#include <dlf/autograd/backward.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/linalg.h>
#include <dlf/core/ops/reduce.h>

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

// d loss / d logits = w (softmax - smoothed one-hot), w the weight of each target position.
Grads cross_entropy_backward(const BackwardContext& c) {
  const Tensor& logits = c.input(0);
  const Tensor target = c.input(1).to(DType::i64);
  const Attrs& a = c.attrs();
  const int64_t classes = logits.shape()[1];
  const double smoothing = a.f("label_smoothing");
  const TensorOptions i64{.dtype = DType::i64, .device = logits.device()};
  Shape class_shape(logits.dim(), 1);
  class_shape[1] = classes;
  const Tensor one_hot =
      eq(arange(classes, i64).view(class_shape), target.unsqueeze(1)).to(logits.dtype());
  const Tensor p = exp(logits - c.output(1).to(logits.dtype()).unsqueeze(1));
  Tensor weight =
      ne(target, full({}, static_cast<double>(a.i("ignore_index")), i64)).to(logits.dtype());
  const std::string& reduction = a.s("reduction");
  weight = reduction == "mean" ? weight * (c.grad() / sum(weight)) : weight * c.grad();
  return {(p - one_hot * (1 - smoothing) - smoothing / static_cast<double>(classes)) *
              weight.unsqueeze(1),
          Tensor()};
}

// softmax(q kᵀ s + mask) v: the probabilities are recomputed from the saved logsumexp.
Grads attention_backward(const BackwardContext& c) {
  const Tensor& q = c.input(0);
  const Tensor& k = c.input(1);
  const Tensor& v = c.input(2);
  const double scale = c.attrs().f("scale");
  const int64_t tq = q.size(-2), tk = k.size(-2);
  const Tensor g = c.grad();
  Tensor p = exp(matmul(q, k.transpose(-1, -2)) * scale - c.output(1).to(q.dtype()).unsqueeze(-1));
  if (c.attrs().b("causal")) {
    const TensorOptions i64{.dtype = DType::i64, .device = q.device()};
    p = masked_fill(p,
                    gt(arange(tk, i64).view({1, tk}),
                       arange(tq, i64).view({tq, 1}) + static_cast<double>(tk - tq)),
                    0);
  }
  const Tensor dp = matmul(g, v.transpose(-1, -2));
  const Tensor ds = p * (dp - sum(g * c.output(0), {-1}, true)) * scale;
  Grads out(3);
  if (c.needs_grad(0)) out[0] = sum_to(matmul(ds, k), q.shape());
  if (c.needs_grad(1)) out[1] = sum_to(matmul(ds.transpose(-1, -2), q), k.shape());
  if (c.needs_grad(2)) out[2] = sum_to(matmul(p.transpose(-1, -2), g), v.shape());
  return out;
}

[[maybe_unused]] const bool registered = [] {
  register_backward("cat", {.fn = cat_backward});
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
  register_nondifferentiable("embedding_backward");
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
