// The adjoint of slice: zeros of the sliced input's shape with the gradient written into the
// slice. An op of its own so that it is differentiable in turn (its backward is slice).
#include <dlf/core/op.h>

#include <cstring>

#include "core/kernels/strided_copy.h"

namespace dlf {
namespace {

[[maybe_unused]] const OpDef& slice_backward_op = register_op({
    .name = "slice_backward",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      return {{a.ints("input_shape"), in[0].dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          Tensor& full = out[0];
          std::memset(full.raw_data(), 0, full.nbytes());
          const int64_t d = a.i("dim");
          Shape sizes = full.shape(), strides = full.strides();
          sizes[d] = in[0].shape()[d];
          const int64_t offset = a.i("start") * strides[d];
          strides[d] *= a.i("step");
          kernels::strided_copy(Tensor(full.storage(), sizes, strides, offset, full.dtype()),
                                in[0]);
        },
});

}  // namespace
}  // namespace dlf
