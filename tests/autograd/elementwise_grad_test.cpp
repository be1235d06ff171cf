#include "autograd/grad_cases.h"

using namespace dlf;
using test::GradCase;
using test::leaves;

namespace {
using V = std::vector<Tensor>;

// Inputs bounded away from where a derivative blows up or is not defined.
V positive(const Shape& s) {
  Tensor t = add(abs(randn(s, {.dtype = DType::f64}, nullptr)), 0.5).detach();
  t.requires_grad_();
  return {t};
}
V away_from_zero(const Shape& s) {
  Tensor r = randn(s, {.dtype = DType::f64});
  Tensor t =
      (r + where(ge(r, zeros({}, {.dtype = DType::f64})), full({}, 0.3, {.dtype = DType::f64}),
                 full({}, -0.3, {.dtype = DType::f64})))
          .detach();
  t.requires_grad_();
  return {t};
}
V one(const Shape& s) { return leaves({s}); }

GradCase unary(
    const std::string& op, Tensor (*f)(const Tensor&), std::function<V()> in = [] {
      return one({2, 3});
    }) {
  return GradCase{op, "on [2, 3]", std::move(in), [f](const V& x) { return f(x[0]); }};
}

[[maybe_unused]] const bool cases = test::add_grad_cases(
    "elementwise",
    {
        unary("neg", [](const Tensor& x) { return neg(x); }),
        unary("exp", [](const Tensor& x) { return exp(x); }),
        unary(
            "log", [](const Tensor& x) { return log(x); },
            [] {
              return positive({2, 3});
            }),
        unary(
            "sqrt", [](const Tensor& x) { return sqrt(x); },
            [] {
              return positive({2, 3});
            }),
        unary(
            "rsqrt", [](const Tensor& x) { return rsqrt(x); },
            [] {
              return positive({2, 3});
            }),
        unary(
            "abs", [](const Tensor& x) { return abs(x); },
            [] {
              return away_from_zero({2, 3});
            }),
        unary("tanh", [](const Tensor& x) { return tanh(x); }),
        unary("sigmoid", [](const Tensor& x) { return sigmoid(x); }),
        unary(
            "relu", [](const Tensor& x) { return relu(x); },
            [] {
              return away_from_zero({2, 3});
            }),
        unary("erf", [](const Tensor& x) { return erf(x); }),
        unary("sin", [](const Tensor& x) { return sin(x); }),
        unary("cos", [](const Tensor& x) { return cos(x); }),
        unary("tan", [](const Tensor& x) { return tan(x * 0.3); }),
        unary(
            "log1p", [](const Tensor& x) { return log1p(x); },
            [] {
              return positive({2, 3});
            }),
        unary("expm1", [](const Tensor& x) { return expm1(x); }),
        unary("square", [](const Tensor& x) { return square(x); }),
        unary(
            "reciprocal", [](const Tensor& x) { return reciprocal(x); },
            [] {
              return positive({2, 3});
            }),
        unary(
            "sign", [](const Tensor& x) { return sign(x); },
            [] {
              return away_from_zero({2, 3});
            }),
        unary("floor", [](const Tensor& x) { return floor(x * 3.1); }),
        unary("ceil", [](const Tensor& x) { return ceil(x * 3.1); }),
        unary("round", [](const Tensor& x) { return round(x * 3.1); }),
        unary("clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.5); }),
        unary("gelu", [](const Tensor& x) { return gelu(x); }),
        GradCase{"gelu", "tanh form, transposed",
                 [] {
                   return V{test::transposed_leaf({3, 2})};
                 },
                 [](const V& x) { return gelu(x[0], GeluApproximation::tanh); }},
        unary("silu", [](const Tensor& x) { return silu(x); }),
        unary("add_scalar", [](const Tensor& x) { return x + 2.5; }),
        unary("mul_scalar", [](const Tensor& x) { return 3.0 * x; }),
        unary(
            "pow_scalar", [](const Tensor& x) { return pow(x, 2.5); },
            [] {
              return positive({2, 3});
            }),
        GradCase{"pow_scalar", "negative exponent, one element", [] { return positive({}); },
                 [](const V& x) { return pow(x[0], -1.5); }},
        GradCase{"add", "broadcast [2, 3] + [3]",
                 [] {
                   return leaves({{2, 3}, {3}});
                 },
                 [](const V& x) { return x[0] + x[1]; }},
        GradCase{"sub", "broadcast [2, 1] - [1, 3]",
                 [] {
                   return leaves({{2, 1}, {1, 3}});
                 },
                 [](const V& x) { return x[0] - x[1]; }},
        GradCase{"mul", "transposed times row",
                 [] {
                   return V{test::transposed_leaf({3, 4}), leaves({{4}})[0]};
                 },
                 [](const V& x) { return x[0] * x[1]; }},
        GradCase{"swiglu", "gate and up of one shape",
                 [] {
                   return leaves({{3, 4}, {3, 4}});
                 },
                 [](const V& x) { return swiglu(x[0], x[1]); }},
        GradCase{"swiglu", "transposed gate, broadcast up row",
                 [] {
                   return V{test::transposed_leaf({3, 4}), leaves({{4}})[0]};
                 },
                 [](const V& x) { return swiglu(x[0], x[1]); }},
        GradCase{"swiglu", "one tensor's two halves (gate and up from one projection)",
                 [] {
                   return one({2, 6});
                 },
                 [](const V& x) { return swiglu(x[0].narrow(1, 0, 3), x[0].narrow(1, 3, 3)); }},
        GradCase{"mul", "same tensor twice", [] { return one({3}); },
                 [](const V& x) { return x[0] * x[0]; }},
        GradCase{"div", "broadcast, scalar-shaped divisor",
                 [] {
                   return V{leaves({{2, 2}})[0], positive({})[0]};
                 },
                 [](const V& x) { return x[0] / x[1]; }},
        GradCase{"pow", "positive base, broadcast exponent",
                 [] {
                   return V{positive({2, 3})[0], leaves({{3}})[0]};
                 },
                 [](const V& x) { return pow(x[0], x[1]); }},
        GradCase{"maximum", "distinct values, broadcast",
                 [] {
                   return leaves({{2, 3}, {3}});
                 },
                 [](const V& x) { return maximum(x[0], x[1]); }},
        GradCase{"minimum", "distinct values",
                 [] {
                   return leaves({{4}, {4}});
                 },
                 [](const V& x) { return minimum(x[0], x[1]); }},
        GradCase{"where", "broadcast condition and operands",
                 [] {
                   return leaves({{2, 3}, {3}});
                 },
                 [](const V& x) {
                   return where(from_vector<bool>({true, false}, {2, 1}), x[0], x[1]);
                 }},
        GradCase{"masked_fill", "row mask",
                 [] {
                   return one({2, 3});
                 },
                 [](const V& x) {
                   return masked_fill(x[0], from_vector<bool>({false, true, false}), -1);
                 }},
    });
}  // namespace

TEST_CASE("gradcheck: element-wise ops") { test::run_grad_cases("elementwise"); }

TEST_CASE("element-wise ops and matmul can be differentiated twice") {
  Generator g(21);
  const Tensor v = randn({2, 3}, {.dtype = DType::f64}, &g);
  // fn(x...) = d<f(x...), v>/dx0, recorded so that gradcheck differentiates it again.
  auto second = [v](std::function<Tensor(const V&)> f) {
    return [v, f](const V& x) { return autograd::grad({f(x)}, {x[0]}, {v}, false, true)[0]; };
  };
  struct Case {
    const char* name;
    std::function<Tensor(const V&)> f;
    V inputs;
  };
  const std::vector<Case> cases = {
      {"tanh", [](const V& x) { return tanh(x[0]); }, leaves({{2, 3}})},
      {"mul", [](const V& x) { return x[0] * x[1] * x[0]; }, leaves({{2, 3}, {3}})},
      {"matmul", [](const V& x) { return matmul(x[0], x[1]) * matmul(x[0], x[1]); },
       leaves({{2, 4}, {4, 3}})},
      {"gelu", [](const V& x) { return gelu(x[0]); }, leaves({{2, 3}})},
      {"silu", [](const V& x) { return silu(x[0]); }, leaves({{2, 3}})},
      {"swiglu", [](const V& x) { return swiglu(x[0], x[1] * x[0]); }, leaves({{2, 3}, {3}})},
      {"sigmoid / exp", [](const V& x) { return sigmoid(x[0]) / exp(x[0]); }, leaves({{2, 3}})},
  };
  for (const Case& c : cases) {
    autograd::GradcheckResult r = autograd::gradcheck(second(c.f), c.inputs);
    INFO(c.name, ": ", r.str());
    CHECK(r.ok);
  }
}

TEST_CASE("swiglu: forward and fused backward in f32 and bf16 match the f64 formula") {
  const Tensor a64 = randn({5, 37}, {.dtype = DType::f64}) * 3.0;
  const Tensor b64 = randn({5, 37}, {.dtype = DType::f64});
  const Tensor g64 = randn({5, 37}, {.dtype = DType::f64});
  const Tensor s = sigmoid(a64);
  for (auto [dtype, tol] : {std::pair{DType::f32, 1e-5}, std::pair{DType::bf16, 2e-2}}) {
    INFO(dtype_name(dtype));
    Tensor a = a64.to(dtype).detach().requires_grad_(), b = b64.to(dtype).detach().requires_grad_();
    const Tensor y = swiglu(a, b);
    autograd::backward({y}, {g64.to(dtype)});
    test::check_close(y.to(DType::f64), a64 * s * b64, tol, tol);
    test::check_close(a.grad().to(DType::f64), g64 * b64 * s * (a64 * (1.0 - s) + 1.0), tol, tol);
    test::check_close(b.grad().to(DType::f64), g64 * a64 * s, tol, tol);
  }
  test::check_close(swiglu(from_vector<double>({0, 2}), from_vector<double>({5, 3})),
                    {0, 6 / (1 + std::exp(-2.0))}, {2}, 1e-15);
  test::check_error([&] { swiglu(a64, b64.to(DType::f32)); }, {"swiglu", "f32"});
  test::check_error(
      [&] {
        swiglu(a64, zeros({4, 37}, {.dtype = DType::f64}));
      },
      {"swiglu", "[5, 37]", "[4, 37]"});
}

TEST_CASE("silu: f32 forward and fused backward match the f64 formula") {
  const Tensor x64 = randn({4, 37}, {.dtype = DType::f64}) * 3.0;
  const Tensor g64 = randn({4, 37}, {.dtype = DType::f64});
  const Tensor x32 = x64.to(DType::f32).detach();
  x32.requires_grad_();
  const Tensor y32 = silu(x32);
  autograd::backward({y32}, {g64.to(DType::f32)});
  const Tensor s = sigmoid(x64);
  test::check_close(y32, x64 * s, 1e-6, 1e-5);
  test::check_close(x32.grad(), g64 * s * (x64 * (1.0 - s) + 1.0), 1e-6, 1e-5);
}
