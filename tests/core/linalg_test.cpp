#include <cmath>
#include <functional>
#include <numbers>

#include "op_check.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
using dlf::test::check_op;
using dlf::test::OpCheck;
using dlf::test::random_inputs;

namespace {

// Naive f64 reference: batch dims broadcast NumPy-style (through expand), then plain loops.
Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  Shape batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                 Shape(b.shape().begin(), b.shape().end() - 2));
  Shape a_shape = batch, b_shape = batch, out_shape = batch;
  a_shape.insert(a_shape.end(), {n, k});
  b_shape.insert(b_shape.end(), {k, m});
  out_shape.insert(out_shape.end(), {n, m});
  std::vector<double> av = a.expand(a_shape).to_vector<double>();
  std::vector<double> bv = b.expand(b_shape).to_vector<double>();
  std::vector<double> out(numel(out_shape));
  for (int64_t i = 0; i < numel(batch); ++i) {
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < m; ++c) {
        double s = 0;
        for (int64_t j = 0; j < k; ++j) s += av[(i * n + r) * k + j] * bv[(i * k + j) * m + c];
        out[(i * n + r) * m + c] = s;
      }
    }
  }
  return from_vector(out, out_shape);
}

double activate(double x, Activation act) {
  switch (act) {
    case Activation::none:
      return x;
    case Activation::relu:
      return x > 0 ? x : 0;
    case Activation::gelu_tanh:
      return 0.5 * x *
             (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    case Activation::gelu_erf:
      return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2));
  }
  return x;
}

// Naive f64 reference of act(x @ wᵀ + b) for x [..., in].
Tensor reference_linear(const Tensor& x, const Tensor& w, const Tensor& bias, Activation act) {
  const int64_t in = w.size(1), out = w.size(0), rows = x.numel() / in;
  std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<double> bv = bias.defined() ? bias.to_vector<double>() : std::vector<double>(out);
  std::vector<double> y(rows * out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = bv[o];
      for (int64_t i = 0; i < in; ++i) s += xv[r * in + i] * wv[o * in + i];
      y[r * out + o] = activate(s, act);
    }
  }
  Shape shape = x.shape();
  shape.back() = out;
  return from_vector(y, shape);
}

// The same values rounded through bf16: the fair reference for a bf16 product.
Tensor bf16_rounded(const Tensor& t) { return t.to(DType::bf16).to(DType::f64); }

// bf16 output (8 bits of mantissa) of an f32-accumulated product of bf16-exact inputs.
constexpr double kBf16Tol = 1e-2;

const Activation kActivations[] = {Activation::none, Activation::relu, Activation::gelu_tanh,
                                   Activation::gelu_erf};

}  // namespace

TEST_CASE("matmul of hand-computed 2x3 @ 3x2, in every dtype") {
  Tensor a = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from_vector<double>({7, 8, 9, 10, 11, 12}, {3, 2});
  // Small integers: exact in bf16 too.
  Tensor ref = check_op([](const auto& in) { return matmul(in[0], in[1]); }, {a, b},
                        {.f32_tol = 0, .bf16_tol = 1e-9});
  check_close(ref, {58, 64, 139, 154}, {2, 2}, 0, 0);
}

TEST_CASE("matmul treats 1-D operands as vectors and drops their dim") {
  Tensor v = from_vector<double>({1, 2, 3});
  Tensor m = from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2});  // columns: [1,0,1], [0,1,1]
  Tensor mt = from_vector<double>({1, 0, 1, 0, 1, 1}, {2, 3});
  check_close(matmul(v, v), {14}, {});
  check_close(matmul(v, m), {4, 5}, {2});
  check_close(matmul(mt, v), {4, 5}, {2});
  check_close(matmul(mt.to(DType::f32), v.to(DType::f32)), {4, 5}, {2});
  check_close(matmul(v.to(DType::bf16), m.to(DType::bf16)), {4, 5}, {2}, 0, 0);
  // Batched with a vector on either side.
  Tensor batch = from_vector<double>({1, 0, 1, 0, 1, 1, 2, 2, 2, 1, 0, 0}, {2, 2, 3});
  check_close(matmul(batch.to(DType::f32), v.to(DType::f32)), {4, 5, 12, 1}, {2, 2});
  check_close(matmul(v, batch.transpose(1, 2)), {4, 5, 12, 1}, {2, 2});
  check_op([](const auto& in) { return matmul(in[0], in[1]); }, random_inputs({{5}, {3, 5, 4}}),
           {.bf16_tol = 0.05});
  check_op([](const auto& in) { return matmul(in[0], in[1]); }, random_inputs({{7}, {7}}),
           {.bf16_tol = 0.05});
}

