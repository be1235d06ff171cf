// Value conversion between element types (bf16 goes through float).
#pragma once
#include <type_traits>

#include "core/kernels/dtype_dispatch.h"

namespace dlf::kernels {

template <typename D, typename S>
inline D convert(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (std::is_same_v<D, bool>) {
    return static_cast<acc_t<S>>(s) != acc_t<S>(0);
  } else if constexpr (std::is_same_v<D, bf16>) {
    return bf16(static_cast<float>(static_cast<acc_t<S>>(s)));
  } else {
    return static_cast<D>(static_cast<acc_t<S>>(s));
  }
}

}  // namespace dlf::kernels
