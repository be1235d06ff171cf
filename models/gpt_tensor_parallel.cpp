#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/gpt_tensor_parallel.h>

#include <map>

namespace dlf::models {

ParallelAttention::ParallelAttention(const GPTConfig& c, parallel::Communicator& tp)
    : c_attn(register_module("c_attn",
                             std::make_shared<parallel::ColumnParallelLinear>(
                                 c.dim, 3 * c.dim, tp, nn::LinearOptions{.dtype = c.dtype}))),
      c_proj(register_module("c_proj", std::make_shared<parallel::RowParallelLinear>(
                                           c.dim, c.dim, tp, nn::LinearOptions{.dtype = c.dtype}))),
      heads(c.heads / tp.size()) {
  DLF_CHECK(c.heads % tp.size() == 0, "GPT '", c.name, "': ", c.heads, " heads do not split over ",
            tp.size(), " tensor-parallel ranks");
}

Tensor ParallelAttention::forward(const Tensor& x) const {
  const int64_t B = x.size(0), T = x.size(1), local = c_proj->weight.size(1);
  const int64_t hd = local / heads;
  // This rank's rows of c_attn are its heads' q, then k, then v.
  const Tensor qkv = c_attn->forward(x).view({B, T, 3, heads, hd});
  auto head_view = [&](int64_t i) { return qkv.select(2, i).transpose(1, 2); };
  const Tensor y = scaled_dot_product_attention(head_view(0), head_view(1), head_view(2), true);
  return c_proj->forward(y.transpose(1, 2).reshape({B, T, local}));
}

ParallelMLP::ParallelMLP(const GPTConfig& c, parallel::Communicator& tp)
    : c_fc(register_module("c_fc", std::make_shared<parallel::ColumnParallelLinear>(
                                       c.dim, 4 * c.dim, tp, nn::LinearOptions{.dtype = c.dtype}))),
      c_proj(register_module("c_proj",
                             std::make_shared<parallel::RowParallelLinear>(
                                 4 * c.dim, c.dim, tp, nn::LinearOptions{.dtype = c.dtype}))) {}

Tensor ParallelMLP::forward(const Tensor& x) const {
  return c_proj->forward(gelu(c_fc->forward(x), GeluApproximation::tanh));
}

ParallelBlock::ParallelBlock(const GPTConfig& c, parallel::Communicator& tp)
    : ln_1(register_module("ln_1", std::make_shared<nn::LayerNorm>(c.dim, 1e-5, true, c.dtype))),
      attn(register_module("attn", std::make_shared<ParallelAttention>(c, tp))),
      ln_2(register_module("ln_2", std::make_shared<nn::LayerNorm>(c.dim, 1e-5, true, c.dtype))),
      mlp(register_module("mlp", std::make_shared<ParallelMLP>(c, tp))) {}

Tensor ParallelBlock::forward(const Tensor& x) const {
  const Tensor h = x + attn->forward(ln_1->forward(x));
  return h + mlp->forward(ln_2->forward(h));
}

ParallelGPTTransformer::ParallelGPTTransformer(const GPTConfig& c, parallel::Communicator& tp)
    : wte(register_module(
          "wte", std::make_shared<parallel::VocabParallelEmbedding>(c.vocab, c.dim, tp, c.dtype))),
      wpe(register_module("wpe", std::make_shared<nn::Embedding>(c.context, c.dim, c.dtype))),
      h(register_module("h", std::make_shared<nn::ModuleList<ParallelBlock>>())),
      ln_f(register_module("ln_f", std::make_shared<nn::LayerNorm>(c.dim, 1e-5, true, c.dtype))) {
  for (int64_t i = 0; i < c.layers; ++i) h->push_back(std::make_shared<ParallelBlock>(c, tp));
}

TensorParallelGPT::TensorParallelGPT(GPTConfig config, parallel::Communicator& tp)
    : config_(std::move(config)), tp_(tp) {
  DLF_CHECK(config_.dropout == 0, "TensorParallelGPT: dropout is not supported yet");
  transformer =
      register_module("transformer", std::make_shared<ParallelGPTTransformer>(config_, tp));
}

Tensor TensorParallelGPT::loss(const Tensor& idx, const Tensor& targets) const {
  DLF_CHECK(idx.dim() == 2 && idx.size(1) <= config_.context, "GPT '", config_.name,
            "': expected token ids [B, T <= ", config_.context, "], got ", shape_str(idx.shape()));
  const int64_t B = idx.size(0), T = idx.size(1);
  const Tensor pos = arange(double(T), {.dtype = DType::i64, .device = idx.device()});
  const ParallelGPTTransformer& t = *transformer;
  Tensor x = t.wte->forward(idx) + t.wpe->forward(pos);
  for (const auto& block : *t.h) x = block->forward(x);
  x = t.ln_f->forward(x);
  // The tied head: this rank's vocabulary rows give its share of the logits.
  const Tensor logits = linear(parallel::copy_to_tp_region(x, tp_), t.wte->weight);
  return parallel::vocab_parallel_cross_entropy(logits.reshape({B * T, logits.size(2)}),
                                                targets.reshape({B * T}), tp_);
}

void TensorParallelGPT::load_shard(const nn::NamedTensors& whole) {
  std::map<std::string, Tensor> given(whole.begin(), whole.end());
  const int64_t n = tp_.size(), r = tp_.rank();
  auto rows = [&](const Tensor& t, int64_t dim) {  // this rank's n-th of dim
    const int64_t k = t.size(dim) / n;
    return t.narrow(dim, r * k, k);
  };
  autograd::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters()) {
    auto it = given.find(name);
    DLF_CHECK(it != given.end(), "TensorParallelGPT::load_shard: no '", name, "' in the state");
    const Tensor& w = it->second;
    Tensor shard = w;
    if (name.ends_with("wte.weight")) {
      shard = rows(w, 0);
    } else if (name.ends_with("attn.c_attn.weight") || name.ends_with("attn.c_attn.bias")) {
      const int64_t C = w.size(0) / 3;  // q, k and v: this rank's heads of each
      std::vector<Tensor> parts;
      for (int64_t i = 0; i < 3; ++i) parts.push_back(rows(w.narrow(0, i * C, C), 0));
      shard = cat(parts, 0);
    } else if (name.ends_with("mlp.c_fc.weight") || name.ends_with("mlp.c_fc.bias")) {
      shard = rows(w, 0);
    } else if (name.ends_with("c_proj.weight")) {
      shard = rows(w, 1);
    }
    DLF_CHECK(shard.shape() == p.shape(), "TensorParallelGPT::load_shard: '", name, "' of shape ",
              shape_str(w.shape()), " gives a shard ", shape_str(shard.shape()), ", expected ",
              shape_str(p.shape()));
    p.copy_(shard.to(p.device()));
  }
}

