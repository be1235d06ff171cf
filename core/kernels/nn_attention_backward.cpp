// Fused attention backward, flash-attention's on the CPU: the probabilities P are recomputed
// block by block from q, k and the saved logsumexp, never stored for all of [B, H, Tq, Tk].
// With dP = dO Vᵀ and dS = P ∘ (dP − rowsum(dO ∘ O)), every sum has one fixed order whatever
// the thread count:
//  - with enough batch·head entries to share out, one task per entry walks its blocks of query
//    rows in order: P and dS once per block (over the keys it sees), dQ of the block, and its
//    share of dK and dV added to the entry's sums — five GEMMs over the visible blocks;
//  - otherwise two passes: one task per (entry, block of query rows) for dQ = dS K · scale,
//    then one per (entry, block of keys) for dV = Σ Pᵀ dO and dK = Σ dSᵀ Q · scale over the
//    blocks of query rows that see those keys, in order. The scores are recomputed in each
//    pass (seven GEMMs) in exchange for no atomics and no per-thread [Tk, d] partial sums.
// dK and dV come over the leading dims k and v have (their "kv entries"): the batch entries
// that share one (grouped-query or multi-query attention, k and v broadcast over the group)
// add into its sums in order, inside the task that owns the entry — the repeated keys and
// values and their gradients never exist.
#include <cmath>
#include <vector>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/nn_attention.h"
#include "core/kernels/nn_attention_rows.h"
#include "core/kernels/row_major.h"

namespace dlf::kernels {
namespace {

using namespace attention_rows;

/// From this many batch entries on, one task per entry (whole_entry) gives every thread enough
/// work. A fixed count, not one from the thread count, so that the path (and the result's
/// bits) never depends on it.
constexpr int64_t kWholeEntryMinBatches = 8;

/// Everything both passes read, for one call.
template <typename T>
struct Problem {
  using A = acc_t<T>;

  int64_t tq, tk, d, dv, batches;
  bool causal;
  A scale;
  Operand q, k, v, g;  // g: the gradient of out
  const T *q_base, *k_base, *v_base, *g_base;
  // The forward's logsumexp (see attention_lse_dtype) as lse_hi + lse_lo, both [batches, tq]:
  // lse_hi is it rounded to A, lse_lo the rest.
  const A *lse_hi, *lse_lo;
  const A* delta;  // rowsum(dO ∘ O), [batches, tq], summed in double
  // The batch entries of kv entry e: members[member_start[e] .. member_start[e + 1]), in order.
  std::vector<int64_t> members, member_start;

  /// Keys 0 .. visible(i) - 1 are seen by query row i.
  int64_t visible(int64_t i) const {
    return causal ? std::clamp(i + tk - tq + 1, int64_t{0}, tk) : tk;
  }
  /// The first query row that sees key j.
  int64_t first_query(int64_t j) const { return causal ? std::max<int64_t>(0, j - (tk - tq)) : 0; }
  ConstRows<A> rows(const Operand& op, const T* base, int64_t b, int64_t first, int64_t count,
                    int64_t cols, std::vector<A>& scratch) const {
    return rows_of<A>(base + op.batch_offset[b] + first * op.row_stride, count, cols, op.row_stride,
                      op.col_stride, scratch);
  }
};

template <typename A>
struct Scratch {
  std::vector<A> q, k, v, g, p, dp;
  std::vector<A> dqk, dv;         // a block of dq or dk (before the scale), of dv
  std::vector<A> dk_sum, dv_sum;  // whole_entry's dk (before the scale) and dv
};

/// dst = src · factor, converted to T.
template <typename T, typename A>
void store(const std::vector<A>& src, T* dst, int64_t n, A factor) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i] * factor);
}

/// exp(scaled_score − lse_hi − lse_lo): the difference d = scaled_score − lse_hi rounded and its
/// rounding error recovered exactly (Knuth's two-sum), then exp(d)·(1 + error − lse_lo). As exact
/// as an exp of an exact argument: rounding the lse (≈ 4 for 50 keys) or the difference would
/// shift every probability of the row by up to 2.4e-7 (3e-5 at lse ≈ 512).
template <typename A>
Chunk<A> probability(const Chunk<A>& scaled_score, const Chunk<A>& lse_hi, const Chunk<A>& lse_lo) {
  const Chunk<A> d = scaled_score - lse_hi;
  const Chunk<A> hi_part = scaled_score - d;  // what of lse_hi the rounded d took away
  const Chunk<A> error = (scaled_score - (d + hi_part)) + (hi_part - lse_hi);
  return d.exp() * (A(1) + (error - lse_lo));
}

