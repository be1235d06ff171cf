// Fused attention, flash-attention's outer loop on the CPU: one task per (batch·head, block
// of query rows); the block's scores [rows, Tk] live in per-thread scratch, never the whole
// [B, H, Tq, Tk] matrix. The two GEMMs are Eigen products on maps of the (strided) rows.
//
// Eigen rather than oneDNN matmul: the tasks already fill the OpenMP pool, so each GEMM runs
// on one thread (Eigen's own parallel GEMM stays off inside an active parallel region), the
// key range of a causal block changes from block to block (one oneDNN primitive per length),
// and q/k/v rows with any row stride map without a copy.
#include "core/kernels/nn_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/nn_attention_rows.h"

namespace dlf::kernels {
namespace {

using namespace attention_rows;

/// Per-thread buffers: packed operands (only for strided columns or bf16), a block's scores.
template <typename A>
struct Scratch {
  std::vector<A> q, k, v, scores, out;
  std::vector<double> inv_sum, sum, max;  // a block's rows' softmax sums and maxima
};

template <typename T>
void attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
               const Tensor& out, const Tensor& lse) {
  using A = acc_t<T>;
  using L = Lse<T>;
  const int64_t tq = q.shape().end()[-2], d = q.shape().back();
  const int64_t tk = k.shape().end()[-2], dv = v.shape().back();
  const Shape lead(out.shape().begin(), out.shape().end() - 2);
  const Operand lq = layout(q, lead), lk = layout(k, lead), lv = layout(v, lead);
  const int64_t batches = numel(lead);
  const int64_t blocks = (tq + kAttentionBlockRows - 1) / kAttentionBlockRows;
  const T* q_base = storage_base<T>(q);
  const T* k_base = storage_base<T>(k);
  const T* v_base = storage_base<T>(v);
  T* out_base = out.data<T>();
  L* lse_base = lse.data<L>();
  const A s = static_cast<A>(scale);
  // Keys 0 .. visible(i) - 1 are seen by query row i.
  auto visible = [&](int64_t i) {
    return causal ? std::clamp(i + tk - tq + 1, int64_t{0}, tk) : tk;
  };

#pragma omp parallel
  {
    Scratch<A> buf;
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < batches * blocks; ++task) {
      const int64_t b = task / blocks, i0 = (task % blocks) * kAttentionBlockRows;
      const int64_t m = std::min(kAttentionBlockRows, tq - i0);
      const int64_t keys = visible(i0 + m - 1);  // the block's last row sees the most keys
      T* o_ptr = out_base + (b * tq + i0) * dv;
      L* lse_ptr = lse_base + b * tq + i0;
      if (keys == 0) {
        std::fill(o_ptr, o_ptr + m * dv, T(0));
        std::fill(lse_ptr, lse_ptr + m, -std::numeric_limits<L>::infinity());
        continue;
      }
      auto qm = rows_of<A>(q_base + lq.batch_offset[b] + i0 * lq.row_stride, m, d, lq.row_stride,
                           lq.col_stride, buf.q);
      auto km =
          rows_of<A>(k_base + lk.batch_offset[b], keys, d, lk.row_stride, lk.col_stride, buf.k);
      auto vm =
          rows_of<A>(v_base + lv.batch_offset[b], keys, dv, lv.row_stride, lv.col_stride, buf.v);
      // Rows padded to whole chunks: the softmax reads and writes whole chunks only. The scale
      // multiplies the finished product, as backward's recomputed scores do (as the product's
      // alpha, Eigen folds it into q for a one-row block, which rounds otherwise).
      const int64_t ld = chunk_padded(keys);
      buf.scores.resize(static_cast<size_t>(m * ld));
      Rows<A> scores(buf.scores.data(), m, keys, Eigen::OuterStride<>(ld));
      scores.noalias() = qm * km.transpose();
      scores *= s;
      // The lanes of each row's last chunk past its last seen key to -inf, so that they neither
      // raise the maximum nor add to the sum (exp(-inf) is 0, or a denormal far below the sum's
      // last bit); all rows first: a chunk loaded right after scalar stores into it would wait.
      constexpr A kLowest = -std::numeric_limits<A>::infinity();
      for (int64_t r = 0; r < m; ++r) {
        A* row = buf.scores.data() + r * ld;
        const int64_t seen = visible(i0 + r);
        std::fill(row + seen, row + chunk_padded(seen), kLowest);
      }

      // Softmax numerators in place (masked keys become 0); the sums divide the output later.
      buf.inv_sum.resize(static_cast<size_t>(m));
      // Padded to whole chunks with log(1) + 0, as rows are (below).
      buf.sum.assign(static_cast<size_t>(chunk_padded(m)), 1.0);
      buf.max.assign(static_cast<size_t>(chunk_padded(m)), 0.0);
      for (int64_t r = 0; r < m; ++r) {
        A* row = buf.scores.data() + r * ld;
        const int64_t seen = visible(i0 + r);
        Chunk<A> maxes = Chunk<A>::Constant(kLowest);
        for (int64_t j = 0; j < seen; j += kChunk) maxes = maxes.max(Eigen::Map<Chunk<A>>(row + j));
        const A max = maxes.maxCoeff();
        Chunk<A> sums = Chunk<A>::Zero();
        for (int64_t j = 0; j < seen; j += kChunk) {
          Eigen::Map<Chunk<A>> chunk(row + j);
          const Chunk<A> e = (chunk - max).exp();
          chunk = e;
          sums += e;
        }
        const double sum = sums.sum();
        std::fill(row + seen, row + std::max(seen, keys), A(0));  // the masked keys' weights
        buf.inv_sum[r] = seen > 0 ? 1.0 / sum : 0.0;
        buf.sum[r] = sum;
        buf.max[r] = max;
      }
      // lse = max + log(sum), the logs vectorized over the block in whole chunks (-inf for rows
      // seeing no key).
      for (int64_t r = 0; r < m; r += kChunk) {
        Eigen::Map<Chunk<double>> sums(buf.sum.data() + r), maxima(buf.max.data() + r);
        sums = sums.log() + maxima;
      }
      for (int64_t r = 0; r < m; ++r) {
        lse_ptr[r] =
            visible(i0 + r) > 0 ? static_cast<L>(buf.sum[r]) : -std::numeric_limits<L>::infinity();
      }

      A* o_acc;
      if constexpr (std::is_same_v<A, T>) {
        o_acc = o_ptr;
      } else {
        buf.out.resize(static_cast<size_t>(m * dv));
        o_acc = buf.out.data();
      }
      Rows<A> o(o_acc, m, dv, Eigen::OuterStride<>(dv));
      o.noalias() = scores * vm;
      for (int64_t r = 0; r < m; ++r) o.row(r) *= static_cast<A>(buf.inv_sum[r]);
      if constexpr (!std::is_same_v<A, T>) {
        for (int64_t i = 0; i < m * dv; ++i) o_ptr[i] = T(o_acc[i]);
      }
    }
  }
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                       const Tensor& out, const Tensor& lse) {
  visit_floating(q.dtype(), "scaled_dot_product_attention", [&](auto tag) {
    attention<typename decltype(tag)::type>(q, k, v, causal, scale, out, lse);
  });
}

}  // namespace dlf::kernels