nn::NamedTensors TensorParallelGPT::whole_state_dict() const {
  autograd::NoGradGuard no_grad;
  const int64_t n = tp_.size();
  nn::NamedTensors whole;
  for (const auto& [name, p] : named_parameters()) {
    Tensor w;
    if (name.ends_with("wte.weight") || name.ends_with("mlp.c_fc.weight") ||
        name.ends_with("mlp.c_fc.bias")) {
      w = tp_.allgather(p.contiguous());
    } else if (name.ends_with("attn.c_attn.weight") || name.ends_with("attn.c_attn.bias")) {
      // Rank blocks [q_r; k_r; v_r] back into [q; k; v].
      const Tensor all = tp_.allgather(p.contiguous());
      Shape blocks = {n, 3, p.size(0) / 3};
      for (int64_t d = 1; d < p.dim(); ++d) blocks.push_back(p.size(d));
      Shape order = {1, 0};
      for (int64_t d = 2; d < int64_t(blocks.size()); ++d) order.push_back(d);
      Shape shape = p.shape();
      shape[0] *= n;
      w = all.view(blocks).permute(order).contiguous().reshape(shape);
    } else if (name.ends_with("c_proj.weight")) {
      w = tp_.allgather(p.transpose(0, 1).contiguous()).transpose(0, 1).contiguous();
    } else {
      w = p.clone();
    }
    whole.emplace_back(name, w);
    if (name == "transformer.wte.weight") whole.emplace_back("lm_head.weight", w);
  }
  return whole;
}

}  // namespace dlf::models
