// Creating tensors: constants, ranges, random draws and host data.
#pragma once
#include <cstring>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/core/tensor.h>

namespace dlf {

/// What a factory makes: dtype and device.
struct TensorOptions {
  DType dtype = DType::f32;          ///< of the elements
  Device device = default_device();  ///< default_device() unless given
};

Tensor full(const Shape& shape, double value,
            TensorOptions options = {});                       ///< every element `value`
Tensor zeros(const Shape& shape, TensorOptions options = {});  ///< full(shape, 0)
Tensor ones(const Shape& shape, TensorOptions options = {});   ///< full(shape, 1)
Tensor zeros_like(const Tensor& t);  ///< zeros of t's shape, dtype and device
Tensor ones_like(const Tensor& t);   ///< ones of t's shape, dtype and device
/// start, start + step, ... up to (excluding) end.
Tensor arange(double start, double end, double step = 1, TensorOptions options = {});
Tensor arange(double end, TensorOptions options = {});  ///< arange(0, end)
/// Uniform in [0, 1).
Tensor rand(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
/// Standard normal.
Tensor randn(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
/// Uniform integers in [low, high); dtype i64 unless options say otherwise.
Tensor randint(int64_t low, int64_t high, const Shape& shape,
               TensorOptions options = {.dtype = DType::i64}, Generator* gen = nullptr);

/// A CPU tensor holding a copy of `values` (row-major) with the given shape.
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  DLF_CHECK(static_cast<int64_t>(values.size()) == numel(shape), "from_vector: ", values.size(),
            " values do not fill shape ", shape_str(shape));
  Tensor t = Tensor::empty(shape, dtype_of<T>(), kCPU);
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
  } else if (!values.empty()) {
    std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  }
  return t;
}
/// A 1-D CPU tensor.
template <typename T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, {static_cast<int64_t>(values.size())});
}

}  // namespace dlf
