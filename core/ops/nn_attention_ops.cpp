// scaled_dot_product_attention: one op, a fused kernel (core/kernels/nn_attention.cpp).
#include <dlf/core/op.h>
#include <dlf/core/ops/nn_ops.h>

#include <algorithm>
#include <cmath>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/nn_attention.h"

namespace dlf {
namespace {

std::string qkv_str(Inputs in) {
  return detail::concat("q ", shape_str(in[0].shape()), ", k ", shape_str(in[1].shape()), ", v ",
                        shape_str(in[2].shape()));
}

// The leading (batch, head) dims of q, k and v broadcast together.
Shape lead_shape(Inputs in) {
  size_t rank = 0;
  for (const Tensor& t : in) rank = std::max(rank, t.shape().size() - 2);
  Shape lead(rank, 1);
  for (const Tensor& t : in) {
    const size_t r = t.shape().size() - 2, pad = rank - r;
    for (size_t i = 0; i < r; ++i) {
      const int64_t n = t.shape()[i];
      DLF_CHECK(n == lead[pad + i] || n == 1 || lead[pad + i] == 1,
                "scaled_dot_product_attention: leading dims do not broadcast (", qkv_str(in), ")");
      if (n != 1) lead[pad + i] = n;
    }
  }
  return lead;
}

const OpDef& attention_op = register_op({
    .name = "scaled_dot_product_attention",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor &q = in[0], &k = in[1], &v = in[2];
      for (const Tensor& t : in) {
        DLF_CHECK(t.dim() >= 2, "scaled_dot_product_attention: q, k and v need at least 2 dims (",
                  qkv_str(in), ")");
        DLF_CHECK(t.dtype() == q.dtype(), "scaled_dot_product_attention: dtypes differ (q ",
                  dtype_name(q.dtype()), ", k ", dtype_name(k.dtype()), ", v ",
                  dtype_name(v.dtype()), ")");
      }
      DLF_CHECK(is_floating(q.dtype()),
                "scaled_dot_product_attention: dtype must be floating, got ",
                dtype_name(q.dtype()));
      DLF_CHECK(q.shape().back() == k.shape().back() && q.shape().back() > 0,
                "scaled_dot_product_attention: q and k need the same positive head dim (",
                qkv_str(in), ")");
      DLF_CHECK(k.shape().end()[-2] == v.shape().end()[-2],
                "scaled_dot_product_attention: k and v need the same number of keys (", qkv_str(in),
                ")");
      Shape out = lead_shape(in), lse = out;
      out.push_back(q.shape().end()[-2]);
      out.push_back(v.shape().back());
      lse.push_back(q.shape().end()[-2]);
      return {{out, q.dtype()}, {lse, kernels::attention_lse_dtype(q.dtype())}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::attention_forward(in[0], in[1], in[2], a.b("causal"), a.f("scale"), out[0],
                                     out[1]);
        },
    // 2·d FLOPs per visible (query, key) pair for q kᵀ, 2·dv for the product with v, and about
    // 5 for the softmax; q, k and v are read once and the output written once (the traffic of
    // a fused kernel: the scores never reach memory). Its rows are the query rows.
    .cost = [](Inputs in, const Attrs& a, std::span<const Tensor> out) -> Cost {
      const Tensor &q = in[0], &v = in[2];
      const int64_t tq = q.shape().end()[-2], tk = v.shape().end()[-2];
      const double batches = static_cast<double>(out[1].numel()) / std::max<int64_t>(1, tq);
      const double pairs = batches * kernels::attention_visible_pairs(tq, tk, a.b("causal"));
      const double flops =
          pairs * static_cast<double>(2 * q.shape().back() + 2 * v.shape().back() + 5);
      double read = 0;
      for (const Tensor& t : in) read += static_cast<double>(t.nbytes());
      return {flops, read, static_cast<double>(out[0].nbytes() + out[1].nbytes()),
              batches * static_cast<double>(tq)};
    },
});

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                    std::optional<double> scale) {
  const double head_dim = q.dim() > 0 ? static_cast<double>(q.shape().back()) : 1.0;
  return dispatch1(attention_op, {q, k, v},
                   {{"causal", causal}, {"scale", scale.value_or(1.0 / std::sqrt(head_dim))}});
}

}  // namespace dlf
