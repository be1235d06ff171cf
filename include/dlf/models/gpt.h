// GPT-2 as nanoGPT builds it: token and position embeddings, pre-LayerNorm blocks with causal
// attention and a GELU (tanh) MLP, a final LayerNorm and a head tied to the token embedding.
// Parameter names and shapes are nanoGPT's (transformer.wte.weight, transformer.h.0.ln_1.weight,
// ..., lm_head.weight), so its checkpoints map one to one.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/models/causal_lm.h>
#include <dlf/models/generate.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/kv_cache.h>
#include <dlf/nn/transformer.h>

namespace dlf::models {

/// A GPT's sizes.
struct GPTConfig {
  std::string name;          ///< the registry's name ("gpt-small")
  int64_t vocab = 256;       ///< token ids 0..vocab-1
  int64_t context = 64;      ///< the longest sequence (wpe's rows)
  int64_t layers = 2;        ///< transformer blocks
  int64_t heads = 4;         ///< attention heads (dim must split into them)
  int64_t dim = 64;          ///< width (n_embd)
  double dropout = 0;        ///< dropout probability after embeddings, attention and MLP
  DType dtype = DType::f32;  ///< of the parameters
  /// The blocks of each virtual pipeline stage in order, summing to `layers`; empty: balanced
  /// by FLOPs (gpt_stage_blocks).
  std::vector<int64_t> pipeline_split = {};
};

/// A block of this config: pre-LayerNorm, GELU (tanh), causal, MLP 4·dim.
nn::TransformerOptions gpt_block_options(const GPTConfig& config);

/// The trunk, named `transformer` in the model: wte, wpe, h.{i}, ln_f.
class GPTTransformer : public nn::Module {
 public:
  /// Embeddings, blocks and the final LayerNorm of `config`.
  explicit GPTTransformer(const GPTConfig& config);

  /// token [vocab, dim] and position [context, dim] embeddings
  ///@{
  std::shared_ptr<nn::Embedding> wte, wpe;
  ///@}
  std::shared_ptr<nn::Dropout> drop;                        ///< after the embeddings
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> h;  ///< the blocks, transformer.h.{i}
  std::shared_ptr<nn::LayerNorm> ln_f;                      ///< the final LayerNorm
};

/// GPT-2 with its language-model head (nanoGPT's model).
class GPT : public CausalLM {
 public:
  /// Initialised as nanoGPT does (weights N(0, 0.02), residual projections
  /// N(0, 0.02/sqrt(2·layers)), biases 0), drawing from `gen` (the default generator if null).
  explicit GPT(GPTConfig config, Generator* gen = nullptr);

  /// Token ids [B, T] (T <= context) -> logits [B, T, vocab].
  Tensor forward(const Tensor& idx) const;
  /// The logits [B, T, vocab] of idx [B, T] following the positions `cache` holds (row b's
  /// tokens at positions cache.lengths()[b]...); stores their keys and values and moves the
  /// cache on by T.
  Tensor forward(const Tensor& idx, nn::KVCache& cache) const;
  /// An empty key/value cache of `batch` rows of up to `capacity` positions (0: the context),
  /// in the parameters' dtype and device, for this model's layers and (tensor-parallel share
  /// of) heads.
  nn::KVCache make_cache(int64_t batch, int64_t capacity = 0) const override;
  /// Everything before the head: ln_f's output [B, T, dim]; through `cache` when not null, as
  /// forward(idx, cache) (which stores the keys and values and moves the cache on by T).
  Tensor hidden(const Tensor& idx, nn::KVCache* cache = nullptr) const override;
  /// The head, tied to the token embedding: hidden states [..., dim] -> logits [..., vocab].
  Tensor head(const Tensor& hidden) const override;
  const std::string& model_name() const override { return config_.name; }  ///< config().name
  int64_t vocab() const override { return config_.vocab; }                 ///< config().vocab
  int64_t context() const override { return config_.context; }             ///< config().context
  /// What forward(idx, targets) gives.
  struct Output {
    /// [B, T, vocab] and the mean cross-entropy
    ///@{
    Tensor logits, loss;
    ///@}
  };
  /// nanoGPT's forward(idx, targets): the logits [B, T, vocab] and their mean next-token
  /// cross-entropy against targets [B, T], from one pass.
  Output forward(const Tensor& idx, const Tensor& targets) const;
  /// forward(idx, targets).loss.
  Tensor loss(const Tensor& idx, const Tensor& targets) const;
  /// Appends `tokens` sampled ids to each row of idx [B, T0] (models::generate() with its
  /// key/value cache). temperature 0 takes the most likely token; top_k > 0 keeps the k
  /// likeliest.
  Tensor generate(const Tensor& idx, int64_t tokens, double temperature = 1, int64_t top_k = 0,
                  Generator* gen = nullptr);
  /// FLOPs of one training step (forward + backward) per token, PaLM's 6N + 12·L·T·C count.
  double train_flops_per_token(int64_t seq) const;

  /// The sizes it was built with.
  const GPTConfig& config() const { return config_; }
  std::shared_ptr<GPTTransformer> transformer;  ///< the trunk (transformer.*)

 private:
  GPTConfig config_;
};

}  // namespace dlf::models
