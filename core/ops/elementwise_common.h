// What the element-wise op files share: dtype checks, broadcasting with the op's name in the
// error, the cost formula and a dtype visit limited to the dtypes an op accepts.
#pragma once
#include <dlf/core/op.h>

#include "core/kernels/dtype_dispatch.h"

namespace dlf::elementwise {

/// The dtypes an op accepts; each set contains the one before it.
enum class DTypeSet { floating, numeric, all };

/// FLOPs per element: arithmetic, comparisons and selects count 1; a transcendental function
/// (exp, log, tanh, erf, pow) counts kTranscendental, about the polynomial it evaluates.
constexpr double kArithmetic = 1;
constexpr double kTranscendental = 10;
/// A Philox-4x32-10 draw (ten rounds of two 32-bit products and four xors or adds): what each
/// element of rand costs besides its own arithmetic.
constexpr double kPhiloxDraw = 10 * 6;

/// Throws dlf::Error naming the op, the dtype and the shape when `set` lacks t's dtype.
void check_dtype(const std::string& op, DTypeSet set, const Tensor& t);
/// Throws dlf::Error naming the op and both dtypes and shapes unless a and b share a dtype.
void check_same_dtype(const std::string& op, const Tensor& a, const Tensor& b);
/// The broadcast shape of a and b; the error names the op and both shapes.
Shape broadcast(const std::string& op, const Shape& a, const Shape& b);
/// Throws dlf::Error naming the op unless `value` is representable in t's dtype (integral for
/// the integer dtypes): scalars take the tensor's dtype.
void check_scalar(const std::string& op, double value, const Tensor& t);

/// The layout of an element-wise output of `shape`: that of the first input of that shape, so
/// that channels-last activations stay channels last (PyTorch's rule for dense inputs).
MemoryFormat output_format(Inputs in, const Shape& shape);

/// Bytes of the inputs (at their own sizes) and the output, and `flops` per output element.
std::function<Cost(Inputs, const Attrs&, std::span<const Tensor>)> cost_per_element(double flops);

/// OpDef::pointwise from `make_fn(attrs)`, which gives the op's element function of `Arity`
/// arguments (the one its loop kernel maps), here on floats.
template <size_t Arity, typename MakeFn>
auto pointwise(MakeFn make_fn) {
  static_assert(Arity == 1 || Arity == 2);
  return [make_fn](std::span<const float* const> in, float* out, int64_t n, const Attrs& a) {
    const auto f = make_fn(a);
    float* __restrict o = out;
    const float* __restrict x = in[0];
    if constexpr (Arity == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    } else {
      const float* __restrict y = in[1];
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    }
  };
}

/// fn(TypeTag<T>{}) for the dtypes of `Set` only (the op's infer has already refused others).
template <DTypeSet Set, typename Fn>
decltype(auto) visit(DType t, Fn&& fn) {
  using kernels::TypeTag;
  if constexpr (Set != DTypeSet::floating) {
    if (t == DType::i32) return fn(TypeTag<int32_t>{});
    if (t == DType::i64) return fn(TypeTag<int64_t>{});
  }
  if constexpr (Set == DTypeSet::all) {
    if (t == DType::b8) return fn(TypeTag<bool>{});
  }
  return kernels::visit_floating(t, "element-wise op", fn);
}

}  // namespace dlf::elementwise