TEST_CASE("batched matmul broadcasts batch dims") {
  struct Case {
    Shape a, b, out;
  };
  for (const Case& c : {Case{{2, 1, 4, 5}, {3, 5, 6}, {2, 3, 4, 6}},
                        Case{{3, 4, 5}, {5, 6}, {3, 4, 6}},  // folds into one [12, 5] GEMM
                        Case{{4, 5}, {2, 5, 6}, {2, 4, 6}},  // a broadcast
                        Case{{2, 3, 4, 5}, {3, 5, 2}, {2, 3, 4, 2}},
                        Case{{1, 17, 33}, {2, 1, 33, 9}, {2, 1, 17, 9}}}) {
    INFO("a ", shape_str(c.a), " @ b ", shape_str(c.b));
    std::vector<Tensor> in = random_inputs({c.a, c.b});
    Tensor ref = check_op([](const auto& x) { return matmul(x[0], x[1]); }, in, {.bf16_tol = 0.1});
    check_close(ref, reference_matmul(in[0], in[1]), 1e-12, 1e-12);
    CHECK(ref.shape() == c.out);
    Tensor a16 = in[0].to(DType::bf16), b16 = in[1].to(DType::bf16);
    check_close(matmul(a16, b16), reference_matmul(bf16_rounded(in[0]), bf16_rounded(in[1])),
                kBf16Tol, kBf16Tol);
  }
}

TEST_CASE("matmul reads transposed, permuted, expanded and stepped operands") {
  using View = std::function<Tensor(const std::vector<Tensor>&)>;
  struct Case {
    const char* name;
    View a, b;
  };
  // Views of the same three base tensors, applied once to the f64 reference inputs and once
  // to the inputs in the dtype under test.
  const Case cases[] = {
      {"column-major matrices", [](const auto& t) { return t[0].transpose(1, 2); },
       [](const auto& t) { return t[1].transpose(1, 2); }},
      {"heads: [B, T, H, D] -> [B, H, T, D]",
       [](const auto& t) {
         return t[1].view({2, 5, 3, 2}).permute({0, 2, 1, 3});
       },
       [](const auto& t) { return t[2].slice(0, 0, 2); }},
      {"zero-stride batch dim", [](const auto& t) { return t[0].transpose(1, 2); },
       [](const auto& t) {
         return t[2].unsqueeze(0).expand({2, 6, 5});
       }},
      {"no unit stride", [](const auto& t) { return t[1].slice(2, 0, 6, 2); },
       [](const auto& t) { return t[0].slice(1, 0, 6, 2); }},
      {"zero-stride rows",
       [](const auto& t) {
         return t[0].narrow(1, 0, 1).expand({2, 3, 4});
       },
       [](const auto& t) { return t[1].transpose(1, 2).narrow(1, 0, 4); }},
      {"both batch dims broadcast",
       [](const auto& t) {
         return t[0].narrow(0, 0, 1).expand({3, 6, 4});
       },
       [](const auto& t) {
         return t[2].narrow(0, 0, 4).unsqueeze(0).expand({3, 4, 5});
       }},
  };
  const std::vector<Tensor> in = random_inputs({{2, 6, 4}, {2, 5, 6}, {6, 5}});
  for (DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    std::vector<Tensor> typed, reference_in;
    for (const Tensor& t : in) {
      typed.push_back(t.to(dtype));
      reference_in.push_back(dtype == DType::bf16 ? bf16_rounded(t) : t);
    }
    const double tol = dtype == DType::bf16 ? kBf16Tol : 1e-5;
    for (const Case& c : cases) {
      INFO(c.name, ", dtype ", dtype_name(dtype));
      check_close(matmul(c.a(typed), c.b(typed)),
                  reference_matmul(c.a(reference_in), c.b(reference_in)), tol, tol);
    }
  }
  // oneDNN takes the transposed operands as they are: the output is the only allocation.
  const Tensor a = in[0].to(DType::f32).transpose(1, 2), b = in[1].to(DType::f32).transpose(1, 2);
  matmul(a, b);
  const int64_t before = allocator_for(kCPU).stats().allocations;
  matmul(a, b);
  CHECK(allocator_for(kCPU).stats().allocations == before + 1);
}

