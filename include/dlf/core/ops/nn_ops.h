// Ops that neural-network layers are made of: lookup, losses, dropout, attention.
#pragma once
#include <optional>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/core/tensor.h>

namespace dlf {

/// Rows of weight [num, dim] picked by integer indices of any shape: [..., dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);

/// How a loss reduces over the targets.
enum class Reduction { none, mean, sum };
/// Options of cross_entropy, as PyTorch's.
struct CrossEntropyOptions {
  int64_t ignore_index = -100;            ///< targets of this value add no loss
  double label_smoothing = 0;             ///< mass spread evenly over the classes
  Reduction reduction = Reduction::mean;  ///< mean over the counted targets, sum, or none
};
/// logits [N, C] (or [N, C, d...]), integer targets [N] (or [N, d...]), as in PyTorch.
/// The mean is over targets that are not ignore_index. The op's second output is the
/// per-row logsumexp [N, d...], for backward.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const CrossEntropyOptions& options = {});

/// Zeroes each element with probability p and scales the rest by 1/(1-p) when training
/// (the op's second output is the bool keep-mask); returns x itself when not training or p = 0.
Tensor dropout(const Tensor& x, double p, bool training = true, Generator* gen = nullptr);

/// softmax(q kᵀ · scale [+ causal mask]) v over q [..., Tq, d], k [..., Tk, d],
/// v [..., Tk, dv]; scale defaults to 1/sqrt(d). The causal mask aligns the last query
/// with the last key (query i sees keys j <= i + Tk - Tq); a query that sees no key gets
/// zeros. Leading dims broadcast: grouped-query (or multi-query) attention is q
/// [B, Hkv, G, T, d] against k and v [B, Hkv, 1, T, d], each key/value head read by its group of
/// G query heads in place and its gradient summed over the group inside the backward kernel (no
/// repeated keys, values or gradients). The op's second output is the per-row logsumexp [..., Tq]
/// of the scaled scores (f64, or f32 for bf16 inputs), for backward.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    bool causal = false, std::optional<double> scale = {});

/// Llama 3's stretch of the rotary frequencies to a longer context (factor 0: none): wavelengths
/// above original_context / low_freq_factor grow by `factor`, those below
/// original_context / high_freq_factor stay, the ones between are blended.
struct RopeScaling {
  double factor = 0;                ///< how much longer wavelengths grow; 0: no scaling
  double low_freq_factor = 1;       ///< wavelengths above original_context / this grow
  double high_freq_factor = 4;      ///< wavelengths below original_context / this stay
  int64_t original_context = 8192;  ///< the context the model was pretrained at
};
/// Options of rotary_embedding.
struct RotaryOptions {
  double theta = 10000;      ///< frequency j of head dim d is theta^(-2j/d)
  bool interleaved = false;  ///< Meta's pairs (2j, 2j+1), not Hugging Face's (j, j + d/2)
  int64_t offset = 0;        ///< the position of the first index along seq_dim (a KV-cached decode)
  int64_t seq_dim = -2;      ///< the positions' dim: -2 for [B, H, T, d], 1 for [B, T, H, d]
  RopeScaling scaling = {};  ///< Llama 3's frequency scaling (none by default)
  /// Per row of dim 0, added to offset: rows of different lengths in one KV-cached decode
  /// (row b's first position offset + row_offsets[b]). Empty: none.
  std::vector<int64_t> row_offsets = {};
};
/// Rotary position embeddings (RoFormer; Llama): each pair of x's last dim (d even) rotated by
/// the angle (offset + row_offsets[b] + t) · frequency, t the index along seq_dim, b along dim 0.
/// Fused, its gradient the inverse rotation.
Tensor rotary_embedding(const Tensor& x, const RotaryOptions& options = {});

}  // namespace dlf
