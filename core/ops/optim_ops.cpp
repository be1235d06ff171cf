// adam_update_: Adam/AdamW's whole update in one pass (the composite form reads and writes
// the parameter and its two moments about twelve times), its learning rate and step count read
// from a tensor so that a captured step replays with the current ones. sum_squares: the squared
// norm of any number of gradients in one pass, without the f64 copies the composite form makes.
#include <dlf/core/op.h>
#include <dlf/core/ops/optim.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/row_major.h"

namespace dlf {
namespace {

// Inputs: param (updated in place, the op's output), grad, exp_avg, exp_avg_sq (both also
// updated in place; optimizer state is not seen by autograd), lr_and_step (f64 [2]).
const OpDef& adam_update_op = register_op({
    .name = "adam_update_",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor& p = in[0];
      bool ok = is_floating(p.dtype()) && p.is_contiguous();
      for (const Tensor& t : in.subspan(1, 3))
        ok = ok && t.shape() == p.shape() && t.dtype() == p.dtype();
      ok = ok && in[2].is_contiguous() && in[3].is_contiguous();
      DLF_CHECK(in[4].dtype() == DType::f64 && in[4].numel() == 2 && in[4].is_contiguous(),
                "adam_update_: lr_and_step must be a contiguous f64 tensor of 2, got ",
                dtype_name(in[4].dtype()), shape_str(in[4].shape()));
      DLF_CHECK(ok,
                "adam_update_: param, grad and state must share shape and floating dtype, with "
                "contiguous param and state (param ",
                dtype_name(p.dtype()), shape_str(p.shape()), ", grad ", dtype_name(in[1].dtype()),
                shape_str(in[1].shape()), ")");
      return {{p.shape(), p.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs) {
          kernels::visit_floating(in[0].dtype(), "adam_update_", [&](auto tag) {
            using T = typename decltype(tag)::type;
            using A = kernels::acc_t<T>;
            // Every per-step scalar is formed in double and rounded once, as PyTorch does: in f32
            // a 1 - beta1 taken from the rounded beta1 is off by 2e-7 relative, the same way
            // for every element, and that bias adds up coherently over the whole model.
            const double lr = in[4].data<double>()[0], t = in[4].data<double>()[1];
            const double wd = a.f("weight_decay");
            const double beta1 = a.f("beta1"), beta2 = a.f("beta2");
            const A b1 = A(beta1), b2 = A(beta2), one_minus_b1 = A(1 - beta1),
                    one_minus_b2 = A(1 - beta2), eps = A(a.f("eps"));
            const A step_size = A(lr / (1 - std::pow(beta1, t)));
            const A sqrt_c2 = A(std::sqrt(1 - std::pow(beta2, t)));
            const A shrink = A(a.b("decoupled") ? 1 - lr * wd : 1);
            const A l2 = A(a.b("decoupled") ? 0 : wd);
            const kernels::RowMajorData<T> grad(in[1]);
            T *p = in[0].data<T>(), *m = in[2].data<T>(), *v = in[3].data<T>();
            const T* g = grad.data();
            const int64_t n = in[0].numel();
            const auto update = [&](int64_t i) {
              const A pi = A(p[i]) * shrink, gi = A(g[i]) + l2 * A(p[i]);
              const A mi = b1 * A(m[i]) + one_minus_b1 * gi;
              const A vi = b2 * A(v[i]) + one_minus_b2 * gi * gi;
              m[i] = T(mi);
              v[i] = T(vi);
              p[i] = T(pi - step_size * (mi / (std::sqrt(vi) / sqrt_c2 + eps)));
            };
            // Both loops vectorised; threads from a few thousand elements (a memory-bound
            // update gains from the second core's bandwidth long before kParallelGrain).
            if (n > 2048) {
#pragma omp parallel for simd
              for (int64_t i = 0; i < n; ++i) update(i);
            } else {
#pragma omp simd
              for (int64_t i = 0; i < n; ++i) update(i);
            }
          });
        },
    // Per element: about 16 flops; param, grad and both moments read, three of them written.
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor>) -> Cost {
      const double bytes = static_cast<double>(in[0].nbytes());
      return {16.0 * static_cast<double>(in[0].numel()), 4 * bytes, 3 * bytes};
    },
    .inplace = 0,
    .also_writes = {2, 3},
});

constexpr int64_t kSquaresBlock = 16384;  // elements summed in order; blocks added in order

// Σ x² over every input, in order: each input's blocks summed in order, the inputs' sums added
// in order — the same f64 whatever the thread count, and the same as adding one input's at a
// time. The blocks of all inputs share one parallel loop: a model's gradients are mostly small,
// and a loop per input paid a fork for each.
const OpDef& sum_squares_op = register_op({
    .name = "sum_squares",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      for (const Tensor& x : in)
        DLF_CHECK(is_floating(x.dtype()), "sum_squares: needs a floating tensor, got ",
                  dtype_name(x.dtype()));
      return {{{}, DType::f64}};
    },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          struct Block {
            size_t input;
            int64_t begin, end;
          };
          std::vector<std::function<double(int64_t, int64_t)>> squares;  // per input
          std::vector<Block> blocks;
          for (size_t k = 0; k < in.size(); ++k) {
            kernels::visit_floating(in[k].dtype(), "sum_squares", [&](auto tag) {
              using T = typename decltype(tag)::type;
              auto rows = std::make_shared<const kernels::RowMajorData<T>>(in[k]);
              squares.push_back([rows](int64_t begin, int64_t end) {
                const T* d = rows->data();
                double s = 0;
#pragma omp simd reduction(+ : s)
                for (int64_t i = begin; i < end; ++i) s += double(d[i]) * double(d[i]);
                return s;
              });
            });
            const int64_t n = in[k].numel();
            for (int64_t begin = 0; begin < n; begin += kSquaresBlock)
              blocks.push_back({k, begin, std::min(n, begin + kSquaresBlock)});
          }
          std::vector<double> partial(blocks.size());
#pragma omp parallel for if (blocks.size() > 2)
          for (size_t b = 0; b < blocks.size(); ++b)
            partial[b] = squares[blocks[b].input](blocks[b].begin, blocks[b].end);
          double total = 0;
          for (size_t k = 0, b = 0; k < in.size(); ++k) {
            double sum = 0;
            for (; b < blocks.size() && blocks[b].input == k; ++b) sum += partial[b];
            total += sum;
          }
          *out[0].data<double>() = total;
        },
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor>) -> Cost {
      Cost c{.bytes_written = 8};
      for (const Tensor& x : in) {
        c.flops += 2.0 * static_cast<double>(x.numel());
        c.bytes_read += static_cast<double>(x.nbytes());
      }
      return c;
    },
});

}  // namespace

Tensor sum_squares(const Tensor& x) { return sum_squares(std::vector<Tensor>{x}); }

Tensor sum_squares(const std::vector<Tensor>& xs) {
  DLF_CHECK(!xs.empty(), "sum_squares: no tensors");
  return dispatch1(sum_squares_op, xs);
}

void adam_update_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, const Tensor& lr_and_step, const AdamHyper& h) {
  dispatch(adam_update_op, {param, grad, exp_avg, exp_avg_sq, lr_and_step},
           {{"beta1", h.beta1},
            {"beta2", h.beta2},
            {"eps", h.eps},
            {"weight_decay", h.weight_decay},
            {"decoupled", h.decoupled}});
}

}  // namespace dlf
