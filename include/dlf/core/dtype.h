// Element types: f32, f64, bf16, i32, i64, bool.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace dlf {

/// Element types.
enum class DType : uint8_t { f32, f64, bf16, i32, i64, b8 };

/// bfloat16: the top 16 bits of an IEEE f32. Conversion rounds to nearest even.
struct bf16 {
  uint16_t bits = 0;  ///< the upper 16 bits of the float
  bf16() = default;
  /// Rounds `f` to the nearest bf16 (ties to even).
  bf16(float f) {  // NOLINT(google-explicit-constructor): behaves like a float
    uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40);  // keep NaN a (quiet) NaN
    } else {
      bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  /// The float it stands for.
  operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
};

size_t dtype_size(DType t);       ///< bytes per element
const char* dtype_name(DType t);  ///< "f32", "bf16", ...
bool is_floating(DType t);        ///< f32, f64 or bf16
/// Parses "f32", "f64", "bf16", "i32", "i64", "bool".
DType parse_dtype(const std::string& name);

/// The DType of C++ type T (float, double, bf16, int32_t, int64_t, bool).
///@{
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<bf16>() {
  return DType::bf16;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::i64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::b8;
}
///@}

}  // namespace dlf