/// One query row of P and dS, in place over its scores and dO·Vᵀ (rows padded to whole chunks,
/// chunk_padded(keys) long): p = exp(score · scale − lse_hi − lse_lo) and ds = p ∘ (ds − delta) for
/// the keys it sees, 0 for the masked keys seen .. keys - 1.
template <typename A>
void softmax_grad_row(A* p, A* ds, int64_t seen, int64_t keys, A scale, A lse_hi, A lse_lo,
                      A delta) {
  const Chunk<A> hi = Chunk<A>::Constant(lse_hi), lo = Chunk<A>::Constant(lse_lo);
  for (int64_t j = 0; j < seen; j += kChunk) {
    Eigen::Map<Chunk<A>> pj(p + j), dsj(ds + j);
    pj = probability<A>(pj * scale, hi, lo);
    dsj = pj * (dsj - delta);
  }
  const int64_t written = chunk_padded(seen);
  std::fill(p + seen, p + std::max(written, keys), A(0));
  std::fill(ds + seen, ds + std::max(written, keys), A(0));
}

/// Pass 1: the rows i0 .. i0 + m - 1 of dq for batch entry b; leaves the block's P and dS
/// ([m, keys], rows chunk_padded(keys) apart) in buf.p and buf.dp.
template <typename T, typename A = acc_t<T>>
void query_block(const Problem<T>& pr, int64_t b, int64_t i0, int64_t m, T* dq, Scratch<A>& buf) {
  const int64_t keys = pr.visible(i0 + m - 1);  // the block's last row sees the most keys
  if (keys == 0) {
    std::fill(dq, dq + m * pr.d, T(0));
    return;
  }
  auto qm = pr.rows(pr.q, pr.q_base, b, i0, m, pr.d, buf.q);
  auto km = pr.rows(pr.k, pr.k_base, b, 0, keys, pr.d, buf.k);
  auto vm = pr.rows(pr.v, pr.v_base, b, 0, keys, pr.dv, buf.v);
  auto gm = pr.rows(pr.g, pr.g_base, b, i0, m, pr.dv, buf.g);
  const int64_t ld = chunk_padded(keys);
  buf.p.resize(static_cast<size_t>(m * ld));
  buf.dp.resize(static_cast<size_t>(m * ld));
  Rows<A> p(buf.p.data(), m, keys, Eigen::OuterStride<>(ld));
  Rows<A> ds(buf.dp.data(), m, keys, Eigen::OuterStride<>(ld));
  p.noalias() = qm * km.transpose();
  ds.noalias() = gm * vm.transpose();
  for (int64_t r = 0; r < m; ++r) {
    const int64_t i = b * pr.tq + i0 + r;
    softmax_grad_row(buf.p.data() + r * ld, buf.dp.data() + r * ld, pr.visible(i0 + r), keys,
                     pr.scale, pr.lse_hi[i], pr.lse_lo[i], pr.delta[i]);
  }
  buf.dqk.resize(static_cast<size_t>(m * pr.d));
  Rows<A>(buf.dqk.data(), m, pr.d, Eigen::OuterStride<>(pr.d)).noalias() = ds * km;
  store(buf.dqk, dq, m * pr.d, pr.scale);
}

/// All of dk and dv of kv entry e, and dq of its batch entries, in one task: each entry's blocks
/// of query rows in order, each making its P and dS once (query_block) and adding its share to
/// dk and dv.
template <typename T, typename A = acc_t<T>>
void whole_entry(const Problem<T>& pr, int64_t e, T* dq_base, T* dk, T* dv, Scratch<A>& buf) {
  buf.dk_sum.assign(static_cast<size_t>(pr.tk * pr.d), A(0));
  buf.dv_sum.assign(static_cast<size_t>(pr.tk * pr.dv), A(0));
  Rows<A> dk_sum(buf.dk_sum.data(), pr.tk, pr.d, Eigen::OuterStride<>(pr.d));
  Rows<A> dv_sum(buf.dv_sum.data(), pr.tk, pr.dv, Eigen::OuterStride<>(pr.dv));
  for (int64_t at = pr.member_start[e]; at < pr.member_start[e + 1]; ++at) {
    const int64_t b = pr.members[at];
    for (int64_t i0 = 0; i0 < pr.tq; i0 += kAttentionBlockRows) {
      const int64_t m = std::min(kAttentionBlockRows, pr.tq - i0);
      query_block(pr, b, i0, m, dq_base + (b * pr.tq + i0) * pr.d, buf);
      const int64_t keys = pr.visible(i0 + m - 1);
      if (keys == 0) continue;
      auto qm = pr.rows(pr.q, pr.q_base, b, i0, m, pr.d, buf.q);
      auto gm = pr.rows(pr.g, pr.g_base, b, i0, m, pr.dv, buf.g);
      Rows<A> p(buf.p.data(), m, keys, Eigen::OuterStride<>(chunk_padded(keys)));
      Rows<A> ds(buf.dp.data(), m, keys, Eigen::OuterStride<>(chunk_padded(keys)));
      dk_sum.topRows(keys).noalias() += ds.transpose() * qm;
      dv_sum.topRows(keys).noalias() += p.transpose() * gm;
    }
  }
  store(buf.dk_sum, dk, pr.tk * pr.d, pr.scale);
  store(buf.dv_sum, dv, pr.tk * pr.dv, A(1));
}

