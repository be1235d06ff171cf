// GPT under Megatron-LM's tensor parallelism: each rank of a tp group holds its share of every
// block (attention heads and MLP columns split n ways, c_attn's q, k and v rows taken per
// head), a vocabulary-parallel wte — also the tied head, so the logits stay split and the
// cross-entropy is vocabulary-parallel — and whole copies of wpe and the LayerNorms. Parameter
// names are nanoGPT's, so a whole GPT's state_dict shards into it by name.
#pragma once
#include <memory>

#include <dlf/models/gpt.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/normalization.h>
#include <dlf/parallel/tensor_parallel.h>

namespace dlf::models {

class ParallelAttention : public nn::Module {
 public:
  ParallelAttention(const GPTConfig& c, parallel::Communicator& tp);
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<parallel::ColumnParallelLinear> c_attn;
  std::shared_ptr<parallel::RowParallelLinear> c_proj;
  int64_t heads;  ///< this rank's
};

class ParallelMLP : public nn::Module {
 public:
  ParallelMLP(const GPTConfig& c, parallel::Communicator& tp);
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<parallel::ColumnParallelLinear> c_fc;
  std::shared_ptr<parallel::RowParallelLinear> c_proj;
};

class ParallelBlock : public nn::Module {
 public:
  ParallelBlock(const GPTConfig& c, parallel::Communicator& tp);
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<nn::LayerNorm> ln_1;
  std::shared_ptr<ParallelAttention> attn;
  std::shared_ptr<nn::LayerNorm> ln_2;
  std::shared_ptr<ParallelMLP> mlp;
};

/// The trunk, named `transformer`: wte (vocabulary-parallel), wpe, h.{i}, ln_f.
class ParallelGPTTransformer : public nn::Module {
 public:
  ParallelGPTTransformer(const GPTConfig& c, parallel::Communicator& tp);

  std::shared_ptr<parallel::VocabParallelEmbedding> wte;
  std::shared_ptr<nn::Embedding> wpe;
  std::shared_ptr<nn::ModuleList<ParallelBlock>> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
};

class TensorParallelGPT : public nn::Module {
 public:
  /// Throws dlf::Error when the tp group's size does not divide the heads or the vocabulary.
  TensorParallelGPT(GPTConfig config, parallel::Communicator& tp);
  /// Mean next-token cross-entropy over idx [B, T] and targets [B, T], the same on every rank.
  Tensor loss(const Tensor& idx, const Tensor& targets) const;
  /// Copies this rank's share of a whole GPT's parameters (GPT::state_dict() names).
  void load_shard(const nn::NamedTensors& whole);
  /// The whole GPT's parameters, gathered from the group's shards (collective), named as
  /// GPT::state_dict() names them — lm_head.weight included — for checkpoints and sampling.
  nn::NamedTensors whole_state_dict() const;

  const GPTConfig& config() const { return config_; }
  std::shared_ptr<ParallelGPTTransformer> transformer;

 private:
  GPTConfig config_;
  parallel::Communicator& tp_;
};

}  // namespace dlf::models
