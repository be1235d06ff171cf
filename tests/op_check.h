// The shared op-test harness: one call checks an op on a table row's inputs
//  - in f64 (the reference) against hand-computed values when given,
//  - in f32 and, where supported, bf16 against that f64 reference,
//  - on non-contiguous (strided) copies of every floating input, which must agree exactly
//    with the contiguous run.
#pragma once
#include <functional>
#include <vector>

#include "test_util.h"

namespace dlf::test {

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// The same values in a non-contiguous layout: every other element of a wider buffer.
inline Tensor strided_copy(const Tensor& x) {
  if (x.dim() == 0) return x;
  Shape wide = x.shape();
  wide.back() *= 2;
  Tensor buffer = zeros(wide, {.dtype = x.dtype()});
  Tensor view = buffer.slice(-1, 0, wide.back(), 2);
  view.copy_(x);
  return view;
}

inline std::vector<Tensor> convert_floating(const std::vector<Tensor>& in, DType dtype) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) out.push_back(t.defined() && is_floating(t.dtype()) ? t.to(dtype) : t);
  return out;
}

struct OpCheck {
  double f32_tol = 1e-5;  ///< atol = rtol for f32 against f64
  double bf16_tol = 0;    ///< 0 skips bf16; else atol = rtol for bf16 against f64
  bool strided = true;    ///< also run on strided copies of the inputs
};

/// Runs fn on `inputs` (given in f64) in f64, f32 and bf16, and on strided inputs.
/// Returns the f64 result for further hand-computed checks.
inline Tensor check_op(const OpFn& fn, const std::vector<Tensor>& inputs, OpCheck check = {}) {
  Tensor ref = fn(inputs);
  auto against_ref = [&](DType dtype, double tol) {
    INFO("dtype ", dtype_name(dtype));
    Tensor got = fn(convert_floating(inputs, dtype));
    if (is_floating(ref.dtype())) CHECK(got.dtype() == dtype);
    check_close(got, ref, tol, tol);
    return got;
  };
  Tensor f32 = against_ref(DType::f32, check.f32_tol);
  if (check.bf16_tol > 0) against_ref(DType::bf16, check.bf16_tol);
  if (check.strided) {
    INFO("strided inputs");
    std::vector<Tensor> f32_in = convert_floating(inputs, DType::f32);
    std::vector<Tensor> strided;
    for (const Tensor& t : f32_in)
      strided.push_back(t.defined() && is_floating(t.dtype()) ? strided_copy(t) : t);
    check_close(fn(strided), f32, 1e-6, 1e-6);
  }
  return ref;
}

/// Random f64 inputs of the given shapes from a fixed seed.
inline std::vector<Tensor> random_inputs(const std::vector<Shape>& shapes, uint64_t seed = 1) {
  Generator g(seed);
  std::vector<Tensor> out;
  for (const Shape& s : shapes) out.push_back(randn(s, {.dtype = DType::f64}, &g));
  return out;
}

}  // namespace dlf::test
