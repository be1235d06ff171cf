// Unary element-wise ops and the tensor-with-scalar forms. f32/bf16 from kParallelGrain elements
// run on oneDNN (eltwise, or binary with the scalar as a one-element operand) where it has a
// fast kernel; the rest loop.
#include <dlf/core/ops/elementwise.h>

#include <cmath>
#include <numbers>

#include "core/kernels/activation_math.h"
#include "core/kernels/elementwise_loop.h"
#include "core/kernels/elementwise_onednn.h"
#include "core/kernels/onednn_util.h"
#include "core/ops/elementwise_common.h"

namespace dlf {
namespace {

using dnnl::algorithm;
using elementwise::DTypeSet;
using elementwise::kArithmetic;
using elementwise::kTranscendental;

/// The oneDNN path of an op for its attrs: fills out and returns true, or returns false.
using OnednnKernel = std::function<bool(const Tensor& x, const Attrs&, const Tensor& out)>;

OnednnKernel eltwise(algorithm alg, float alpha = 0, float beta = 0) {
  return [=](const Tensor& x, const Attrs&, const Tensor& out) {
    return kernels::onednn_eltwise(alg, alpha, beta, x, out);
  };
}

/// x (op) scalar as a oneDNN binary whose src1 is a one-element f32 tensor holding the scalar:
/// the value is data, not part of the primitive, so a changing scalar creates no primitives.
OnednnKernel with_scalar_operand(algorithm alg) {
  return [alg](const Tensor& x, const Attrs& a, const Tensor& out) {
    if (!kernels::onednn_supports(x.dtype()) || !kernels::worth_onednn(out)) return false;
    Tensor scalar = Tensor::empty({}, DType::f32, kCPU);
    *scalar.data<float>() = static_cast<float>(a.f("scalar"));
    return kernels::onednn_binary(alg, x, scalar, out);
  };
}

/// An op attribute-free element function, for register_unary.
template <typename Fn>
auto fixed(Fn fn) {
  return [fn](const Attrs&) { return fn; };
}

/// Registers a unary op: `make_fn(attrs)` gives the element function of the loop path.
/// Ops with a "scalar" attribute check that it fits the tensor's dtype.
template <DTypeSet Set, typename MakeFn>
const OpDef& register_unary(std::string name, double flops, OnednnKernel onednn, MakeFn make_fn,
                            bool has_scalar = false) {
  return register_op({
      .name = name,
      .infer = [name, has_scalar](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
        elementwise::check_dtype(name, Set, in[0]);
        if (has_scalar) elementwise::check_scalar(name, a.f("scalar"), in[0]);
        return {{in[0].shape(), in[0].dtype(), in[0].memory_format()}};
      },
      .kernel =
          [onednn, make_fn](Inputs in, const Attrs& a, Outputs out) {
            if (onednn(in[0], a, out[0])) return;
            elementwise::visit<Set>(in[0].dtype(), [&](auto tag) {
              using T = typename decltype(tag)::type;
              kernels::map_elements<T, T>(out[0], in, make_fn(a));
            });
          },
      .cost = elementwise::cost_per_element(flops),
      .pointwise = elementwise::pointwise<1>(make_fn),
  });
}

using kernels::gelu_erf_derivative;
using kernels::gelu_erf_of;
using kernels::gelu_tanh_derivative;
using kernels::gelu_tanh_of;
using kernels::sigmoid_of;

const OpDef& neg_op =
    register_unary<DTypeSet::numeric>("neg", kArithmetic, eltwise(algorithm::eltwise_linear, -1, 0),
                                      fixed([](auto x) { return -x; }));
const OpDef& exp_op =
    register_unary<DTypeSet::floating>("exp", kTranscendental, eltwise(algorithm::eltwise_exp),
                                       fixed([](auto x) { return std::exp(x); }));
const OpDef& log_op =
    register_unary<DTypeSet::floating>("log", kTranscendental, eltwise(algorithm::eltwise_log),
                                       fixed([](auto x) { return std::log(x); }));
const OpDef& sqrt_op =
    register_unary<DTypeSet::floating>("sqrt", kArithmetic, eltwise(algorithm::eltwise_sqrt),
                                       fixed([](auto x) { return std::sqrt(x); }));
const OpDef& rsqrt_op = register_unary<DTypeSet::floating>(
    "rsqrt", 2 * kArithmetic, eltwise(algorithm::eltwise_pow, 1, -0.5f),
    fixed([](auto x) { return decltype(x)(1) / std::sqrt(x); }));
const OpDef& abs_op = register_unary<DTypeSet::numeric>(
    "abs", kArithmetic, eltwise(algorithm::eltwise_abs), fixed([](auto x) { return std::abs(x); }));
const OpDef& tanh_op =
    register_unary<DTypeSet::floating>("tanh", kTranscendental, eltwise(algorithm::eltwise_tanh),
                                       fixed([](auto x) { return std::tanh(x); }));
const OpDef& sigmoid_op = register_unary<DTypeSet::floating>(
    "sigmoid", kTranscendental + 2, eltwise(algorithm::eltwise_logistic),
    fixed([](auto x) { return sigmoid_of(x); }));
const OpDef& relu_op = register_unary<DTypeSet::floating>(
    "relu", kArithmetic, eltwise(algorithm::eltwise_relu),
    fixed([](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; }));  // keeps NaN

// oneDNN 2.6 has no erf eltwise: loops only.
const OpDef& erf_op = register_unary<DTypeSet::floating>(
    "erf", kTranscendental, [](const Tensor&, const Attrs&, const Tensor&) { return false; },
    fixed([](auto x) { return std::erf(x); }));

// oneDNN 2.6 has no sin, cos, tan, log1p, expm1, sign, floor or ceil eltwise: loops only.
OnednnKernel none() {
  return [](const Tensor&, const Attrs&, const Tensor&) { return false; };
}
const OpDef& sin_op = register_unary<DTypeSet::floating>("sin", kTranscendental, none(),
                                                         fixed([](auto x) { return std::sin(x); }));
const OpDef& cos_op = register_unary<DTypeSet::floating>("cos", kTranscendental, none(),
                                                         fixed([](auto x) { return std::cos(x); }));
const OpDef& tan_op = register_unary<DTypeSet::floating>("tan", kTranscendental, none(),
                                                         fixed([](auto x) { return std::tan(x); }));
const OpDef& log1p_op = register_unary<DTypeSet::floating>(
    "log1p", kTranscendental, none(), fixed([](auto x) { return std::log1p(x); }));
const OpDef& expm1_op = register_unary<DTypeSet::floating>(
    "expm1", kTranscendental, none(), fixed([](auto x) { return std::expm1(x); }));
const OpDef& square_op = register_unary<DTypeSet::numeric>(
    "square", kArithmetic, eltwise(algorithm::eltwise_square), fixed([](auto x) { return x * x; }));
const OpDef& reciprocal_op = register_unary<DTypeSet::floating>(
    "reciprocal", kArithmetic, eltwise(algorithm::eltwise_pow, 1, -1),
    fixed([](auto x) { return decltype(x)(1) / x; }));
const OpDef& sign_op = register_unary<DTypeSet::numeric>(
    "sign", kArithmetic, none(), fixed([](auto x) {
      using X = decltype(x);
      return x > X(0) ? X(1) : x < X(0) ? X(-1) : x;  // sign(0) = 0, sign(NaN) = NaN
    }));
const OpDef& floor_op = register_unary<DTypeSet::floating>(
    "floor", kArithmetic, none(), fixed([](auto x) { return std::floor(x); }));
const OpDef& ceil_op = register_unary<DTypeSet::floating>(
    "ceil", kArithmetic, none(), fixed([](auto x) { return std::ceil(x); }));
// Halves to even, as torch.round: std::nearbyint in the default rounding mode.
const OpDef& round_op = register_unary<DTypeSet::floating>(
    "round", kArithmetic, none(), fixed([](auto x) { return std::nearbyint(x); }));
const OpDef& clamp_op = register_unary<DTypeSet::floating>(
    "clamp", 2 * kArithmetic,
    [](const Tensor& x, const Attrs& a, const Tensor& out) {
      return kernels::onednn_eltwise(algorithm::eltwise_clip_v2, float(a.f("min")),
                                     float(a.f("max")), x, out);
    },
    [](const Attrs& a) {
      return [lo = a.f("min"), hi = a.f("max")](auto x) {
        using X = decltype(x);
        return x < X(lo) ? X(lo) : x > X(hi) ? X(hi) : x;  // keeps NaN
      };
    });

bool tanh_form(const Attrs& a) { return a.s("approximation") == "tanh"; }
// The erf form through oneDNN; the tanh form in the loop, where gelu_tanh_of vectorises. One
// loop per form: a form chosen inside the loop would keep it scalar.
const OpDef& gelu_op = register_op({
    .name = "gelu",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      elementwise::check_dtype("gelu", DTypeSet::floating, in[0]);
      return {{in[0].shape(), in[0].dtype(), in[0].memory_format()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const bool tanh = tanh_form(a);
          if (!tanh && kernels::onednn_eltwise(algorithm::eltwise_gelu_erf, 0, 0, in[0], out[0])) {
            return;
          }
          elementwise::visit<DTypeSet::floating>(in[0].dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if (tanh) {
              kernels::map_elements<T, T>(out[0], in, [](auto x) { return gelu_tanh_of(x); });
            } else {
              kernels::map_elements<T, T>(out[0], in, [](auto x) { return gelu_erf_of(x); });
            }
          });
        },
    .cost = elementwise::cost_per_element(kTranscendental + 5),
    .pointwise =
        [](std::span<const float* const> in, float* out, int64_t n, const Attrs& a) {
          if (tanh_form(a)) {
            elementwise::pointwise<1>(fixed([](auto x) { return gelu_tanh_of(x); }))(in, out, n, a);
          } else {
            elementwise::pointwise<1>(fixed([](auto x) { return gelu_erf_of(x); }))(in, out, n, a);
          }
        },
});

// What a fused activation backward gives: grad · act'(x), of x's shape and dtype.
std::vector<TensorMeta> activation_backward_infer(const char* name, Inputs in) {
  elementwise::check_dtype(name, DTypeSet::floating, in[1]);
  DLF_CHECK(in[0].shape() == in[1].shape() && in[0].dtype() == in[1].dtype(), name, ": grad ",
            dtype_name(in[0].dtype()), shape_str(in[0].shape()), " does not match x ",
            dtype_name(in[1].dtype()), shape_str(in[1].shape()));
  return {{in[1].shape(), in[1].dtype(), elementwise::output_format(in, in[1].shape())}};
}

// gelu's first-order backward, fused: inputs grad and x (one shape), output grad · gelu'(x).
// Both forms in the loop: oneDNN 2.6's gelu_erf backward took 2.2 ms where the loop takes 1.6
// on ViT-tiny's [64, 50, 768] (Zen 5, 2 threads).
const OpDef& gelu_backward_op = register_op({
    .name = "gelu_backward",
    .infer = [](Inputs in, const Attrs&) { return activation_backward_infer("gelu_backward", in); },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const bool tanh = tanh_form(a);
          elementwise::visit<DTypeSet::floating>(in[1].dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if (tanh) {
              kernels::map_elements<T, T, T>(
                  out[0], in, [](auto g, auto x) { return g * gelu_tanh_derivative(x); });
            } else {
              kernels::map_elements<T, T, T>(
                  out[0], in, [](auto g, auto x) { return g * gelu_erf_derivative(x); });
            }
          });
        },
    .cost =
        [](Inputs in, const Attrs& a, std::span<const Tensor> out) {
          // tanh's derivative reuses its tanh; erf's needs an erfc and an exp
          return elementwise::cost_per_element(tanh_form(a) ? kTranscendental + 10
                                                            : 2 * kTranscendental + 8)(in, a, out);
        },
    .pointwise =
        [](std::span<const float* const> in, float* out, int64_t n, const Attrs& a) {
          if (tanh_form(a)) {
            elementwise::pointwise<2>(
                fixed([](auto g, auto x) { return g * gelu_tanh_derivative(x); }))(in, out, n, a);
          } else {
            elementwise::pointwise<2>(
                fixed([](auto g, auto x) { return g * gelu_erf_derivative(x); }))(in, out, n, a);
          }
        },
});

