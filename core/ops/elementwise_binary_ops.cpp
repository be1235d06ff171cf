// Binary element-wise ops and comparisons with NumPy broadcasting. f32/bf16 from kParallelGrain
// elements run on oneDNN's binary primitive where it has a fast kernel for the layout;
// everything else loops.
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>

#include <cmath>
#include <optional>

#include "core/kernels/activation_math.h"
#include "core/kernels/elementwise_loop.h"
#include "core/kernels/elementwise_onednn.h"
#include "core/ops/elementwise_common.h"

namespace dlf {
namespace {

using dnnl::algorithm;
using elementwise::DTypeSet;
using elementwise::kArithmetic;
using elementwise::kTranscendental;

/// oneDNN's algorithm for an op, and the one computing it with the operands exchanged (for
/// when only b has the full shape: oneDNN 2.6 broadcasts src1 only).
struct OnednnBinary {
  std::optional<algorithm> direct;
  std::optional<algorithm> swapped;
};

template <bool Compare, typename Fn>
std::function<void(std::span<const float* const>, float*, int64_t, const Attrs&)>
pointwise_unless_compare(Fn fn) {
  if constexpr (Compare) {
    return {};  // a bool output: not fused
  } else {
    return elementwise::pointwise<2>([fn](const Attrs&) { return fn; });
  }
}

/// Registers `name`: out = fn(a, b), bool when Compare, else of the operands' dtype.
template <DTypeSet Set, bool Compare, typename Fn>
const OpDef& register_binary(std::string name, double flops, OnednnBinary onednn, Fn fn) {
  return register_op({
      .name = name,
      .infer = [name](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
        elementwise::check_same_dtype(name, in[0], in[1]);
        elementwise::check_dtype(name, Set, in[0]);
        const Shape shape = elementwise::broadcast(name, in[0].shape(), in[1].shape());
        return {
            {shape, Compare ? DType::b8 : in[0].dtype(), elementwise::output_format(in, shape)}};
      },
      .kernel =
          [onednn, fn](Inputs in, const Attrs&, Outputs out) {
            if (onednn.direct && kernels::onednn_binary(*onednn.direct, in[0], in[1], out[0]))
              return;
            if (onednn.swapped && kernels::onednn_binary(*onednn.swapped, in[1], in[0], out[0]))
              return;
            elementwise::visit<Set>(in[0].dtype(), [&](auto tag) {
              using T = typename decltype(tag)::type;
              kernels::map_elements<std::conditional_t<Compare, bool, T>, T, T>(out[0], in, fn);
            });
          },
      .cost = elementwise::cost_per_element(flops),
      .pointwise = pointwise_unless_compare<Compare>(fn),
  });
}

template <typename X>
bool is_nan(X x) {
  if constexpr (std::is_floating_point_v<X>) return std::isnan(x);
  return false;
}

constexpr OnednnBinary commutative(algorithm alg) { return {alg, alg}; }

const OpDef& add_op = register_binary<DTypeSet::numeric, false>(
    "add", kArithmetic, commutative(algorithm::binary_add), [](auto a, auto b) { return a + b; });
const OpDef& sub_op = register_binary<DTypeSet::numeric, false>(
    "sub", kArithmetic, {algorithm::binary_sub, {}}, [](auto a, auto b) { return a - b; });
const OpDef& mul_op = register_binary<DTypeSet::numeric, false>(
    "mul", kArithmetic, commutative(algorithm::binary_mul), [](auto a, auto b) { return a * b; });
const OpDef& div_op = register_binary<DTypeSet::floating, false>(
    "div", kArithmetic, {algorithm::binary_div, {}}, [](auto a, auto b) { return a / b; });
const OpDef& pow_op = register_binary<DTypeSet::floating, false>(
    "pow", kTranscendental, {}, [](auto a, auto b) { return std::pow(a, b); });
// NaN in either operand gives NaN on the loop path.
// SwiGLU's gate: silu(a) · b in one pass (the composite reads a twice and writes silu(a)).
const OpDef& swiglu_op = register_binary<DTypeSet::floating, false>(
    "swiglu", kTranscendental + 4, {}, [](auto a, auto b) { return kernels::silu_of(a) * b; });
const OpDef& maximum_op = register_binary<DTypeSet::numeric, false>(
    "maximum", kArithmetic, commutative(algorithm::binary_max),
    [](auto a, auto b) { return a > b || is_nan(a) ? a : b; });
const OpDef& minimum_op = register_binary<DTypeSet::numeric, false>(
    "minimum", kArithmetic, commutative(algorithm::binary_min),
    [](auto a, auto b) { return a < b || is_nan(a) ? a : b; });

const OpDef& eq_op = register_binary<DTypeSet::all, true>(
    "eq", kArithmetic, commutative(algorithm::binary_eq), [](auto a, auto b) { return a == b; });
const OpDef& ne_op = register_binary<DTypeSet::all, true>(
    "ne", kArithmetic, commutative(algorithm::binary_ne), [](auto a, auto b) { return a != b; });
const OpDef& lt_op = register_binary<DTypeSet::numeric, true>(
    "lt", kArithmetic, {algorithm::binary_lt, algorithm::binary_gt},
    [](auto a, auto b) { return a < b; });
const OpDef& le_op = register_binary<DTypeSet::numeric, true>(
    "le", kArithmetic, {algorithm::binary_le, algorithm::binary_ge},
    [](auto a, auto b) { return a <= b; });
const OpDef& gt_op = register_binary<DTypeSet::numeric, true>(
    "gt", kArithmetic, {algorithm::binary_gt, algorithm::binary_lt},
    [](auto a, auto b) { return a > b; });
const OpDef& ge_op = register_binary<DTypeSet::numeric, true>(
    "ge", kArithmetic, {algorithm::binary_ge, algorithm::binary_le},
    [](auto a, auto b) { return a >= b; });

// `value` as a 0-dim tensor of x's dtype and device, for a comparison to broadcast.
Tensor scalar_operand(const OpDef& op, const Tensor& x, double value) {
  elementwise::check_scalar(op.name, value, x);
  DLF_CHECK(x.dtype() != DType::b8 || value == 0 || value == 1, op.name, ": a bool tensor (shape ",
            shape_str(x.shape()), ") compares with 0 or 1, not ", value);
  return full({}, value, {.dtype = x.dtype(), .device = x.device()});
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return dispatch1(add_op, {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return dispatch1(sub_op, {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return dispatch1(mul_op, {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return dispatch1(div_op, {a, b}); }
Tensor pow(const Tensor& a, const Tensor& b) { return dispatch1(pow_op, {a, b}); }
Tensor swiglu(const Tensor& a, const Tensor& b) { return dispatch1(swiglu_op, {a, b}); }
Tensor maximum(const Tensor& a, const Tensor& b) { return dispatch1(maximum_op, {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return dispatch1(minimum_op, {a, b}); }

Tensor eq(const Tensor& a, const Tensor& b) { return dispatch1(eq_op, {a, b}); }
Tensor ne(const Tensor& a, const Tensor& b) { return dispatch1(ne_op, {a, b}); }
Tensor lt(const Tensor& a, const Tensor& b) { return dispatch1(lt_op, {a, b}); }
Tensor le(const Tensor& a, const Tensor& b) { return dispatch1(le_op, {a, b}); }
Tensor gt(const Tensor& a, const Tensor& b) { return dispatch1(gt_op, {a, b}); }
Tensor ge(const Tensor& a, const Tensor& b) { return dispatch1(ge_op, {a, b}); }

Tensor eq(const Tensor& a, double b) { return eq(a, scalar_operand(eq_op, a, b)); }
Tensor ne(const Tensor& a, double b) { return ne(a, scalar_operand(ne_op, a, b)); }
Tensor lt(const Tensor& a, double b) { return lt(a, scalar_operand(lt_op, a, b)); }
Tensor le(const Tensor& a, double b) { return le(a, scalar_operand(le_op, a, b)); }
Tensor gt(const Tensor& a, double b) { return gt(a, scalar_operand(gt_op, a, b)); }
Tensor ge(const Tensor& a, double b) { return ge(a, scalar_operand(ge_op, a, b)); }

}  // namespace dlf
