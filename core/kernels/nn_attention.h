// The fused scaled-dot-product attention kernel (host).
#pragma once
#include <dlf/core/tensor.h>

#include <algorithm>

namespace dlf::kernels {

/// The dtype of the logsumexp that attention_forward gives for q's dtype: f64, or f32 for bf16.
/// Not f32 for f32: the backward's probabilities are exp(score - lse), and an f32 lse is off by
/// half its last bit (3e-5 at lse = 512, a common shift that softmax ignores), which every
/// probability of the row then carries; the forward normalises by the sum itself.
inline DType attention_lse_dtype(DType q) { return q == DType::bf16 ? DType::f32 : DType::f64; }

/// Query rows per task: a block's scores (kBlockRows x Tk) stay in the thread's cache.
inline constexpr int64_t kAttentionBlockRows = 64;

/// out = softmax(q kᵀ · scale [+ causal mask]) v and lse = the log-sum-exp of each row of
/// scaled, masked scores. q [..., Tq, d], k [..., Tk, d], v [..., Tk, dv] may be strided and
/// their leading dims broadcast to out's [..., Tq, dv] (contiguous, lse [..., Tq] of
/// attention_lse_dtype).
/// Under the causal mask query i sees keys j <= i + Tk - Tq; a row that sees no key gets
/// zeros and lse = -inf.
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                       const Tensor& out, const Tensor& lse);

/// The gradients of attention_forward's out with respect to q, k and v, given grad_out
/// [..., Tq, dv] (any strides) and the forward's out and lse. dq [..., Tq, d] is contiguous over
/// the broadcast leading dims of out; dk [..., Tk, d] and dv [..., Tk, dv] over those dims too
/// but 1 where k and v are both broadcast (grouped-query attention: the kernel sums over the
/// group). The caller sums them over any other dim an operand was broadcast along.
/// Deterministic: no sum depends on the thread count.
void attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, bool causal, double scale,
                        const Tensor& dq, const Tensor& dk, const Tensor& dv);

/// (query, key) pairs that one batch entry computes: Tq·Tk, or the causal band.
inline double attention_visible_pairs(int64_t tq, int64_t tk, bool causal) {
  if (!causal) return static_cast<double>(tq) * static_cast<double>(tk);
  double pairs = 0;
  for (int64_t i = 0; i < tq; ++i)
    pairs += static_cast<double>(std::clamp(i + tk - tq + 1, int64_t{0}, tk));
  return pairs;
}

}  // namespace dlf::kernels