/// Pass 2: the rows j0 .. j0 + n - 1 of dk and dv for kv entry e, summed over its batch entries.
template <typename T, typename A = acc_t<T>>
void key_block(const Problem<T>& pr, int64_t e, int64_t j0, int64_t n, T* dk, T* dv,
               Scratch<A>& buf) {
  buf.dqk.assign(static_cast<size_t>(n * pr.d), A(0));
  buf.dv.assign(static_cast<size_t>(n * pr.dv), A(0));
  Rows<A> dk_acc(buf.dqk.data(), n, pr.d, Eigen::OuterStride<>(pr.d));
  Rows<A> dv_acc(buf.dv.data(), n, pr.dv, Eigen::OuterStride<>(pr.dv));
  const int64_t first = pr.first_query(j0);
  for (int64_t at = pr.member_start[e]; at < pr.member_start[e + 1] && first < pr.tq; ++at) {
    const int64_t b = pr.members[at];
    auto km = pr.rows(pr.k, pr.k_base, b, j0, n, pr.d, buf.k);
    auto vm = pr.rows(pr.v, pr.v_base, b, j0, n, pr.dv, buf.v);
    for (int64_t i0 = first; i0 < pr.tq; i0 += kAttentionBlockRows) {
      const int64_t m = std::min(kAttentionBlockRows, pr.tq - i0);
      auto qm = pr.rows(pr.q, pr.q_base, b, i0, m, pr.d, buf.q);
      auto gm = pr.rows(pr.g, pr.g_base, b, i0, m, pr.dv, buf.g);
      buf.p.resize(static_cast<size_t>(n * m));
      buf.dp.resize(static_cast<size_t>(n * m));
      Rows<A> pt(buf.p.data(), n, m, Eigen::OuterStride<>(m));    // Pᵀ
      Rows<A> dst(buf.dp.data(), n, m, Eigen::OuterStride<>(m));  // dSᵀ
      pt.noalias() = km * qm.transpose();
      dst.noalias() = vm * gm.transpose();
      for (int64_t j = 0; j < n; ++j) {
        A* p_row = buf.p.data() + j * m;
        A* ds_row = buf.dp.data() + j * m;
        // Query rows r >= r_min see key j0 + j; rows before it are masked.
        const int64_t r_min = std::clamp(pr.first_query(j0 + j) - i0, int64_t{0}, m);
        std::fill(p_row, p_row + r_min, A(0));
        std::fill(ds_row, ds_row + r_min, A(0));
        const A* lse_hi = pr.lse_hi + b * pr.tq + i0;
        const A* lse_lo = pr.lse_lo + b * pr.tq + i0;
        const A* delta = pr.delta + b * pr.tq + i0;
        for (int64_t r = r_min; r < m; r += kChunk) {
          const int64_t n = std::min(kChunk, m - r);
          const Chunk<A> p = probability<A>(load_chunk(p_row + r, n) * pr.scale,
                                            load_chunk(lse_hi + r, n), load_chunk(lse_lo + r, n));
          store_chunk(p, p_row + r, n);
          store_chunk<A>(p * (load_chunk(ds_row + r, n) - load_chunk(delta + r, n)), ds_row + r, n);
        }
      }
      dv_acc.noalias() += pt * gm;
      dk_acc.noalias() += dst * qm;
    }
  }
  store(buf.dqk, dk, n * pr.d, pr.scale);
  store(buf.dv, dv, n * pr.dv, A(1));
}

/// The batch entries (over `lead`) of each kv entry (over kv_lead: lead with 1 where k and v
/// are both broadcast), as members[start[e] .. start[e + 1]) in increasing order.
void group_by_kv_entry(const Shape& lead, const Shape& kv_lead, std::vector<int64_t>& members,
                       std::vector<int64_t>& start) {
  const int64_t batches = numel(lead), kv_batches = numel(kv_lead);
  std::vector<int64_t> entry(static_cast<size_t>(batches)), count(kv_batches + 1, 0);
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rem = b, e = 0, kv_stride = 1;
    for (int64_t d = static_cast<int64_t>(lead.size()) - 1; d >= 0; --d) {
      const int64_t idx = rem % lead[d];
      rem /= lead[d];
      if (kv_lead[d] != 1) e += idx * kv_stride;
      kv_stride *= kv_lead[d];
    }
    entry[b] = e;
    ++count[e + 1];
  }
  for (int64_t e = 0; e < kv_batches; ++e) count[e + 1] += count[e];
  start = count;
  members.resize(static_cast<size_t>(batches));
  for (int64_t b = 0; b < batches; ++b) members[count[entry[b]]++] = b;
}

