// The transformer's parts, with nanoGPT's names: MLP (c_fc, c_proj), SelfAttention
// (c_attn, c_proj) and the pre-LayerNorm TransformerBlock (ln_1, attn, ln_2, mlp); or with
// timm's (fc1, fc2; qkv, proj; norm1, attn, norm2, mlp), as its Vision Transformer names them.
#pragma once
#include <memory>

#include <dlf/nn/activation.h>
#include <dlf/nn/kv_cache.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/normalization.h>

namespace dlf::nn {

/// Whose names the parts register under (the C++ members keep nanoGPT's).
enum class TransformerNames { nanogpt, timm };

/// A transformer block's sizes and choices.
struct TransformerOptions {
  int64_t dim = 64;                               ///< width
  int64_t heads = 4;                              ///< attention heads
  int64_t mlp_hidden = 0;                         ///< 0 means 4·dim
  bool causal = true;                             ///< causal (GPT) or bidirectional (ViT) attention
  Activation activation = Activation::gelu_tanh;  ///< the MLP's
  double ln_eps = 1e-5;                           ///< LayerNorm's epsilon
  double dropout = 0;        ///< on the attention and MLP outputs (residual dropout)
  DType dtype = DType::f32;  ///< of the parameters
  TransformerNames names = TransformerNames::nanogpt;  ///< nanoGPT's or timm's parameter names
  /// Makes the Linear layers; empty: whole ones. A tensor-parallel block passes
  /// parallel::megatron_linears(group): its ranks then hold heads / group size heads each.
  LinearMaker linears = {};
};

/// c_proj(act(c_fc(x))), the activation fused into c_fc's matmul.
class MLP : public Module, public Callable<MLP> {
 public:
  explicit MLP(const TransformerOptions& options);  ///< dim -> 4 dim -> dim
  Tensor forward(const Tensor& x) const;            ///< x [..., dim] -> [..., dim]

  /// dim -> 4 dim and back
  ///@{
  std::shared_ptr<Linear> c_fc, c_proj;
  ///@}
  std::shared_ptr<Dropout> dropout;  ///< after c_proj
  Activation activation;             ///< between the two
};

/// Multi-head self-attention over x [B, T, C]: c_attn gives q | k | v ([3C, C] weight), the
/// heads attend (fused kernel, causal by option) and c_proj mixes them. Tensor-parallel, c_attn
/// is column-parallel (this rank's heads of q, of k and of v) and c_proj row-parallel.
class SelfAttention : public Module, public Callable<SelfAttention> {
 public:
  /// Multi-head self-attention of `options`.
  explicit SelfAttention(const TransformerOptions& options);
  Tensor forward(const Tensor& x) const;  ///< x [B, T, dim] -> [B, T, dim]
  /// forward(x) of x [B, T, dim] following the positions `cache` holds: attends through
  /// cache.attend(layer, ...), which stores x's keys and values (causal attention only).
  Tensor forward(const Tensor& x, KVCache& cache, int64_t layer) const;

  /// dim -> 3 dim (q, k, v) and dim -> dim
  ///@{
  std::shared_ptr<Linear> c_attn, c_proj;
  ///@}
  std::shared_ptr<Dropout> dropout;  ///< after c_proj
  int64_t head_dim;                  ///< dim / heads
  int64_t heads;  ///< the heads this module holds: all, or its tensor-parallel share
  bool causal;    ///< whether a position sees only the ones before it

 private:
  Tensor attention(const Tensor& x, KVCache* cache, int64_t layer) const;
};

/// x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class TransformerBlock : public Module, public Callable<TransformerBlock> {
 public:
  /// Pre-LayerNorm attention and MLP with residuals.
  explicit TransformerBlock(const TransformerOptions& options);
  Tensor forward(const Tensor& x) const;  ///< x [B, T, dim] -> [B, T, dim]
  /// forward(x) with the attention's keys and values cached as layer `layer` of `cache`.
  Tensor forward(const Tensor& x, KVCache& cache, int64_t layer) const;
  bool is_block() const override { return true; }

  std::shared_ptr<LayerNorm> ln_1;      ///< before attention
  std::shared_ptr<SelfAttention> attn;  ///< self-attention
  std::shared_ptr<LayerNorm> ln_2;      ///< before the MLP
  std::shared_ptr<MLP> mlp;             ///< the MLP

 private:
  Tensor block(const Tensor& x, KVCache* cache, int64_t layer) const;
};

}  // namespace dlf::nn
