#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/gpt_parallel.h>
#include <dlf/parallel/pipeline.h>

#include <algorithm>
#include <map>

namespace dlf::models {
namespace {

// A named level of nanoGPT's tree ("transformer", "h", "lm_head") that holds what a stage has.
struct Scope : nn::Module {
  template <typename M>
  std::shared_ptr<M> add(const std::string& name, std::shared_ptr<M> m) {
    return register_module(name, std::move(m));
  }
  Tensor add_parameter(const std::string& name, Tensor t) {
    return register_parameter(name, std::move(t));
  }
};

// How a parameter of the whole model is split over the tp group.
enum class Split {
  none,        // replicated: wpe, LayerNorms, row-parallel biases
  vocab_rows,  // wte and the head: ⌈V/n⌉ rows each, the last ranks padded
  qkv_rows,    // c_attn: this rank's heads of q, of k and of v
  rows,        // column-parallel: c_fc
  columns,     // row-parallel weights: both c_proj
};

Split split_of(const std::string& name) {
  if (name.ends_with("wte.weight") || name == "lm_head.weight") return Split::vocab_rows;
  if (name.ends_with("attn.c_attn.weight") || name.ends_with("attn.c_attn.bias"))
    return Split::qkv_rows;
  if (name.ends_with("mlp.c_fc.weight") || name.ends_with("mlp.c_fc.bias")) return Split::rows;
  if (name.ends_with("c_proj.weight")) return Split::columns;
  return Split::none;
}

}  // namespace

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

std::vector<std::pair<int64_t, int64_t>> gpt_stage_blocks(const GPTConfig& c, int stages) {
  DLF_CHECK(stages >= 1 && stages <= c.layers + 1, "GPT '", c.name, "': ", c.layers,
            " blocks and the head make at most ", c.layers + 1, " pipeline stages, not ", stages);
  const double C = double(c.dim), T = double(c.context);
  std::vector<double> costs(c.layers, 24 * C * C + 4 * T * C);
  costs.push_back(2 * C * double(c.vocab));  // the head, always on the last stage
  const std::vector<int> cuts = parallel::partition_by_cost(costs, stages);
  std::vector<std::pair<int64_t, int64_t>> blocks;
  for (int s = 0; s < stages; ++s)
    blocks.emplace_back(cuts[s], std::min<int64_t>(cuts[s + 1], c.layers));
  return blocks;
}

ParallelGPT::ParallelGPT(GPTConfig config, parallel::Communicator& tp, int stage, int stages)
    : first(stage == 0), last(stage == stages - 1), config_(std::move(config)), tp_(tp) {
  const GPTConfig& c = config_;
  DLF_CHECK(c.dropout == 0, "ParallelGPT: dropout is not supported yet");
  DLF_CHECK(stage >= 0 && stage < stages, "ParallelGPT: stage ", stage, " is not in 0..",
            stages - 1);
  std::tie(first_block, end_block) = gpt_stage_blocks(c, stages)[stage];
  auto trunk = register_module("transformer", std::make_shared<Scope>());
  if (first) {
    wte = trunk->add(
        "wte", std::make_shared<parallel::VocabParallelEmbedding>(c.vocab, c.dim, tp, c.dtype));
    wpe = trunk->add("wpe", std::make_shared<nn::Embedding>(c.context, c.dim, c.dtype));
  }
  auto h = trunk->add("h", std::make_shared<Scope>());
  for (int64_t i = first_block; i < end_block; ++i)
    blocks.push_back(h->add(std::to_string(i), std::make_shared<ParallelBlock>(c, tp)));
  if (last) {
    ln_f = trunk->add("ln_f", std::make_shared<nn::LayerNorm>(c.dim, 1e-5, true, c.dtype));
    head = first ? wte->weight
                 : register_module("lm_head", std::make_shared<Scope>())
                       ->add_parameter(
                           "weight", zeros({parallel::vocab_shard_rows(c.vocab, tp.size()), c.dim},
                                           {.dtype = c.dtype}));
  }
}

Tensor ParallelGPT::forward(const Tensor& x, const Tensor& idx, const Tensor& targets) const {
  Tensor h = x;
  if (first) {
    DLF_CHECK(idx.dim() == 2 && idx.size(1) >= 1 && idx.size(1) <= config_.context, "GPT '",
              config_.name, "': expected token ids [B, T <= ", config_.context, "], got ",
              shape_str(idx.shape()));
    const Tensor pos = arange(double(idx.size(1)), {.dtype = DType::i64, .device = idx.device()});
    h = wte->forward(idx) + wpe->forward(pos);
  }
  for (const auto& block : blocks) h = block->forward(h);
  if (!last) return h;
  DLF_CHECK(targets.numel() == h.size(0) * h.size(1), "GPT '", config_.name, "': targets ",
            shape_str(targets.shape()), " do not match the tokens [", h.size(0), ", ", h.size(1),
            "]");
  // The tied head: this rank's vocabulary rows give its share of the logits.
  const Tensor logits = linear(parallel::copy_to_tp_region(ln_f->forward(h), tp_), head);
  return parallel::vocab_parallel_cross_entropy(logits.reshape({-1, logits.size(2)}),
                                                targets.reshape({-1}), tp_, config_.vocab);
}

Tensor ParallelGPT::loss(const Tensor& idx, const Tensor& targets) const {
  DLF_CHECK(first && last, "ParallelGPT::loss: this is one stage of a pipeline; use forward()");
  return forward(Tensor(), idx, targets);
}

bool ParallelGPT::sharded(const std::string& name) const {
  return tp_.size() > 1 && split_of(name) != Split::none;
}

Tensor ParallelGPT::shard(const std::string& name, const Tensor& whole) const {
  const int64_t n = tp_.size(), r = tp_.rank();
  auto part = [&](const Tensor& t, int64_t dim) {  // this rank's n-th of dim
    const int64_t k = t.size(dim) / n;
    return t.narrow(dim, r * k, k);
  };
  switch (split_of(name)) {
    case Split::none:
      return whole;
    case Split::rows:
      return part(whole, 0);
    case Split::columns:
      return part(whole, 1);
    case Split::qkv_rows: {
      const int64_t C = whole.size(0) / 3;
      std::vector<Tensor> parts;
      for (int64_t i = 0; i < 3; ++i) parts.push_back(part(whole.narrow(0, i * C, C), 0));
      return cat(parts, 0);
    }
    case Split::vocab_rows: {
      const int64_t V = whole.size(0), k = parallel::vocab_shard_rows(V, int(n));
      const int64_t start = std::min(r * k, V), words = std::min(k, V - start);
      const Tensor mine = whole.narrow(0, start, words);
      if (words == k) return mine;
      Shape padding = whole.shape();
      padding[0] = k - words;
      return cat({mine, zeros(padding, {.dtype = whole.dtype(), .device = whole.device()})}, 0);
    }
  }
  return whole;
}

Tensor ParallelGPT::gather(const std::string& name, const Tensor& shard) const {
  autograd::NoGradGuard no_grad;
  const int64_t n = tp_.size();
  switch (split_of(name)) {
    case Split::none:
      return shard.clone();
    case Split::rows:
      return tp_.allgather(shard.contiguous());
    case Split::columns:
      return tp_.allgather(shard.transpose(0, 1).contiguous()).transpose(0, 1).contiguous();
    case Split::qkv_rows: {
      // Rank blocks [q_r; k_r; v_r] back into [q; k; v].
      const Tensor all = tp_.allgather(shard.contiguous());
      Shape blocks = {n, 3, shard.size(0) / 3};
      for (int64_t d = 1; d < shard.dim(); ++d) blocks.push_back(shard.size(d));
      Shape order = {1, 0};
      for (int64_t d = 2; d < int64_t(blocks.size()); ++d) order.push_back(d);
      Shape shape = shard.shape();
      shape[0] *= n;
      return all.view(blocks).permute(order).contiguous().reshape(shape);
    }
    case Split::vocab_rows:
      return tp_.allgather(shard.contiguous()).narrow(0, 0, config_.vocab).contiguous();
  }
  return shard.clone();
}

void ParallelGPT::load_shard(const nn::NamedTensors& whole) {
  const std::map<std::string, Tensor> given(whole.begin(), whole.end());
  autograd::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters()) {
    auto it = given.find(name);
    DLF_CHECK(it != given.end(), "ParallelGPT::load_shard: no '", name, "' in the state");
    const Tensor s = shard(name, it->second);
    DLF_CHECK(s.shape() == p.shape(), "ParallelGPT::load_shard: '", name, "' of shape ",
              shape_str(it->second.shape()), " gives a shard ", shape_str(s.shape()), ", expected ",
              shape_str(p.shape()));
    p.copy_(s.to(p.device()));
  }
}

nn::NamedTensors ParallelGPT::whole_state_dict() const {
  nn::NamedTensors whole;
  for (const auto& [name, p] : named_parameters()) whole.emplace_back(name, gather(name, p));
  if (first && last) whole.emplace_back("lm_head.weight", whole.front().second);  // tied to wte
  return whole;
}

void ParallelGPT::tie_gradients(parallel::Communicator& pp) {
  if (pp.size() == 1) return;
  const bool ends = first || last;
  if (!ends_) ends_ = pp.split(ends ? 0 : 1 + pp.rank(), pp.rank(), "embedding");
  if (!ends) return;
  const Tensor& copy = first ? wte->weight : head;
  Tensor g = copy.grad().defined() ? copy.grad().contiguous().clone() : zeros_like(copy);
  ends_->allreduce(g);
  copy.set_grad(g);
}

}  // namespace dlf::models
