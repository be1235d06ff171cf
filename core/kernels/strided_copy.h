// Element-wise copy with dtype conversion between arbitrarily strided tensors.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf::kernels {

/// dst[i] = convert(src[i]) over dst's shape; src broadcasts to it; both may be strided.
void strided_copy(const Tensor& dst, const Tensor& src);

/// `t` itself when it is dense in `format` already, else a copy that is (for kernels: no
/// dispatch, no autograd).
Tensor dense_in(const Tensor& t, MemoryFormat format);

}  // namespace dlf::kernels
