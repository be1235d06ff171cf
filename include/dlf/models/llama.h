// Llama as Hugging Face's LlamaForCausalLM builds it: token embeddings, pre-RMSNorm decoder
// layers with rotary (rotate-half) causal grouped-query attention and a SwiGLU MLP, a final
// RMSNorm and an untied head, no biases. Parameter names and shapes are Hugging Face's
// (model.embed_tokens.weight, model.layers.0.self_attn.q_proj.weight, ..., lm_head.weight).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <dlf/core/ops/nn_ops.h>
#include <dlf/core/random.h>
#include <dlf/models/causal_lm.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/normalization.h>
#include <dlf/parallel/tp_sharding.h>

namespace dlf::models {

/// A Llama's sizes.
struct LlamaConfig {
  std::string name;               ///< the registry's name ("llama-mini")
  int64_t vocab = 256;            ///< token ids 0..vocab-1
  int64_t context = 64;           ///< the longest sequence
  int64_t layers = 2;             ///< decoder layers
  int64_t heads = 4;              ///< query heads (dim must split into them)
  int64_t kv_heads = 2;           ///< key/value heads (heads must split into them): GQA, 1: MQA
  int64_t dim = 64;               ///< width (hidden_size)
  int64_t ffn = 192;              ///< the SwiGLU MLP's hidden units (intermediate_size)
  double theta = 10000;           ///< rotary base (rope_theta)
  RopeScaling rope_scaling = {};  ///< Llama 3.1's (factor 0: none)
  double norm_eps = 1e-5;         ///< RMSNorm's (rms_norm_eps)
  /// Rotary on Meta's interleaved pairs rather than Hugging Face's rotate-half (llama_names.h)
  bool rotary_interleaved = false;
  DType dtype = DType::f32;  ///< of the parameters
  /// Makes the Linear layers; empty: whole ones. parallel::megatron_linears(group) splits the
  /// heads, the kv heads and the MLP's units over a tensor-parallel group.
  nn::LinearMaker linears = {};
};

/// The zoo's Llamas, smallest first: llama-nano, -mini and -small (trainable here, about
/// gpt-nano's, -mini's and -small's parameter counts) and, for planning, Llama 2 7B, 13B and
/// 70B and Llama 3 8B, 70B and (3.1) 405B with their published dimensions.
const std::vector<LlamaConfig>& llama_configs();
/// The config named `name`; a dlf::Error lists the known names otherwise.
LlamaConfig llama_config(const std::string& name);
/// How tensor parallelism splits Llama's parameter `name` (Megatron-LM's): q, k, v, gate and up
/// by rows (heads and units), o and down by columns; norms and embeddings whole.
parallel::Split llama_tensor_parallel_split(const std::string& name);

/// Causal self-attention with rotary embeddings and kv_heads key/value heads.
class LlamaAttention : public nn::Module {
 public:
  explicit LlamaAttention(const LlamaConfig& config);  ///< its projections, initialised
  Tensor forward(const Tensor& x) const;               ///< x [B, T, dim] -> [B, T, dim]
  /// forward(x) after the positions `cache` holds (row b's tokens at cache.lengths()[b]...),
  /// whose layer `layer` stores their keys and values.
  Tensor forward(const Tensor& x, nn::KVCache& cache, int64_t layer) const;

  /// the projections, q/k/v/o_proj (no biases)
  ///@{
  std::shared_ptr<nn::Linear> q_proj, k_proj, v_proj, o_proj;
  ///@}
  int64_t head_dim;      ///< dim / heads
  RotaryOptions rotary;  ///< the config's theta and scaling
};

/// down_proj(swiglu(gate_proj(x), up_proj(x))).
class LlamaMLP : public nn::Module {
 public:
  explicit LlamaMLP(const LlamaConfig& config);  ///< its projections, initialised
  Tensor forward(const Tensor& x) const;         ///< x [B, T, dim] -> [B, T, dim]

  /// the projections (no biases)
  ///@{
  std::shared_ptr<nn::Linear> gate_proj, up_proj, down_proj;
  ///@}
};

/// x + attn(norm(x)), then + mlp(norm(·)): a block (activation recompute and ZeRO-3 act on it).
class LlamaDecoderLayer : public nn::Module {
 public:
  explicit LlamaDecoderLayer(const LlamaConfig& config);  ///< its norms, attention and MLP
  Tensor forward(const Tensor& x) const;                  ///< x [B, T, dim] -> [B, T, dim]
  /// forward(x) through layer `layer` of `cache` (LlamaAttention's).
  Tensor forward(const Tensor& x, nn::KVCache& cache, int64_t layer) const;
  bool is_block() const override { return true; }

  /// the pre-norms of the attention and of the MLP
  ///@{
  std::shared_ptr<nn::RMSNorm> input_layernorm, post_attention_layernorm;
  ///@}
  std::shared_ptr<LlamaAttention> self_attn;  ///< attention
  std::shared_ptr<LlamaMLP> mlp;              ///< SwiGLU MLP
};

/// The trunk, named `model`: embed_tokens, layers.{i}, norm.
class LlamaModel : public nn::Module {
 public:
  explicit LlamaModel(const LlamaConfig& config);  ///< its embedding, layers and norm

  std::shared_ptr<nn::Embedding> embed_tokens;                ///< [vocab, dim]
  std::shared_ptr<nn::ModuleList<LlamaDecoderLayer>> layers;  ///< model.layers.{i}
  std::shared_ptr<nn::RMSNorm> norm;                          ///< the final RMSNorm
};

/// Llama with its (untied) language-model head.
class Llama : public CausalLM {
 public:
  /// Initialised as Hugging Face does (every matrix and the embedding N(0, 0.02), norms 1),
  /// drawing from `gen` (the default generator if null).
  explicit Llama(LlamaConfig config, Generator* gen = nullptr);

  Tensor forward(const Tensor& idx) const;  ///< token ids [B, T] -> logits [B, T, vocab]
  /// The logits [B, T, vocab] of idx [B, T] following the positions `cache` holds; stores their
  /// keys and values and moves the cache on by T.
  Tensor forward(const Tensor& idx, nn::KVCache& cache) const;
  /// The final RMSNorm's output [B, T, dim]; through `cache` when not null.
  Tensor hidden(const Tensor& idx, nn::KVCache* cache = nullptr) const override;
  Tensor head(const Tensor& hidden) const override;  ///< lm_head: [..., dim] -> [..., vocab]
  /// An empty cache of `batch` rows, `capacity` positions (0: the context): kv_heads (this
  /// tensor-parallel rank's), not the query heads.
  nn::KVCache make_cache(int64_t batch, int64_t capacity = 0) const override;
  const std::string& model_name() const override { return config_.name; }  ///< config().name
  int64_t vocab() const override { return config_.vocab; }                 ///< config().vocab
  int64_t context() const override { return config_.context; }             ///< config().context
  /// The mean next-token cross-entropy of forward(idx) against targets [B, T].
  Tensor loss(const Tensor& idx, const Tensor& targets) const;
  /// FLOPs of one training step (forward + backward) per token: 6N + 12·L·T·C.
  double train_flops_per_token(int64_t seq) const;

  const LlamaConfig& config() const { return config_; }  ///< the sizes it was built with
  std::shared_ptr<LlamaModel> model;                     ///< the trunk (model.*)
  std::shared_ptr<nn::Linear> lm_head;                   ///< [vocab, dim], no bias

 private:
  LlamaConfig config_;
};

}  // namespace dlf::models
