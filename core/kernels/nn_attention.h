// The fused scaled-dot-product attention kernel (host).
#pragma once
#include <dlf/core/tensor.h>

namespace dlf::kernels {

/// Query rows per task: a block's scores (kBlockRows x Tk) stay in the thread's cache.
inline constexpr int64_t kAttentionBlockRows = 64;

/// out = softmax(q kᵀ · scale [+ causal mask]) v and lse = the log-sum-exp of each row of
/// scaled, masked scores. q [..., Tq, d], k [..., Tk, d], v [..., Tk, dv] may be strided and
/// their leading dims broadcast to out's [..., Tq, dv] (contiguous, lse [..., Tq]).
/// Under the causal mask query i sees keys j <= i + Tk - Tq; a row that sees no key gets
/// zeros and lse = -inf.
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                       const Tensor& out, const Tensor& lse);

}  // namespace dlf::kernels
