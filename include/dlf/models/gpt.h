// GPT-2 as nanoGPT builds it: token and position embeddings, pre-LayerNorm blocks with causal
// attention and a GELU (tanh) MLP, a final LayerNorm and a head tied to the token embedding.
// Parameter names and shapes are nanoGPT's (transformer.wte.weight, transformer.h.0.ln_1.weight,
// ..., lm_head.weight), so its checkpoints map one to one.
#pragma once
#include <memory>
#include <string>

#include <dlf/core/random.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/transformer.h>

namespace dlf::models {

struct GPTConfig {
  std::string name;
  int64_t vocab = 256;
  int64_t context = 64;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t dim = 64;
  double dropout = 0;
  DType dtype = DType::f32;
};

/// A block of this config: pre-LayerNorm, GELU (tanh), causal, MLP 4·dim.
nn::TransformerOptions gpt_block_options(const GPTConfig& config);

/// The trunk, named `transformer` in the model: wte, wpe, h.{i}, ln_f.
class GPTTransformer : public nn::Module {
 public:
  explicit GPTTransformer(const GPTConfig& config);

  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::Dropout> drop;
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
};

class GPT : public nn::Module {
 public:
  /// Initialised as nanoGPT does (weights N(0, 0.02), residual projections
  /// N(0, 0.02/sqrt(2·layers)), biases 0), drawing from `gen` (the default generator if null).
  explicit GPT(GPTConfig config, Generator* gen = nullptr);

  /// Token ids [B, T] (T <= context) -> logits [B, T, vocab].
  Tensor forward(const Tensor& idx) const;
  /// nanoGPT's forward(idx, targets): the logits [B, T, vocab] and their mean next-token
  /// cross-entropy against targets [B, T], from one pass.
  struct Output {
    Tensor logits, loss;
  };
  Output forward(const Tensor& idx, const Tensor& targets) const;
  /// forward(idx, targets).loss.
  Tensor loss(const Tensor& idx, const Tensor& targets) const;
  /// Appends `tokens` sampled ids to idx [B, T0] (cropped to the context as it grows), without
  /// autograd. temperature 0 takes the most likely token; top_k > 0 keeps the k likeliest.
  Tensor generate(const Tensor& idx, int64_t tokens, double temperature = 1, int64_t top_k = 0,
                  Generator* gen = nullptr);
  /// FLOPs of one training step (forward + backward) per token, PaLM's 6N + 12·L·T·C count.
  double train_flops_per_token(int64_t seq) const;

  const GPTConfig& config() const { return config_; }
  std::shared_ptr<GPTTransformer> transformer;

 private:
  /// Everything before the head: ln_f's output [B, T, dim].
  Tensor trunk(const Tensor& idx) const;
  GPTConfig config_;
};

}  // namespace dlf::models
