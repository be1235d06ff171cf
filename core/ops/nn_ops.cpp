// Layer building blocks: embedding lookup and dropout.
#include <dlf/core/op.h>
#include <dlf/core/ops/nn_ops.h>

#include <cmath>
#include <cstring>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/row_major.h"

namespace dlf {
namespace {

const OpDef& embedding_op = register_op({
    .name = "embedding",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor &weight = in[0], &indices = in[1];
      DLF_CHECK(weight.dim() == 2, "embedding: weight must be [num, dim], got shape ",
                shape_str(weight.shape()));
      DLF_CHECK(is_floating(weight.dtype()), "embedding: weight dtype must be floating, got ",
                dtype_name(weight.dtype()));
      DLF_CHECK(indices.dtype() == DType::i32 || indices.dtype() == DType::i64,
                "embedding: indices must be i32 or i64, got ", dtype_name(indices.dtype()),
                " (shape ", shape_str(indices.shape()), ")");
      Shape out = indices.shape();
      out.push_back(weight.shape()[1]);
      return {{out, weight.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          const Tensor &weight = in[0], &indices = in[1];
          const int64_t num = weight.shape()[0], width = weight.shape()[1];
          const int64_t n = indices.numel();
          kernels::RowMajorData<int64_t> idx(indices);
          for (int64_t i = 0; i < n; ++i) {
            DLF_CHECK(idx[i] >= 0 && idx[i] < num, "embedding: index ", idx[i],
                      " is out of range for a table of ", num, " rows (weight shape ",
                      shape_str(weight.shape()), ")");
          }
          kernels::visit_floating(weight.dtype(), "embedding", [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* w = weight.data<T>();
            const int64_t row_stride = weight.strides()[0], col_stride = weight.strides()[1];
            T* y = out[0].data<T>();
#pragma omp parallel for if (n * width > 32768)
            for (int64_t i = 0; i < n; ++i) {
              const T* row = w + idx[i] * row_stride;
              T* dst = y + i * width;
              if (col_stride == 1) {
                std::memcpy(dst, row, static_cast<size_t>(width) * sizeof(T));
              } else {
                for (int64_t c = 0; c < width; ++c) dst[c] = row[c * col_stride];
              }
            }
          });
        },
    // Only the looked-up rows are read, not the whole table.
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor> out) -> Cost {
      const double gathered = static_cast<double>(out[0].nbytes());
      return {0, gathered + static_cast<double>(in[1].nbytes()), gathered};
    },
});

// Keep an element when its 32-bit Philox word is at least p · 2^32.
uint64_t drop_threshold(double p) { return static_cast<uint64_t>(std::ldexp(p, 32)); }

const OpDef& dropout_op = register_op({
    .name = "dropout",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      DLF_CHECK(is_floating(in[0].dtype()), "dropout: dtype must be floating, got ",
                dtype_name(in[0].dtype()), " (shape ", shape_str(in[0].shape()), ")");
      return {{in[0].shape(), in[0].dtype()}, {in[0].shape(), DType::b8}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const uint64_t seed = static_cast<uint64_t>(a.i("seed"));
          const uint64_t offset = static_cast<uint64_t>(a.i("offset"));
          const uint64_t threshold = drop_threshold(a.f("p"));
          const double scale = 1.0 / (1.0 - a.f("p"));
          kernels::visit_floating(in[0].dtype(), "dropout", [&](auto tag) {
            using T = typename decltype(tag)::type;
            using A = kernels::acc_t<T>;
            kernels::RowMajorData<T> x(in[0]);
            T* y = out[0].data<T>();
            bool* mask = out[1].data<bool>();
            const int64_t n = out[0].numel();
#pragma omp parallel for if (n > 16384)
            for (int64_t i = 0; i < n; ++i) {
              const bool keep = philox(seed, offset + static_cast<uint64_t>(i))[0] >= threshold;
              mask[i] = keep;
              y[i] = keep ? T(static_cast<A>(x[i]) * static_cast<A>(scale)) : T(0);
            }
          });
        },
    // One multiply per element. The Philox draw (elementwise::kPhiloxDraw) is left out: recompute
    // and rematerialisation take dropout for a cheap element-wise op to run again
    // (costly_to_recompute), as Megatron-LM's selective recompute does.
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor> out) -> Cost {
      return {static_cast<double>(in[0].numel()), static_cast<double>(in[0].nbytes()),
              static_cast<double>(out[0].nbytes() + out[1].nbytes())};
    },
    .redraw =
        [](Inputs in, Attrs& a) {
          draw_random_attrs(default_generator(), static_cast<uint64_t>(in[0].numel()), a);
        },
});

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return dispatch1(embedding_op, {weight, indices});
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  DLF_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p, " (shape ",
            shape_str(x.shape()), ")");
  if (!training || p == 0) return x;
  Generator& g = gen ? *gen : default_generator();
  Attrs a{{"p", p}};
  draw_random_attrs(g, static_cast<uint64_t>(x.numel()), a);
  return dispatch1(dropout_op, {x}, std::move(a));
}

}  // namespace dlf
