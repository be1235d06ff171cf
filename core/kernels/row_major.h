// A tensor's elements as a row-major host array of T, copied only when they are not already.
#pragma once
#include <dlf/core/tensor.h>

#include "core/kernels/strided_copy.h"

namespace dlf::kernels {

/// The tensor's own buffer when it is contiguous and of type T, else a converted copy.
template <typename T>
class RowMajorData {
 public:
  explicit RowMajorData(const Tensor& t) {
    if (t.is_contiguous() && t.dtype() == dtype_of<T>()) {
      data_ = t.data<T>();
      return;
    }
    copy_ = Tensor::empty(t.shape(), dtype_of<T>(), t.device());
    strided_copy(copy_, t);
    data_ = copy_.data<T>();
  }
  const T* data() const { return data_; }
  const T& operator[](int64_t i) const { return data_[i]; }

 private:
  Tensor copy_;
  const T* data_ = nullptr;
};

}  // namespace dlf::kernels
