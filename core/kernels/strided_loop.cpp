#include "core/kernels/strided_loop.h"

namespace dlf::kernels {

std::vector<int64_t> broadcast_byte_strides(const Tensor& t, const Shape& shape) {
  const int64_t elem = static_cast<int64_t>(dtype_size(t.dtype()));
  const size_t lead = shape.size() - t.shape().size();
  std::vector<int64_t> out(shape.size(), 0);
  for (size_t d = 0; d < t.shape().size(); ++d) {
    out[lead + d] = t.shape()[d] == 1 && shape[lead + d] != 1 ? 0 : t.strides()[d] * elem;
  }
  return out;
}

}  // namespace dlf::kernels
