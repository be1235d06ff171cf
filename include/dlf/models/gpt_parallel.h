// GPT under model parallelism, Megatron-LM style: one pipeline stage (a contiguous run of
// blocks) whose layers are sharded over a tensor-parallel group.
//
// - Pipeline: the blocks are cut into stages balanced by FLOPs (gpt_stage_blocks); the first
//   stage also embeds, the last also runs ln_f, the head and the loss. The head is tied to wte:
//   with one stage it is wte itself; otherwise the last stage keeps its own copy under the name
//   lm_head.weight and tie_gradients() sums the two copies' gradients, as Megatron-LM does.
// - Tensor parallelism: attention heads and MLP columns split n ways (c_attn's q, k and v rows
//   taken per head), a vocabulary-parallel wte and head — so the logits stay split and the
//   cross-entropy is vocabulary-parallel — and whole copies of wpe and the LayerNorms. A
//   vocabulary that n does not divide is padded with rows that are masked out of the loss, so
//   the model is exactly the unpadded one.
//
// Parameter names are nanoGPT's, each block under its place in the whole model
// (transformer.h.{i}), so a whole GPT's state_dict shards in by name and the shards gather
// back into one.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include <dlf/models/gpt.h>
#include <dlf/nn/normalization.h>
#include <dlf/nn/transformer.h>
#include <dlf/parallel/sharded_parameters.h>
#include <dlf/parallel/tensor_parallel.h>

namespace dlf::models {

/// The blocks [first, end) of each of `stages` pipeline stages: contiguous, every stage
/// non-empty, the costliest stage as cheap as possible (parallel::partition_by_cost) by forward
/// FLOPs per token at the full context — a block 24·C² + 4·T·C, the head 2·C·V on the last
/// stage (GPT-2 small's head is worth 4.5 blocks, so its last stage takes fewer blocks). The
/// last stage may hold the head alone. A config's pipeline_split, when given, is the cut
/// instead. dlf::Error for more stages than blocks + 1, or a split of another number of stages
/// or blocks.
std::vector<std::pair<int64_t, int64_t>> gpt_stage_blocks(const GPTConfig& config, int stages);

/// One pipeline stage of a GPT, sharded over a tensor-parallel group (see above).
class ParallelGPT : public nn::Module {
 public:
  /// Stage `stage` of `stages`, sharded over `tp`; with `chunks` > 1 (the interleaved
  /// schedule) the virtual stages chunk·stages + stage of stages·chunks. dlf::Error when tp
  /// does not divide the heads, or the (virtual) stages do not fit the layers. Initialise it
  /// with load_shard().
  ParallelGPT(GPTConfig config, parallel::Communicator& tp, int stage = 0, int stages = 1,
              int chunks = 1);

  /// Runs chunk `chunk` of this stage. The first virtual stage embeds idx [B, T] (x
  /// undefined); the others continue x [B, T, C]. The last returns the mean cross-entropy
  /// against targets [B, T] (the same on every tp rank), the others their activations.
  Tensor forward(const Tensor& x, const Tensor& idx, const Tensor& targets, int chunk = 0) const;
  /// forward() of the only stage.
  Tensor loss(const Tensor& idx, const Tensor& targets) const;

  /// Whether parameter `name` is split over the tp group (not replicated on every tp rank).
  bool sharded(const std::string& name) const;
  /// This rank's shard of `whole`, a tensor of parameter `name`'s whole shape — the parameter
  /// itself or optimizer state of the same shape.
  Tensor shard(const std::string& name, const Tensor& whole) const;
  /// The whole tensor from the tp group's shards of parameter `name` (collective over tp).
  Tensor gather(const std::string& name, const Tensor& shard) const;
  /// Copies this rank's share of a whole GPT's parameters (GPT::state_dict() names).
  void load_shard(const nn::NamedTensors& whole);
  /// This stage's parameters, whole (collective over tp), with GPT::state_dict()'s names —
  /// lm_head.weight included when there is one stage.
  nn::NamedTensors whole_state_dict() const;
  /// The weight tied across stages: wte's on the first, its copy lm_head on the last;
  /// undefined between them and with one stage (where the head is wte's weight itself).
  Tensor tied_weight() const;
  /// Sums the tied weight's gradient on the first and last stage over `pp` (collective for
  /// every stage; a no-op with one stage): whole, or this rank's part of it when `sharded`
  /// shards the gradients (ZeRO-2 and -3; see parallel::sum_tied_gradient). The first call
  /// makes the two ends' group.
  void tie_gradients(parallel::Communicator& pp, const parallel::ShardedParameters* sharded);

  /// The whole model's sizes.
  const GPTConfig& config() const { return config_; }
  /// The dtype of the activations between blocks, and so between pipeline stages: autocast's
  /// when it is on (the embeddings run in it), else the model's.
  DType residual_dtype() const;
  /// whether this stage embeds (the first, in its chunk 0) and runs the head and loss (the
  /// last, in its last chunk)
  ///@{
  bool first, last;
  ///@}
  /// per chunk, its blocks transformer.h.{first..end-1}
  std::vector<std::pair<int64_t, int64_t>> chunk_blocks;
  std::shared_ptr<parallel::VocabParallelEmbedding> wte;      ///< first stage
  std::shared_ptr<nn::Embedding> wpe;                         ///< first stage
  std::vector<std::shared_ptr<nn::TransformerBlock>> blocks;  ///< every chunk's, tp-split
  std::shared_ptr<nn::LayerNorm> ln_f;                        ///< last stage
  Tensor head;  ///< last stage: wte's weight, or lm_head.weight

 private:
  GPTConfig config_;
  parallel::Communicator& tp_;
  std::unique_ptr<parallel::Communicator> ends_;  // the first and last stage
};

}  // namespace dlf::models
