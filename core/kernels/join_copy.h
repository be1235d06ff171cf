// Strided element copies for kernels whose inputs may be strided, offset or broadcast:
// into a region of an output (cat) and into a row-major host buffer (RowMajorData).
#pragma once
#include <cstring>
#include <vector>

#include "core/kernels/convert.h"
#include "core/kernels/strided_loop.h"

namespace dlf::kernels {

/// Copies every element of `src` (converted to D) to dst + the element's index · dst strides.
template <typename D>
void copy_converted(D* dst, const std::vector<int64_t>& dst_byte_strides, const Tensor& src) {
  StridedOperands<2> ops{{reinterpret_cast<char*>(dst), static_cast<char*>(src.raw_data())},
                         {dst_byte_strides, broadcast_byte_strides(src, src.shape())}};
  visit_dtype(src.dtype(), [&](auto stag) {
    using S = typename decltype(stag)::type;
    strided_for<2>(src.shape(), ops,
                   [](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
                     if constexpr (std::is_same_v<D, S>) {
                       if (s[0] == sizeof(D) && s[1] == sizeof(S)) {
                         std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(D));
                         return;
                       }
                     }
                     for (int64_t i = 0; i < n; ++i) {
                       *reinterpret_cast<D*>(p[0] + i * s[0]) =
                           convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
                     }
                   });
  });
}

/// The elements of a tensor as a row-major array of T: the tensor's own buffer when it is
/// contiguous and of type T, else a converted copy.
template <typename T>
class RowMajorData {
 public:
  explicit RowMajorData(const Tensor& t) {
    if (t.is_contiguous() && t.dtype() == dtype_of<T>()) {
      data_ = t.data<T>();
      return;
    }
    copy_.resize(static_cast<size_t>(t.numel()));
    std::vector<int64_t> strides = contiguous_strides(t.shape());
    for (int64_t& s : strides) s *= static_cast<int64_t>(sizeof(T));
    copy_converted<T>(copy_.data(), strides, t);
    data_ = copy_.data();
  }
  const T* data() const { return data_; }
  const T& operator[](int64_t i) const { return data_[i]; }

 private:
  std::vector<T> copy_;
  const T* data_ = nullptr;
};

}  // namespace dlf::kernels