// SiLU (swish with beta 1): x · sigmoid(x), and its fused first-order backward
// g · s (1 + x (1 - s)) — one pass each where the composite took five. Loops only: through
// exp_vectorizable they outrun oneDNN's AVX2 swish (0.19 against 0.25 ns an element forward,
// 0.26 against 0.35 backward, 2 threads, Zen 3), and a fused graph computes them the same way.
const OpDef& silu_op = register_unary<DTypeSet::floating>(
    "silu", kTranscendental + 2, none(), fixed([](auto x) { return kernels::silu_of(x); }));

const OpDef& silu_backward_op = register_op({
    .name = "silu_backward",
    .infer = [](Inputs in, const Attrs&) { return activation_backward_infer("silu_backward", in); },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          elementwise::visit<DTypeSet::floating>(in[1].dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            kernels::map_elements<T, T, T>(
                out[0], in, [](auto g, auto x) { return g * kernels::silu_derivative(x); });
          });
        },
    .cost = elementwise::cost_per_element(kTranscendental + 6),
    .pointwise = elementwise::pointwise<2>(
        fixed([](auto g, auto x) { return g * kernels::silu_derivative(x); })),
});

const OpDef& add_scalar_op = register_unary<DTypeSet::numeric>(
    "add_scalar", kArithmetic, with_scalar_operand(algorithm::binary_add),
    [](const Attrs& a) {
      return [s = a.f("scalar")](auto x) { return x + static_cast<decltype(x)>(s); };
    },
    /*has_scalar=*/true);
