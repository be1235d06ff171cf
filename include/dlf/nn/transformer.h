// The transformer's parts, with nanoGPT's names: MLP (c_fc, c_proj), SelfAttention
// (c_attn, c_proj) and the pre-LayerNorm TransformerBlock (ln_1, attn, ln_2, mlp); or with
// timm's (fc1, fc2; qkv, proj; norm1, attn, norm2, mlp), as its Vision Transformer names them.
#pragma once
#include <memory>

#include <dlf/nn/activation.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/normalization.h>

namespace dlf::nn {

/// Whose names the parts register under (the C++ members keep nanoGPT's).
enum class TransformerNames { nanogpt, timm };

struct TransformerOptions {
  int64_t dim = 64;
  int64_t heads = 4;
  int64_t mlp_hidden = 0;  ///< 0 means 4·dim
  bool causal = true;
  Activation activation = Activation::gelu_tanh;
  double ln_eps = 1e-5;
  double dropout = 0;  ///< on the attention and MLP outputs (residual dropout)
  DType dtype = DType::f32;
  TransformerNames names = TransformerNames::nanogpt;
  /// Makes the Linear layers; empty: whole ones. A tensor-parallel block passes
  /// parallel::megatron_linears(group): its ranks then hold heads / group size heads each.
  LinearMaker linears = {};
};

/// c_proj(act(c_fc(x))), the activation fused into c_fc's matmul.
class MLP : public Module {
 public:
  explicit MLP(const TransformerOptions& options);
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<Linear> c_fc, c_proj;
  std::shared_ptr<Dropout> dropout;
  Activation activation;
};

/// Multi-head self-attention over x [B, T, C]: c_attn gives q | k | v ([3C, C] weight), the
/// heads attend (fused kernel, causal by option) and c_proj mixes them. Tensor-parallel, c_attn
/// is column-parallel (this rank's heads of q, of k and of v) and c_proj row-parallel.
class SelfAttention : public Module {
 public:
  explicit SelfAttention(const TransformerOptions& options);
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<Linear> c_attn, c_proj;
  std::shared_ptr<Dropout> dropout;
  int64_t head_dim;
  int64_t heads;  ///< the heads this module holds: all, or its tensor-parallel share
  bool causal;
};

/// x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class TransformerBlock : public Module {
 public:
  explicit TransformerBlock(const TransformerOptions& options);
  Tensor forward(const Tensor& x) const;
  bool is_block() const override { return true; }

  std::shared_ptr<LayerNorm> ln_1;
  std::shared_ptr<SelfAttention> attn;
  std::shared_ptr<LayerNorm> ln_2;
  std::shared_ptr<MLP> mlp;
};

}  // namespace dlf::nn
