// The adjoint of slice: zeros of the sliced input's shape with the gradient written into the
// slice. An op of its own so that it is differentiable in turn (its backward is slice).
#include <dlf/core/op.h>

#include <cstring>

#include "core/kernels/strided_copy.h"

namespace dlf {
namespace {

// Zeroes what the slice [start, start + length·step) of `full` (fresh, contiguous) along dim
// `d` leaves out: with step 1, per index of the dims before d, the spans before and after it
// (the slice's own elements are written once, by the copy); otherwise all of it.
void zero_outside(const Tensor& full, int64_t d, int64_t start, int64_t length, int64_t step) {
  char* base = static_cast<char*>(full.raw_data());
  if (step != 1) {
    std::memset(base, 0, full.nbytes());
    return;
  }
  const Shape& shape = full.shape();
  const int64_t outer = numel(Shape(shape.begin(), shape.begin() + d));
  const int64_t inner_bytes = full.strides()[d] * int64_t(dtype_size(full.dtype()));
  const int64_t row = shape[d] * inner_bytes, head = start * inner_bytes,
                tail = (start + length) * inner_bytes;
#pragma omp parallel for if (outer * (row - tail + head) > (int64_t(1) << 20))
  for (int64_t o = 0; o < outer; ++o) {
    std::memset(base + o * row, 0, size_t(head));
    std::memset(base + o * row + tail, 0, size_t(row - tail));
  }
}

[[maybe_unused]] const OpDef& slice_backward_op = register_op({
    .name = "slice_backward",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      return {{a.ints("input_shape"), in[0].dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          Tensor& full = out[0];
          const int64_t d = a.i("dim");
          zero_outside(full, d, a.i("start"), in[0].shape()[d], a.i("step"));
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
