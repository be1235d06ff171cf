#include <dlf/autograd/grad_mode.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/nn/transformer.h>

namespace dlf::nn {
namespace {
const char* named(const TransformerOptions& o, const char* nanogpt, const char* timm) {
  return o.names == TransformerNames::timm ? timm : nanogpt;
}
}  // namespace

MLP::MLP(const TransformerOptions& o)
    : c_fc(register_module(named(o, "c_fc", "fc1"),
                           make_linear(o.linears, o.dim, o.mlp_hidden ? o.mlp_hidden : 4 * o.dim,
                                       LinearParallel::column, {.dtype = o.dtype}))),
      c_proj(register_module(named(o, "c_proj", "fc2"),
                             make_linear(o.linears, o.mlp_hidden ? o.mlp_hidden : 4 * o.dim, o.dim,
                                         LinearParallel::row, {.dtype = o.dtype}))),
      dropout(register_module("dropout", std::make_shared<Dropout>(o.dropout))),
      activation(o.activation) {}

namespace {
Tensor activate(const Tensor& z, Activation activation) {
  switch (activation) {
    case Activation::none:
      return z;
    case Activation::relu:
      return relu(z);
    case Activation::gelu_tanh:
      return gelu(z, GeluApproximation::tanh);
    case Activation::gelu_erf:
      return gelu(z, GeluApproximation::erf);
  }
  return z;
}
}  // namespace

Tensor MLP::forward(const Tensor& x) const {
  // With autograd on, the activation runs as its own op so backward has c_fc's output; fused
  // into the matmul, backward would have to recompute that matmul.
  const Tensor h = autograd::grad_enabled() ? activate(c_fc->forward(x), activation)
                                            : c_fc->forward(x, activation);
  return dropout->forward(c_proj->forward(h));
}

SelfAttention::SelfAttention(const TransformerOptions& o)
    : c_attn(register_module(
          named(o, "c_attn", "qkv"),
          make_linear(o.linears, o.dim, 3 * o.dim, LinearParallel::column, {.dtype = o.dtype}))),
      c_proj(register_module(
          named(o, "c_proj", "proj"),
          make_linear(o.linears, o.dim, o.dim, LinearParallel::row, {.dtype = o.dtype}))),
      dropout(register_module("dropout", std::make_shared<Dropout>(o.dropout))),
      head_dim(o.heads > 0 ? o.dim / o.heads : 0),
      heads(head_dim > 0 ? c_attn->weight.size(0) / (3 * head_dim) : 0),
      causal(o.causal) {
  DLF_CHECK(o.heads > 0 && o.dim % o.heads == 0, "attention: dim ", o.dim, " does not split into ",
            o.heads, " heads");
  DLF_CHECK(heads * 3 * head_dim == c_attn->weight.size(0), "attention: ", o.heads,
            " heads do not split over ", 3 * o.dim / c_attn->weight.size(0),
            " tensor-parallel ranks (--tp must divide the heads)");
}

Tensor SelfAttention::forward(const Tensor& x) const { return attention(x, nullptr, 0); }

Tensor SelfAttention::forward(const Tensor& x, KVCache& cache, int64_t layer) const {
  DLF_CHECK(causal, "attention: a key/value cache needs causal attention");
  return attention(x, &cache, layer);
}

Tensor SelfAttention::attention(const Tensor& x, KVCache* cache, int64_t layer) const {
  DLF_CHECK(x.dim() == 3 && x.size(2) == c_proj->weight.size(0), "attention: expected x [B, T, ",
            c_proj->weight.size(0), "], got ", shape_str(x.shape()));
  const int64_t B = x.size(0), T = x.size(1);
  // [B, T, 3, H, hd] -> q, k, v as strided [B, H, T, hd] views: the kernel reads them in place,
  // and their gradients come back as one cat.
  const std::vector<Tensor> qkv = unbind(c_attn->forward(x).view({B, T, 3, heads, head_dim}), 2);
  auto head_view = [&](int64_t i) { return qkv[size_t(i)].transpose(1, 2); };
  const Tensor y =
      cache ? cache->attend(layer, head_view(0), head_view(1), head_view(2))
            : scaled_dot_product_attention(head_view(0), head_view(1), head_view(2), causal);
  return dropout->forward(c_proj->forward(y.transpose(1, 2).reshape({B, T, heads * head_dim})));
}

TransformerBlock::TransformerBlock(const TransformerOptions& o)
    : ln_1(register_module(named(o, "ln_1", "norm1"),
                           std::make_shared<LayerNorm>(o.dim, o.ln_eps, true, o.dtype))),
      attn(register_module("attn", std::make_shared<SelfAttention>(o))),
      ln_2(register_module(named(o, "ln_2", "norm2"),
                           std::make_shared<LayerNorm>(o.dim, o.ln_eps, true, o.dtype))),
      mlp(register_module("mlp", std::make_shared<MLP>(o))) {}

Tensor TransformerBlock::forward(const Tensor& x) const { return block(x, nullptr, 0); }

Tensor TransformerBlock::forward(const Tensor& x, KVCache& cache, int64_t layer) const {
  return block(x, &cache, layer);
}

Tensor TransformerBlock::block(const Tensor& x, KVCache* cache, int64_t layer) const {
  return run_block(
      [this, cache, layer](const std::vector<Tensor>& in) {
        const Tensor a = ln_1->forward(in[0]);
        const Tensor h = in[0] + (cache ? attn->forward(a, *cache, layer) : attn->forward(a));
        return h + mlp->forward(ln_2->forward(h));
      },
      {x});
}

}  // namespace dlf::nn