TEST_CASE("matmul copies weights whose rows lie a multiple of 4 KiB apart, with padded rows") {
  // [256, 24] @ [24, 1024] in f32: the right operand's rows are 4096 bytes apart, which oneDNN
  // runs at half speed; it is copied with its rows 64 bytes further apart (one allocation more
  // than the output). The same for a column slice of a [24, 2048] tensor (8 KiB apart in f32,
  // 4 KiB in bf16); the results are right whichever layout runs.
  const std::vector<Tensor> in = random_inputs({{256, 24}, {24, 1024}, {24, 2048}});
  for (DType dtype : {DType::f32, DType::bf16}) {
    const Tensor a = in[0].to(dtype), b = in[1].to(dtype), wide = in[2].to(dtype);
    const double tol = dtype == DType::bf16 ? kBf16Tol : 1e-5;
    const auto reference = [&](const Tensor& x) {
      return dtype == DType::bf16 ? bf16_rounded(x) : x;
    };
    INFO("dtype ", dtype_name(dtype));
    check_close(matmul(a, b), reference_matmul(reference(in[0]), reference(in[1])), tol, tol);
    check_close(matmul(a, wide.narrow(1, 0, 1000)),
                reference_matmul(reference(in[0]), reference(in[2]).narrow(1, 0, 1000)), tol, tol);
  }
  const Tensor a = in[0].to(DType::f32), b = in[1].to(DType::f32);
  const int64_t before = allocator_for(kCPU).stats().allocations;
  matmul(a, b);
  CHECK(allocator_for(kCPU).stats().allocations == before + 2);
  // A product of fewer rows reads the weights in place.
  const Tensor few = a.narrow(0, 0, 64);
  check_close(matmul(few, b), reference_matmul(in[0].narrow(0, 0, 64), in[1]), 1e-5, 1e-5);
  const int64_t after = allocator_for(kCPU).stats().allocations;
  matmul(few, b);
  CHECK(allocator_for(kCPU).stats().allocations == after + 1);
}

TEST_CASE("linear against a naive f64 loop, with and without bias, each activation") {
  std::vector<Tensor> in = random_inputs({{2, 3, 5}, {4, 5}, {4}});
  for (Activation act : kActivations) {
    for (bool with_bias : {false, true}) {
      INFO("activation ", static_cast<int>(act), " bias ", with_bias);
      const Tensor bias = with_bias ? in[2] : Tensor();
      const Tensor expected = reference_linear(in[0], in[1], bias, act);
      check_close(linear(in[0], in[1], bias, act), expected, 1e-12, 1e-12);
      check_close(linear(in[0].to(DType::f32), in[1].to(DType::f32),
                         with_bias ? bias.to(DType::f32) : Tensor(), act),
                  expected, 1e-5, 1e-5);
      const Tensor bias16 = with_bias ? bias.to(DType::bf16) : Tensor();
      Tensor got16 = linear(in[0].to(DType::bf16), in[1].to(DType::bf16), bias16, act);
      CHECK(got16.dtype() == DType::bf16);
      check_close(got16,
                  reference_linear(bf16_rounded(in[0]), bf16_rounded(in[1]),
                                   with_bias ? bf16_rounded(bias) : Tensor(), act),
                  kBf16Tol, kBf16Tol);
      check_op([&](const auto& x) { return linear(x[0], x[1], with_bias ? x[2] : Tensor(), act); },
               in, {.bf16_tol = 0.05});
    }
  }
}

