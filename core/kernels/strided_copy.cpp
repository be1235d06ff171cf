#include "core/kernels/strided_copy.h"

#include <cstring>

#include "core/kernels/convert.h"
#include "core/kernels/strided_loop.h"

namespace dlf::kernels {

// dst[i] = convert(src[i]) over dst's shape; src broadcasts to it; both may be strided.
void strided_copy(const Tensor& dst, const Tensor& src) {
  StridedOperands<2> ops{
      {static_cast<char*>(dst.raw_data()), static_cast<char*>(src.raw_data())},
      {broadcast_byte_strides(dst, dst.shape()), broadcast_byte_strides(src, dst.shape())}};
  visit_dtype(dst.dtype(), [&](auto dtag) {
    visit_dtype(src.dtype(), [&](auto stag) {
      using D = typename decltype(dtag)::type;
      using S = typename decltype(stag)::type;
      strided_for<2>(dst.shape(), ops,
                     [](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
                       if constexpr (std::is_same_v<D, S>) {
                         if (s[0] == sizeof(D) && s[1] == sizeof(S)) {
                           std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(D));
                           return;
                         }
                       }
                       if (s[0] == sizeof(D) && s[1] == sizeof(S)) {
                         D* d = reinterpret_cast<D*>(p[0]);
                         const S* x = reinterpret_cast<const S*>(p[1]);
                         for (int64_t i = 0; i < n; ++i) d[i] = convert<D>(x[i]);
                       } else {
                         for (int64_t i = 0; i < n; ++i) {
                           *reinterpret_cast<D*>(p[0] + i * s[0]) =
                               convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
                         }
                       }
                     });
    });
  });
}

Tensor dense_in(const Tensor& t, MemoryFormat format) {
  const bool dense = format == MemoryFormat::contiguous ? t.is_contiguous() : t.is_channels_last();
  if (dense) return t;
  Tensor copy = Tensor::empty(t.shape(), t.dtype(), t.device(), format);
  strided_copy(copy, t);
  return copy;
}

}  // namespace dlf::kernels
