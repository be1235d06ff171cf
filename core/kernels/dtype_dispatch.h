// Calls a templated lambda with the C++ type of a runtime dtype.
#pragma once
#include <dlf/core/dtype.h>
#include <dlf/error.h>

namespace dlf::kernels {

template <typename T>
struct TypeTag {
  using type = T;
};

/// fn(TypeTag<T>{}) for every dtype.
template <typename Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn(TypeTag<float>{});
    case DType::f64:
      return fn(TypeTag<double>{});
    case DType::bf16:
      return fn(TypeTag<bf16>{});
    case DType::i32:
      return fn(TypeTag<int32_t>{});
    case DType::i64:
      return fn(TypeTag<int64_t>{});
    case DType::b8:
      return fn(TypeTag<bool>{});
  }
  throw Error("bad dtype");
}

/// fn(TypeTag<T>{}) for f32, f64 and bf16; a dlf::Error naming `op` for the rest.
template <typename Fn>
decltype(auto) visit_floating(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn(TypeTag<float>{});
    case DType::f64:
      return fn(TypeTag<double>{});
    case DType::bf16:
      return fn(TypeTag<bf16>{});
    default:
      break;
  }
  throw Error(dlf::detail::concat(op, ": dtype ", dtype_name(t),
                                  " is not supported (expected f32, f64 or bf16)"));
}

/// The type arithmetic runs in: float for bf16, T otherwise.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, bf16>, float, T>;

/// acc_t's dtype: what statistics and losses of `t` data are kept in (f32 for bf16).
inline DType acc_dtype(DType t) { return t == DType::bf16 ? DType::f32 : t; }

}  // namespace dlf::kernels
