// Fused backward ops of the nn family: cross_entropy's logits gradient from the saved
// logsumexp, and attention's q/k/v gradients (core/kernels/nn_attention_backward.cpp).
#include <dlf/core/op.h>

#include <algorithm>
#include <cmath>

#include "core/kernels/activation_math.h"
#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/nn_attention.h"
#include "core/kernels/row_major.h"

namespace dlf {
namespace {

// Inputs: grad of the loss ([] or, for reduction "none", [N, d...]), logits [N, C, d...],
// targets [N, d...], logsumexp [N, d...]. Output: d loss / d logits, with
// d row_loss / d logit_c = softmax_c - (1 - eps) [c == target] - eps / C.
const OpDef& cross_entropy_backward_op = register_op({
    .name = "cross_entropy_backward",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Tensor &grad = in[0], &logits = in[1], &target = in[2], &lse = in[3];
      DLF_CHECK(logits.dim() >= 2 && is_floating(logits.dtype()),
                "cross_entropy_backward: logits must be f32, f64 or bf16 [N, C, d...], got ",
                dtype_name(logits.dtype()), " ", shape_str(logits.shape()));
      const DType loss = kernels::acc_dtype(logits.dtype());
      Shape rows = logits.shape();
      rows.erase(rows.begin() + 1);
      const Shape grad_shape = a.s("reduction") == "none" ? rows : Shape{};
      DLF_CHECK(target.shape() == rows && lse.shape() == rows && grad.shape() == grad_shape &&
                    (target.dtype() == DType::i32 || target.dtype() == DType::i64) &&
                    grad.dtype() == loss && lse.dtype() == loss,
                "cross_entropy_backward: expected grad ", shape_str(grad_shape),
                ", integer targets and logsumexp ", shape_str(rows), " for logits ",
                shape_str(logits.shape()), ", got grad ", shape_str(grad.shape()), ", targets ",
                shape_str(target.shape()), ", logsumexp ", shape_str(lse.shape()));
      return {{logits.shape(), logits.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const Tensor& logits = in[1];
          const int64_t classes = logits.shape()[1];
          const int64_t inner = numel(Shape(logits.shape().begin() + 2, logits.shape().end()));
          const int64_t rows = logits.shape()[0] * inner;
          const int64_t ignore = a.i("ignore_index");
          const double eps = a.f("label_smoothing");
          const std::string& reduction = a.s("reduction");
          kernels::RowMajorData<int64_t> y(in[2]);
          int64_t counted = 0;
          for (int64_t r = 0; r < rows; ++r) {
            if (y[r] == ignore) continue;
            DLF_CHECK(y[r] >= 0 && y[r] < classes, "cross_entropy_backward: target ", y[r],
                      " is out of range for ", classes, " classes (logits shape ",
                      shape_str(logits.shape()), ")");
            ++counted;
          }
          kernels::visit_floating(logits.dtype(), "cross_entropy_backward", [&](auto tag) {
            using T = typename decltype(tag)::type;
            kernels::RowMajorData<T> x(logits);
            kernels::RowMajorData<kernels::acc_t<T>> g(in[0]), lse(in[3]);
            T* dx = out[0].data<T>();
            // The loss's weight on every counted row, unless each row has its own.
            const double shared = reduction == "mean"  ? double(g[0]) / double(counted)
                                  : reduction == "sum" ? double(g[0])
                                                       : 0.0;
            const double off = eps / static_cast<double>(classes);
            using A = kernels::acc_t<T>;
            // Row r = (batch b, position j) is x[b, c, j] = base[c * stride], stride = inner: a
            // constant 1 for [N, C] logits, so that the loop over classes vectorises (exp_of in
            // float).
            const auto rows_with = [&](auto stride) {
#pragma omp parallel for if (rows * classes > 32768)
              for (int64_t r = 0; r < rows; ++r) {
                const int64_t base = (r / inner) * classes * inner + r % inner;
                const A w(y[r] == ignore ? 0.0 : reduction == "none" ? double(g[r]) : shared);
                const A row_lse = lse[r], spread = A(off), target = A(1 - eps);
                const T* xs = x.data() + base;
                T* dxs = dx + base;
                const int64_t target_class = y[r];
#pragma omp simd
                for (int64_t c = 0; c < classes; ++c) {
                  const A p = kernels::exp_of(A(xs[c * stride]) - row_lse);
                  dxs[c * stride] =
                      static_cast<T>(w * (p - (c == target_class ? target : A(0)) - spread));
                }
              }
            };
            if (inner == 1) {
              rows_with(std::integral_constant<int64_t, 1>{});
            } else {
              rows_with(inner);
            }
          });
        },
    // Per logit: exp, two subtractions, a multiply.
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor> out) -> Cost {
      double read = 0;
      for (const Tensor& t : in) read += static_cast<double>(t.nbytes());
      return {4.0 * static_cast<double>(in[1].numel()), read, static_cast<double>(out[0].nbytes())};
    },
});

std::string attention_operands_str(Inputs in) {
  return detail::concat("grad ", shape_str(in[0].shape()), ", q ", shape_str(in[1].shape()), ", k ",
                        shape_str(in[2].shape()), ", v ", shape_str(in[3].shape()), ", out ",
                        shape_str(in[4].shape()), ", logsumexp ", shape_str(in[5].shape()));
}

// Inputs: grad of out, q, k, v, out, logsumexp (as scaled_dot_product_attention made them).
// Outputs: dq over out's (broadcast) leading dims, dk and dv over those where k or v is not
// broadcast; the formula sums them down to the shapes of q, k and v.
const OpDef& attention_backward_op = register_op({
    .name = "scaled_dot_product_attention_backward",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor &grad = in[0], &q = in[1], &k = in[2], &v = in[3], &out = in[4], &lse = in[5];
      bool ok = q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2 && out.dim() >= 2;
      for (const Tensor& t : in.first(5)) ok = ok && t.dtype() == q.dtype();
      ok = ok && is_floating(q.dtype()) && grad.shape() == out.shape() &&
           out.shape().end()[-2] == q.shape().end()[-2] && out.shape().back() == v.shape().back() &&
           q.shape().back() == k.shape().back() && k.shape().end()[-2] == v.shape().end()[-2] &&
           lse.shape() == Shape(out.shape().begin(), out.shape().end() - 1) &&
           lse.dtype() == kernels::attention_lse_dtype(q.dtype());
      DLF_CHECK(ok, "scaled_dot_product_attention_backward: operands do not match a forward (",
                attention_operands_str(in), ")");
      // dk and dv over the leading dims where k or v is not broadcast (grouped-query
      // attention's k and v shared by a group of query heads: summed in the kernel).
      Shape dq(out.shape().begin(), out.shape().end() - 2), dk = dq;
      for (size_t i = 0; i < dk.size(); ++i) {
        auto broadcast = [&](const Tensor& t) {
          const int64_t td =
              static_cast<int64_t>(i) - static_cast<int64_t>(dk.size()) + t.dim() - 2;
          return td < 0 || t.shape()[td] == 1;
        };
        if (broadcast(k) && broadcast(v)) dk[i] = 1;
      }
      Shape dv = dk;
      dq.insert(dq.end(), q.shape().end() - 2, q.shape().end());
      dk.insert(dk.end(), k.shape().end() - 2, k.shape().end());
      dv.insert(dv.end(), v.shape().end() - 2, v.shape().end());
      return {{dq, q.dtype()}, {dk, q.dtype()}, {dv, q.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          kernels::attention_backward(in[0], in[1], in[2], in[3], in[4], in[5], a.b("causal"),
                                      a.f("scale"), out[0], out[1], out[2]);
        },
    // Per visible (query, key) pair: q kᵀ and dO vᵀ in both passes (4·d + 4·dv), dS K and
    // dSᵀ Q (4·d), Pᵀ dO (2·dv) and about 6 for exp and dS. Operands are read once and the
    // gradients written once (the scores never reach memory). Its rows are the query rows.
    .cost = [](Inputs in, const Attrs& a, std::span<const Tensor> out) -> Cost {
      const Tensor &q = in[1], &v = in[3];
      const int64_t tq = q.shape().end()[-2], tk = v.shape().end()[-2];
      const double batches = static_cast<double>(in[5].numel()) / std::max<int64_t>(1, tq);
      const double pairs = batches * kernels::attention_visible_pairs(tq, tk, a.b("causal"));
      const double flops =
          pairs * static_cast<double>(8 * q.shape().back() + 6 * v.shape().back() + 6);
      double read = 0, written = 0;
      for (const Tensor& t : in) read += static_cast<double>(t.nbytes());
      for (const Tensor& t : out) written += static_cast<double>(t.nbytes());
      return {flops, read, written, batches * static_cast<double>(tq)};
    },
});

}  // namespace
}  // namespace dlf