template <typename T>
void backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
              const Tensor& out, const Tensor& lse_t, bool causal, double scale, const Tensor& dq,
              const Tensor& dk, const Tensor& dv) {
  using A = acc_t<T>;
  const Shape lead(out.shape().begin(), out.shape().end() - 2);
  Problem<T> pr{.tq = q.shape().end()[-2],
                .tk = k.shape().end()[-2],
                .d = q.shape().back(),
                .dv = v.shape().back(),
                .batches = numel(lead),
                .causal = causal,
                .scale = static_cast<A>(scale),
                .q = layout(q, lead),
                .k = layout(k, lead),
                .v = layout(v, lead),
                .g = layout(grad_out, lead),
                .q_base = storage_base<T>(q),
                .k_base = storage_base<T>(k),
                .v_base = storage_base<T>(v),
                .g_base = storage_base<T>(grad_out),
                .lse_hi = nullptr,
                .lse_lo = nullptr,
                .delta = nullptr,
                .members = {},
                .member_start = {}};
  group_by_kv_entry(lead, Shape(dk.shape().begin(), dk.shape().end() - 2), pr.members,
                    pr.member_start);
  const int64_t kv_batches = static_cast<int64_t>(pr.member_start.size()) - 1;
  const int64_t rows = pr.batches * pr.tq;
  const RowMajorData<Lse<T>> lse(lse_t);
  std::vector<A> lse_hi(static_cast<size_t>(rows)), lse_lo(static_cast<size_t>(rows));
  for (int64_t row = 0; row < rows; ++row) {
    lse_hi[row] = static_cast<A>(lse.data()[row]);
    // 0 for a row that sees no key (lse = -inf), whose probabilities are never formed
    lse_lo[row] = std::isfinite(lse_hi[row]) ? static_cast<A>(lse.data()[row] - lse_hi[row]) : A(0);
  }
  pr.lse_hi = lse_hi.data();
  pr.lse_lo = lse_lo.data();

  // delta_i = rowsum(dO ∘ O)_i, accumulated in double.
  std::vector<A> delta(static_cast<size_t>(rows));
  const RowMajorData<T> o(out);
  const T* o_data = o.data();
#pragma omp parallel for if (rows * pr.dv > 32768)
  for (int64_t row = 0; row < rows; ++row) {
    const T* g = pr.g_base + pr.g.batch_offset[row / pr.tq] + (row % pr.tq) * pr.g.row_stride;
    double sum = 0;
    for (int64_t c = 0; c < pr.dv; ++c)
      sum += double(A(g[c * pr.g.col_stride])) * double(A(o_data[row * pr.dv + c]));
    delta[row] = static_cast<A>(sum);
  }
  pr.delta = delta.data();

  T* dq_base = dq.data<T>();
  T* dk_base = dk.data<T>();
  T* dv_base = dv.data<T>();
  if (kv_batches >= kWholeEntryMinBatches) {
#pragma omp parallel
    {
      Scratch<A> buf;
#pragma omp for schedule(dynamic)
      for (int64_t e = 0; e < kv_batches; ++e) {
        whole_entry(pr, e, dq_base, dk_base + e * pr.tk * pr.d, dv_base + e * pr.tk * pr.dv, buf);
      }
    }
    return;
  }
  auto blocks = [](int64_t t) { return (t + kAttentionBlockRows - 1) / kAttentionBlockRows; };
  const int64_t q_blocks = blocks(pr.tq), k_blocks = blocks(pr.tk);
#pragma omp parallel
  {
    Scratch<A> buf;
#pragma omp for schedule(dynamic) nowait
    for (int64_t task = 0; task < pr.batches * q_blocks; ++task) {
      const int64_t b = task / q_blocks, i0 = (task % q_blocks) * kAttentionBlockRows;
      query_block(pr, b, i0, std::min(kAttentionBlockRows, pr.tq - i0),
                  dq_base + (b * pr.tq + i0) * pr.d, buf);
    }
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < kv_batches * k_blocks; ++task) {
      const int64_t e = task / k_blocks, j0 = (task % k_blocks) * kAttentionBlockRows;
      key_block(pr, e, j0, std::min(kAttentionBlockRows, pr.tk - j0),
                dk_base + (e * pr.tk + j0) * pr.d, dv_base + (e * pr.tk + j0) * pr.dv, buf);
    }
  }
}

}  // namespace

void attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, bool causal, double scale,
                        const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  visit_floating(q.dtype(), "scaled_dot_product_attention_backward", [&](auto tag) {
    backward<typename decltype(tag)::type>(grad_out, q, k, v, out, lse, causal, scale, dq, dk, dv);
  });
}

}  // namespace dlf::kernels
