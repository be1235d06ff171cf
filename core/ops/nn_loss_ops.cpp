// cross_entropy as PyTorch defines it, with a max-subtracted log-softmax in the kernel. bf16
// logits are read as they are and the loss computed and returned in f32 (what mixed precision
// wants of a loss, without an f32 copy of the logits).
#include <dlf/core/op.h>
#include <dlf/core/ops/nn_ops.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/kernels/activation_math.h"
#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/row_major.h"

namespace dlf {
namespace {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::none:
      return "none";
    case Reduction::mean:
      return "mean";
    case Reduction::sum:
      return "sum";
  }
  throw Error("cross_entropy: unknown reduction");
}

// The shape of the targets (and of the per-row logsumexp): logits' shape without dim 1.
Shape row_shape(const Tensor& logits) {
  Shape s = logits.shape();
  s.erase(s.begin() + 1);
  return s;
}

const OpDef& cross_entropy_op = register_op({
    .name = "cross_entropy",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Tensor &logits = in[0], &target = in[1];
      DLF_CHECK(logits.dim() >= 2, "cross_entropy: logits must be [N, C] or [N, C, d...], got ",
                shape_str(logits.shape()));
      DLF_CHECK(logits.shape()[1] > 0, "cross_entropy: logits of shape ", shape_str(logits.shape()),
                " have no classes");
      DLF_CHECK(is_floating(logits.dtype()), "cross_entropy: logits must be f32, f64 or bf16, got ",
                dtype_name(logits.dtype()));
      DLF_CHECK(target.dtype() == DType::i32 || target.dtype() == DType::i64,
                "cross_entropy: targets must be i32 or i64, got ", dtype_name(target.dtype()));
      const Shape rows = row_shape(logits);
      DLF_CHECK(target.shape() == rows, "cross_entropy: targets of shape ",
                shape_str(target.shape()), " do not match logits of shape ",
                shape_str(logits.shape()), " (expected ", shape_str(rows), ")");
      const double eps = a.f("label_smoothing");
      DLF_CHECK(eps >= 0 && eps <= 1, "cross_entropy: label_smoothing must be in [0, 1], got ",
                eps);
      const bool none = a.s("reduction") == "none";
      const DType loss = kernels::acc_dtype(logits.dtype());
      return {{none ? rows : Shape{}, loss}, {rows, loss}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const Tensor &logits = in[0], &target = in[1];
          const int64_t n = logits.shape()[0], classes = logits.shape()[1];
          const int64_t inner = numel(Shape(logits.shape().begin() + 2, logits.shape().end()));
          const int64_t rows = n * inner;
          const int64_t ignore = a.i("ignore_index");
          const double eps = a.f("label_smoothing");
          kernels::RowMajorData<int64_t> y(target);
          int64_t counted = 0;
          for (int64_t r = 0; r < rows; ++r) {
            if (y[r] == ignore) continue;
            DLF_CHECK(y[r] >= 0 && y[r] < classes, "cross_entropy: target ", y[r],
                      " is out of range for ", classes, " classes (logits shape ",
                      shape_str(logits.shape()), ", ignore_index ", ignore, ")");
            ++counted;
          }
          std::vector<double> row_loss(static_cast<size_t>(rows));
          kernels::visit_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
            using T = typename decltype(tag)::type;
            using L = kernels::acc_t<T>;  // the loss's type: f32 for bf16 logits
            kernels::RowMajorData<T> x(logits);
            L* lse_out = out[1].data<L>();
            // Row r's loss from its target's logit, its logsumexp and the sum of its logits.
            const auto row_nll = [&](int64_t r, double target_logit, double lse, double total) {
              lse_out[r] = static_cast<L>(lse);
              if (y[r] == ignore) return 0.0;
              const double smooth = static_cast<double>(classes) * lse - total;  // Σ_c -log p_c
              return (1 - eps) * (lse - target_logit) + eps / static_cast<double>(classes) * smooth;
            };
            // Row r = (batch b, position j) reads x[b, c, j] = base[c * stride], stride = inner:
            // a constant 1 for [N, C] logits, so that the loops over classes vectorise.
            const auto rows_with = [&](auto stride) {
#pragma omp parallel for if (rows * classes > 32768)
              for (int64_t r = 0; r < rows; ++r) {
                const T* base = x.data() + (r / inner) * classes * inner + r % inner;
                L max = -std::numeric_limits<L>::infinity();
#pragma omp simd reduction(max : max)
                for (int64_t c = 0; c < classes; ++c) max = std::max(max, L(base[c * stride]));
                // exp in the compute type (exp_of vectorises in float), sums in double
                double sum_exp = 0, total = 0;
#pragma omp simd reduction(+ : sum_exp, total)
                for (int64_t c = 0; c < classes; ++c) {
                  const L v = base[c * stride];
                  sum_exp += double(kernels::exp_of(L(v - max)));
                  total += double(v);
                }
                row_loss[r] = row_nll(r, base[y[r] == ignore ? 0 : y[r] * stride],
                                      double(max) + std::log(sum_exp), total);
              }
            };
            if (inner == 1) {
              rows_with(std::integral_constant<int64_t, 1>{});
            } else {
              rows_with(inner);
            }
            L* loss = out[0].data<L>();
            if (a.s("reduction") == "none") {
              for (int64_t r = 0; r < rows; ++r) loss[r] = static_cast<L>(row_loss[r]);
              return;
            }
            double sum = 0;
            for (double l : row_loss) sum += l;
            // mean over an all-ignored batch is 0/0 = NaN, as in PyTorch.
            loss[0] = static_cast<L>(a.s("reduction") == "sum" ? sum : sum / double(counted));
          });
        },
    // Per logit: max, subtract, exp, add (and the smoothing sum).
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor> out) -> Cost {
      return {5.0 * static_cast<double>(in[0].numel()),
              static_cast<double>(in[0].nbytes() + in[1].nbytes()),
              static_cast<double>(out[0].nbytes() + out[1].nbytes())};
    },
});

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const CrossEntropyOptions& options) {
  return dispatch1(cross_entropy_op, {logits, target},
                   {{"ignore_index", options.ignore_index},
                    {"label_smoothing", options.label_smoothing},
                    {"reduction", std::string(reduction_name(options.reduction))}});
}

}  // namespace dlf
