// Backward ops that scatter a gradient back through saved indices: embedding's rows and
// max_pool2d's picks. Deterministic: each output row (plane) is summed in a fixed order.
#include <dlf/core/op.h>

#include <algorithm>
#include <cstring>

#include "core/kernels/row_major.h"
#include "core/kernels/scatter_add.h"

namespace dlf {
namespace {

// grad [..., dim] and indices [...] -> weight gradient [num, dim].
const OpDef& embedding_backward_op = register_op({
    .name = "embedding_backward",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      return {{{a.i("num_embeddings"), in[0].shape().back()}, in[0].dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          Tensor& w = out[0];
          std::memset(w.raw_data(), 0, w.nbytes());
          const int64_t dim = w.shape()[1], rows = in[1].numel();
          kernels::RowMajorData<int64_t> index(in[1]);
          kernels::visit_floating(w.dtype(), "embedding_backward", [&](auto tag) {
            using T = typename decltype(tag)::type;
            kernels::RowMajorData<T> g(in[0]);
            // Columns split across threads; every thread walks all rows in order.
            constexpr int64_t kBlock = 64;
#pragma omp parallel for if (rows * dim > 65536)
            for (int64_t c0 = 0; c0 < dim; c0 += kBlock) {
              kernels::scatter_add_rows(w.data<T>() + c0, dim, index.data(), g.data() + c0, dim,
                                        rows, std::min(kBlock, dim - c0));
            }
          });
        },
});

// grad [N, C, Ho, Wo] and indices (h * W + w within each plane) -> input gradient [N, C, H, W].
const OpDef& max_pool2d_backward_op = register_op({
    .name = "max_pool2d_backward",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      return {{a.ints("input_shape"), in[0].dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          Tensor& x = out[0];
          std::memset(x.raw_data(), 0, x.nbytes());
          const int64_t planes = x.shape()[0] * x.shape()[1];
          const int64_t plane_in = x.shape()[2] * x.shape()[3];
          const int64_t plane_out = in[0].shape()[2] * in[0].shape()[3];
          kernels::RowMajorData<int64_t> index(in[1]);
          kernels::visit_floating(x.dtype(), "max_pool2d_backward", [&](auto tag) {
            using T = typename decltype(tag)::type;
            kernels::RowMajorData<T> g(in[0]);
#pragma omp parallel for if (x.numel() > 32768)
            for (int64_t p = 0; p < planes; ++p) {
              kernels::scatter_add_rows(x.data<T>() + p * plane_in, 1, index.data() + p * plane_out,
                                        g.data() + p * plane_out, 1, plane_out, 1);
            }
          });
        },
});

}  // namespace
}  // namespace dlf
