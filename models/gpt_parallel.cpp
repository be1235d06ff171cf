#include <dlf/autograd/grad_mode.h>
#include <dlf/core/autocast.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/gpt_parallel.h>
#include <dlf/parallel/pipeline.h>
#include <dlf/parallel/tp_sharding.h>

#include <algorithm>
#include <map>
#include <numeric>

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

using parallel::Split;

Split split_of(const std::string& name) {
  if (name.ends_with("wte.weight") || name == "lm_head.weight") return Split::vocab_rows;
  if (name.ends_with("attn.c_attn.weight") || name.ends_with("attn.c_attn.bias"))
    return Split::qkv_rows;
  if (name.ends_with("mlp.c_fc.weight") || name.ends_with("mlp.c_fc.bias")) return Split::rows;
  if (name.ends_with("c_proj.weight")) return Split::columns;
  return Split::none;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> gpt_stage_blocks(const GPTConfig& c, int stages) {
  DLF_CHECK(stages >= 1 && stages <= c.layers + 1, "GPT '", c.name, "': ", c.layers,
            " blocks and the head make at most ", c.layers + 1, " pipeline stages, not ", stages);
  std::vector<std::pair<int64_t, int64_t>> blocks;
  if (!c.pipeline_split.empty()) {
    DLF_CHECK(int(c.pipeline_split.size()) == stages &&
                  std::accumulate(c.pipeline_split.begin(), c.pipeline_split.end(), int64_t(0)) ==
                      c.layers,
              "GPT '", c.name, "': a pipeline split of ", c.pipeline_split.size(),
              " stages does not cut ", c.layers, " blocks into ", stages, " stages");
    for (int64_t begin = 0; int64_t n : c.pipeline_split) {
      DLF_CHECK(n >= 0, "GPT '", c.name, "': a pipeline stage of ", n, " blocks");
      blocks.emplace_back(begin, begin + n);
      begin += n;
    }
    return blocks;
  }
  const double C = double(c.dim), T = double(c.context);
  std::vector<double> costs(c.layers, 24 * C * C + 4 * T * C);
  costs.push_back(2 * C * double(c.vocab));  // the head, always on the last stage
  const std::vector<int> cuts = parallel::partition_by_cost(costs, stages);
  for (int s = 0; s < stages; ++s)
    blocks.emplace_back(cuts[s], std::min<int64_t>(cuts[s + 1], c.layers));
  return blocks;
}

ParallelGPT::ParallelGPT(GPTConfig config, parallel::Communicator& tp, int stage, int stages,
                         int chunks)
    : first(stage == 0), last(stage == stages - 1), config_(std::move(config)), tp_(tp) {
  const GPTConfig& c = config_;
  DLF_CHECK(c.dropout == 0, "ParallelGPT: dropout is not supported yet");
  DLF_CHECK(stage >= 0 && stage < stages, "ParallelGPT: stage ", stage, " is not in 0..",
            stages - 1);
  DLF_CHECK(c.heads % tp.size() == 0, "GPT '", c.name, "': ", c.heads, " heads do not split over ",
            tp.size(), " tensor-parallel ranks");
  nn::TransformerOptions block = gpt_block_options(c);
  block.linears = parallel::megatron_linears(tp);
  DLF_CHECK(chunks >= 1, "ParallelGPT: chunks must be positive, got ", chunks);
  const auto virtual_stages = gpt_stage_blocks(c, stages * chunks);
  for (int v = 0; v < chunks; ++v)
    chunk_blocks.push_back(virtual_stages[size_t(v * stages + stage)]);
  auto trunk = register_module("transformer", std::make_shared<Scope>());
  if (first) {
    wte = trunk->add(
        "wte", std::make_shared<parallel::VocabParallelEmbedding>(c.vocab, c.dim, tp, c.dtype));
    wpe = trunk->add("wpe", std::make_shared<nn::Embedding>(c.context, c.dim, c.dtype));
  }
  auto h = trunk->add("h", std::make_shared<Scope>());
  for (const auto& [begin, end] : chunk_blocks)
    for (int64_t i = begin; i < end; ++i)
      blocks.push_back(h->add(std::to_string(i), std::make_shared<nn::TransformerBlock>(block)));
  if (last) {
    ln_f = trunk->add("ln_f", std::make_shared<nn::LayerNorm>(c.dim, 1e-5, true, c.dtype));
    head = first ? wte->weight
                 : register_module("lm_head", std::make_shared<Scope>())
                       ->add_parameter(
                           "weight", zeros({parallel::vocab_shard_rows(c.vocab, tp.size()), c.dim},
                                           {.dtype = c.dtype}));
  }
}

Tensor ParallelGPT::forward(const Tensor& x, const Tensor& idx, const Tensor& targets,
                            int chunk) const {
  const int chunks = int(chunk_blocks.size());
  DLF_CHECK(chunk >= 0 && chunk < chunks, "ParallelGPT: chunk ", chunk, " is not in 0..",
            chunks - 1);
  Tensor h = x;
  if (first && chunk == 0) {
    DLF_CHECK(idx.dim() == 2 && idx.size(1) >= 1 && idx.size(1) <= config_.context, "GPT '",
              config_.name, "': expected token ids [B, T <= ", config_.context, "], got ",
              shape_str(idx.shape()));
    const Tensor pos = arange(double(idx.size(1)), {.dtype = DType::i64, .device = idx.device()});
    h = wte->forward(idx) + wpe->forward(pos);
  }
  // This chunk's blocks: after the blocks of the chunks before it.
  int64_t at = 0;
  for (int v = 0; v < chunk; ++v)
    at += chunk_blocks[size_t(v)].second - chunk_blocks[size_t(v)].first;
  for (int64_t i = chunk_blocks[size_t(chunk)].first; i < chunk_blocks[size_t(chunk)].second; ++i)
    h = blocks[size_t(at++)]->forward(h);
  if (!last || chunk != chunks - 1) return h;
  DLF_CHECK(targets.numel() == h.size(0) * h.size(1), "GPT '", config_.name, "': targets ",
            shape_str(targets.shape()), " do not match the tokens [", h.size(0), ", ", h.size(1),
            "]");
  // The tied head: this rank's vocabulary rows give its share of the logits.
  const Tensor logits = linear(parallel::copy_to_tp_region(ln_f->forward(h), tp_), head);
  return parallel::vocab_parallel_cross_entropy(logits.reshape({-1, logits.size(2)}),
                                                targets.reshape({-1}), tp_, config_.vocab);
}

DType ParallelGPT::residual_dtype() const { return autocast_dtype().value_or(config_.dtype); }

Tensor ParallelGPT::loss(const Tensor& idx, const Tensor& targets) const {
  DLF_CHECK(first && last && chunk_blocks.size() == 1,
            "ParallelGPT::loss: this is one stage of a pipeline; use forward()");
  return forward(Tensor(), idx, targets);
}

bool ParallelGPT::sharded(const std::string& name) const {
  return tp_.size() > 1 && split_of(name) != Split::none;
}

Tensor ParallelGPT::shard(const std::string& name, const Tensor& whole) const {
  return parallel::shard_of(split_of(name), whole, tp_);
}

Tensor ParallelGPT::gather(const std::string& name, const Tensor& shard) const {
  return parallel::gather_of(split_of(name), shard, tp_, config_.vocab);
}

void ParallelGPT::load_shard(const nn::NamedTensors& whole) {
  parallel::load_shards(*this, whole, split_of, tp_);
}

nn::NamedTensors ParallelGPT::whole_state_dict() const {
  nn::NamedTensors whole;
  for (const auto& [name, p] : named_parameters()) whole.emplace_back(name, gather(name, p));
  if (first && last) whole.emplace_back("lm_head.weight", whole.front().second);  // tied to wte
  return whole;
}

Tensor ParallelGPT::tied_weight() const {
  if (first == last) return {};
  return first ? wte->weight : head;
}

void ParallelGPT::tie_gradients(parallel::Communicator& pp,
                                const parallel::ShardedParameters* sharded) {
  if (pp.size() == 1) return;
  const bool ends = first || last;
  if (!ends_) ends_ = pp.subgroup({0, pp.size() - 1}, "embedding");
  if (ends) parallel::sum_tied_gradient(tied_weight(), *ends_, sharded);
}

}  // namespace dlf::models