const OpDef& mul_scalar_op = register_unary<DTypeSet::numeric>(
    "mul_scalar", kArithmetic, with_scalar_operand(algorithm::binary_mul),
    [](const Attrs& a) {
      return [s = a.f("scalar")](auto x) { return x * static_cast<decltype(x)>(s); };
    },
    /*has_scalar=*/true);
const OpDef& pow_scalar_op = register_unary<DTypeSet::floating>(
    "pow_scalar", kTranscendental,
    [](const Tensor& x, const Attrs& a, const Tensor& out) {
      // The exponent is part of the primitive: one per distinct exponent, which code uses few of.
      return kernels::onednn_eltwise(algorithm::eltwise_pow, 1, static_cast<float>(a.f("scalar")),
                                     x, out);
    },
    [](const Attrs& a) {
      return [e = a.f("scalar")](auto x) { return std::pow(x, static_cast<decltype(x)>(e)); };
    },
    /*has_scalar=*/true);

}  // namespace

Tensor neg(const Tensor& x) { return dispatch1(neg_op, {x}); }
Tensor exp(const Tensor& x) { return dispatch1(exp_op, {x}); }
Tensor log(const Tensor& x) { return dispatch1(log_op, {x}); }
Tensor sqrt(const Tensor& x) { return dispatch1(sqrt_op, {x}); }
Tensor rsqrt(const Tensor& x) { return dispatch1(rsqrt_op, {x}); }
Tensor abs(const Tensor& x) { return dispatch1(abs_op, {x}); }
Tensor tanh(const Tensor& x) { return dispatch1(tanh_op, {x}); }
Tensor sigmoid(const Tensor& x) { return dispatch1(sigmoid_op, {x}); }
Tensor relu(const Tensor& x) { return dispatch1(relu_op, {x}); }
Tensor erf(const Tensor& x) { return dispatch1(erf_op, {x}); }
Tensor sin(const Tensor& x) { return dispatch1(sin_op, {x}); }
Tensor cos(const Tensor& x) { return dispatch1(cos_op, {x}); }
Tensor tan(const Tensor& x) { return dispatch1(tan_op, {x}); }
Tensor log1p(const Tensor& x) { return dispatch1(log1p_op, {x}); }
Tensor expm1(const Tensor& x) { return dispatch1(expm1_op, {x}); }
Tensor square(const Tensor& x) { return dispatch1(square_op, {x}); }
Tensor reciprocal(const Tensor& x) { return dispatch1(reciprocal_op, {x}); }
Tensor sign(const Tensor& x) { return dispatch1(sign_op, {x}); }
Tensor floor(const Tensor& x) { return dispatch1(floor_op, {x}); }
Tensor ceil(const Tensor& x) { return dispatch1(ceil_op, {x}); }
Tensor round(const Tensor& x) { return dispatch1(round_op, {x}); }
Tensor clamp(const Tensor& x, double min, double max) {
  DLF_CHECK(!(min > max), "clamp: min ", min, " is above max ", max);
  return dispatch1(clamp_op, {x}, {{"min", min}, {"max", max}});
}
Tensor gelu(const Tensor& x, GeluApproximation approximation) {
  const char* name = approximation == GeluApproximation::tanh ? "tanh" : "erf";
  return dispatch1(gelu_op, {x}, {{"approximation", std::string(name)}});
}

Tensor silu(const Tensor& x) { return dispatch1(silu_op, {x}); }

Tensor add(const Tensor& a, double b) { return dispatch1(add_scalar_op, {a}, {{"scalar", b}}); }
Tensor mul(const Tensor& a, double b) { return dispatch1(mul_scalar_op, {a}, {{"scalar", b}}); }
Tensor pow(const Tensor& a, double exponent) {
  return dispatch1(pow_scalar_op, {a}, {{"scalar", exponent}});
}

}  // namespace dlf