TEST_CASE("linear on 1-D, transposed, broadcast and empty inputs") {
  Tensor x = from_vector<double>({1, 2});
  Tensor w = from_vector<double>({1, 1, 1, -1, 0, 3}, {3, 2});
  Tensor b = from_vector<double>({0.5, 0, -7});
  check_close(linear(x, w, b), {3.5, -1, -1}, {3});
  check_close(linear(x.to(DType::f32), w.to(DType::f32), b.to(DType::f32), Activation::relu),
              {3.5, 0, 0}, {3});
  // A weight stored [in, out] and read transposed; an input that is a transposed view.
  std::vector<Tensor> in = random_inputs({{5, 4}, {5, 6}, {6}});
  for (DType dtype : {DType::f64, DType::f32}) {
    Tensor xt = in[0].to(dtype).transpose(0, 1), wt = in[1].to(dtype).transpose(0, 1);
    check_close(linear(xt, wt, in[2].to(dtype), Activation::gelu_tanh),
                reference_linear(in[0].transpose(0, 1), in[1].transpose(0, 1), in[2],
                                 Activation::gelu_tanh),
                1e-5, 1e-5);
  }
  // A bias read with stride 0 (expand) or stride 2.
  Tensor wide = from_vector<double>({1, -1, 2, -2, 3, -3});
  for (DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    Tensor x16 = x.to(dtype), w16 = w.to(dtype), wide16 = wide.to(dtype);
    check_close(linear(x16, w16, wide16.narrow(0, 0, 1).expand({3})), {4, 0, 7}, {3});
    check_close(linear(x16, w16, wide16.slice(0, 0, 6, 2)), {4, 1, 9}, {3});
  }
  // in = 0: the product is an empty sum, the output is act(bias).
  for (DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    Tensor empty_x = zeros({2, 0}, {.dtype = dtype}), empty_w = zeros({3, 0}, {.dtype = dtype});
    check_close(linear(empty_x, empty_w, b.to(dtype), Activation::relu), {0.5, 0, 0, 0.5, 0, 0},
                {2, 3});
    check_close(matmul(empty_x, empty_w.transpose(0, 1)), {0, 0, 0, 0, 0, 0}, {2, 3});
  }
}

TEST_CASE("matmul and linear report FLOPs and bytes") {
  Tensor a = zeros({2, 4, 3}), b = zeros({3, 5});
  Tensor out = matmul(a, b);
  Cost c = op_cost(find_op("matmul"), std::vector<Tensor>{a, b}, {}, std::vector<Tensor>{out});
  CHECK(c.flops == 2 * 2 * 4 * 3 * 5);
  CHECK(c.bytes_read == (24 + 15) * 4);
  CHECK(c.bytes_written == 40 * 4);
  Tensor w = zeros({5, 3}), bias = zeros({5});
  Tensor y = linear(a, w, bias, Activation::relu);
  Cost l = op_cost(find_op("linear"), std::vector<Tensor>{a, w, bias},
                   {{"activation", std::string("relu")}}, std::vector<Tensor>{y});
  CHECK(l.flops == 2 * 8 * 3 * 5 + 2 * 8 * 5);  // GEMM, then bias and relu per output
  CHECK(l.bytes_read == (24 + 15 + 5) * 4);
  // Meta tensors: shapes only.
  Tensor m = matmul(zeros({7, 2, 3}, {.device = kMeta}), zeros({3, 4}, {.device = kMeta}));
  CHECK(m.shape() == Shape{7, 2, 4});
}

TEST_CASE("matmul and linear refuse bad shapes and dtypes") {
  Tensor a = zeros({2, 3}), b = zeros({4, 2});
  check_error([&] { matmul(a, b); }, {"matmul", "[2, 3]", "[4, 2]", "inner"});
  check_error([&] { matmul(zeros({3}), zeros({4})); }, {"matmul", "[3]", "[4]"});
  check_error(
      [&] {
        matmul(zeros({2, 3, 4}), zeros({3, 4, 5}));
      },
      {"matmul", "[2, 3, 4]", "[3, 4, 5]", "broadcast"});
  check_error([&] { matmul(a, zeros({3, 2}, {.dtype = DType::f64})); }, {"matmul", "f32", "f64"});
  check_error(
      [&] {
        matmul(zeros({2, 2}, {.dtype = DType::i64}), zeros({2, 2}, {.dtype = DType::i64}));
      },
      {"matmul", "i64"});
  check_error([&] { matmul(Tensor(), a); }, {"matmul", "undefined"});
  Tensor x = zeros({4, 3}), w = zeros({5, 3});
  check_error([&] { linear(x, zeros({5, 4})); }, {"linear", "[4, 3]", "[5, 4]"});
  check_error([&] { linear(x, zeros({15})); }, {"linear", "weight", "[15]"});
  check_error([&] { linear(x, w, zeros({4})); }, {"linear", "bias", "[4]", "[5, 3]"});
  check_error([&] { linear(x, w.to(DType::bf16)); }, {"linear", "f32", "bf16"});
  check_error([&] { linear(x, w, zeros({5}, {.dtype = DType::f64})); }, {"linear", "bias", "f64"});
}
