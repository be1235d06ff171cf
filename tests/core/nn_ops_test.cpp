#include <algorithm>
#include <cmath>
#include <limits>

#include "op_check.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
using dlf::test::check_op;
using dlf::test::random_inputs;

namespace {

// ---- embedding ----

TEST_CASE("embedding picks rows for repeated and 2-D indices") {
  Tensor weight = arange(12, {.dtype = DType::f64}).view({4, 3});
  Tensor idx = from_vector<int64_t>({1, 1, 3, 0}, {2, 2});
  Tensor out = check_op([](const auto& in) { return embedding(in[0], in[1]); }, {weight, idx},
                        {.bf16_tol = 1e-6});
  check_close(out, {3, 4, 5, 3, 4, 5, 9, 10, 11, 0, 1, 2}, {2, 2, 3});
  check_close(embedding(weight, from_vector<int32_t>({2})), {6, 7, 8}, {1, 3});
  // A transposed table (row i is 4j + i over j) and transposed indices ([[1, 3]]).
  Tensor columns = arange(12, {.dtype = DType::f64}).view({3, 4}).transpose(0, 1);
  check_close(embedding(columns, idx.transpose(0, 1).narrow(0, 0, 1)), {1, 5, 9, 3, 7, 11},
              {1, 2, 3});
  CHECK(embedding(weight, zeros({0, 2}, {.dtype = DType::i64})).shape() == Shape{0, 2, 3});
}

TEST_CASE("embedding refuses bad indices and tables") {
  Tensor weight = zeros({4, 3});
  check_error(
      [&] {
        embedding(weight, from_vector<int64_t>({0, 4}));
      },
      {"embedding", "index 4", "4 rows"});
  check_error([&] { embedding(weight, from_vector<int32_t>({-1})); }, {"index -1", "4 rows"});
  check_error([&] { embedding(weight, zeros({2})); }, {"i32 or i64", "f32"});
  check_error([&] { embedding(zeros({4}), from_vector<int64_t>({0})); }, {"[num, dim]", "[4]"});
}

// ---- cross_entropy ----

// PyTorch's definition, as naive f64 loops over logits [N, C, inner...] flattened row-major.
struct NaiveCrossEntropy {
  std::vector<double> per_row, lse;
  double reduced;
};
NaiveCrossEntropy naive_cross_entropy(const Tensor& logits, const Tensor& target,
                                      const CrossEntropyOptions& o) {
  const int64_t n = logits.size(0), classes = logits.size(1);
  const int64_t inner = logits.numel() / (n * classes);
  std::vector<double> x = logits.to_vector<double>();
  std::vector<int64_t> y = target.to_vector<int64_t>();
  NaiveCrossEntropy r;
  double sum = 0, counted = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t c) { return x[(b * classes + c) * inner + j]; };
      double z = 0;
      for (int64_t c = 0; c < classes; ++c) z += std::exp(at(c));
      const double lse = std::log(z);
      r.lse.push_back(lse);
      const int64_t t = y[b * inner + j];
      double loss = 0;
      if (t != o.ignore_index) {
        double uniform = 0;
        for (int64_t c = 0; c < classes; ++c) uniform += -(at(c) - lse) / double(classes);
        loss = (1 - o.label_smoothing) * -(at(t) - lse) + o.label_smoothing * uniform;
        counted += 1;
      }
      r.per_row.push_back(loss);
      sum += loss;
    }
  }
  r.reduced = o.reduction == Reduction::sum ? sum : sum / counted;
  return r;
}

TEST_CASE("cross_entropy matches hand-computed values") {
  // Row 0: logits (0, 0), target 0 -> ln 2. Row 1: logits (0, ln 3), target 1 -> ln(4/3).
  Tensor logits = from_vector<double>({0, 0, 0, std::log(3.0)}, {2, 2});
  Tensor target = from_vector<int64_t>({0, 1});
  const double l0 = std::log(2.0), l1 = std::log(4.0 / 3);
  auto ce = [&](CrossEntropyOptions o) {
    return check_op([o](const auto& in) { return cross_entropy(in[0], in[1], o); },
                    {logits, target});
  };
  check_close(ce({}), {(l0 + l1) / 2}, {});
  check_close(ce({.reduction = Reduction::sum}), {l0 + l1}, {});
  check_close(ce({.reduction = Reduction::none}), {l0, l1}, {2});
  // ε = 0.5 on row 1: 0.5·ln(4/3) + 0.5·(ln(4/3) + ln 4)/2; row 0 stays ln 2.
  const double smooth1 = 0.5 * l1 + 0.25 * (l1 + std::log(4.0));
  check_close(ce({.label_smoothing = 0.5, .reduction = Reduction::none}), {l0, smooth1}, {2});
  // Ignoring row 0 leaves the mean of row 1 alone; all ignored gives 0/0 as in PyTorch.
  check_close(ce({.ignore_index = 0}), {l1}, {});
  CHECK(std::isnan(cross_entropy(logits, from_vector<int32_t>({-100, -100})).item<double>()));
}

TEST_CASE("cross_entropy agrees with a naive f64 loop: ignore_index, smoothing, reductions") {
  Generator g(3);
  for (Shape shape : {Shape{6, 5}, Shape{3, 4, 2, 3}}) {
    Shape rows = shape;
    rows.erase(rows.begin() + 1);
    Tensor logits = randn(shape, {.dtype = DType::f64}, &g);
    // Targets in [0, C); those equal to 2 are ignored below.
    Tensor target = randint(0, shape[1], rows, {.dtype = DType::i64}, &g);
    for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
      for (double eps : {0.0, 0.1}) {
        const CrossEntropyOptions o{.ignore_index = 2, .label_smoothing = eps, .reduction = red};
        INFO("shape ", shape_str(shape), " reduction ", int(red), " eps ", eps);
        NaiveCrossEntropy want = naive_cross_entropy(logits, target, o);
        Tensor got = check_op([o](const auto& in) { return cross_entropy(in[0], in[1], o); },
                              {logits, target});
        if (red == Reduction::none) {
          check_close(got, want.per_row, rows, 1e-12, 1e-12);
        } else {
          check_close(got, {want.reduced}, {}, 1e-12, 1e-12);
        }
      }
    }
    // The extra output is the per-row logsumexp, for backward.
    auto outs = dispatch(find_op("cross_entropy"), {logits.to(DType::f32), target},
                         {{"ignore_index", int64_t{-100}},
                          {"label_smoothing", 0.0},
                          {"reduction", std::string("mean")}});
    CHECK(outs[1].dtype() == DType::f32);
    check_close(outs[1], naive_cross_entropy(logits, target, {}).lse, rows);
  }
}

TEST_CASE("cross_entropy stays finite for huge logits and reads strided logits") {
  Tensor logits = from_vector<double>({1000, 0, -1000, 1000}, {2, 2});
  Tensor t = from_vector<int64_t>({0, 0});
  check_close(cross_entropy(logits.to(DType::f32), t, {.reduction = Reduction::none}), {0, 2000},
              {2});
  // Class-major storage viewed as [N, C]: rows (0, 0) and (ln 3, 0).
  Tensor class_major = from_vector<double>({0, std::log(3.0), 0, 0}, {2, 2}).transpose(0, 1);
  check_close(
      cross_entropy(class_major, from_vector<int64_t>({0, 0}), {.reduction = Reduction::none}),
      {std::log(2.0), std::log(4.0 / 3)}, {2});
}

TEST_CASE("cross_entropy refuses bad targets and shapes") {
  Tensor logits = zeros({2, 3});
  check_error(
      [&] {
        cross_entropy(logits, from_vector<int64_t>({0, 3}));
      },
      {"cross_entropy", "target 3", "3 classes"});
  check_error([&] { cross_entropy(logits, from_vector<int64_t>({-2, 0})); }, {"target -2"});
  check_error([&] { cross_entropy(logits, from_vector<int64_t>({0, 1, 2})); }, {"[3]", "[2, 3]"});
  check_error([&] { cross_entropy(logits, zeros({2})); }, {"i32 or i64"});
  check_error([&] { cross_entropy(zeros({3}), from_vector<int64_t>({0})); }, {"[N, C]", "[3]"});
  check_error(
      [&] {
        cross_entropy(logits, from_vector<int64_t>({0, 1}), {.label_smoothing = 2});
      },
      {"label_smoothing"});
}

// ---- dropout ----

TEST_CASE("dropout drops about p, scales the rest, and depends only on the seed") {
  Tensor x = ones({200000}, {.dtype = DType::f64});
  Generator g(11);
  auto outs = dispatch(find_op("dropout"), {x},
                       {{"p", 0.3}, {"seed", int64_t{11}}, {"offset", int64_t{0}}});
  std::vector<double> y = outs[0].to_vector<double>();
  std::vector<bool> mask = outs[1].to_vector<bool>();
  int64_t dropped = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    dropped += !mask[i];
    REQUIRE(y[i] == (mask[i] ? 1 / 0.7 : 0.0));
  }
  CHECK(std::fabs(double(dropped) / double(y.size()) - 0.3) < 0.005);
  // The public function draws (seed, offset) from the generator: same seed, same result.
  check_close(dropout(x, 0.3, true, &g), outs[0], 0, 0);
  // The next draw continues the stream; one thread gives the same numbers as two.
  Tensor second = dropout(x, 0.3, true, &g);
  CHECK(second.to_vector<double>() != y);
  Generator g1(11);
  dropout(x, 0.3, true, &g1);
  set_num_threads(1);
  Tensor serial = dropout(x, 0.3, true, &g1);
  set_num_threads(2);
  check_close(serial, second, 0, 0);
  // f32 and strided inputs give the same mask.
  Tensor strided = dlf::test::strided_copy(x.to(DType::f32).view({400, 500}));
  Generator g2(11);
  check_close(dropout(strided, 0.3, true, &g2).view({-1}), outs[0], 1e-6, 1e-6);
}

TEST_CASE("dropout is the identity when not training or p = 0, and refuses bad p") {
  Tensor x = randn({10});
  CHECK(dropout(x, 0.5, false).is_same(x));
  CHECK(dropout(x, 0.0).is_same(x));
  check_error([&] { dropout(x, 1.0); }, {"dropout", "[0, 1)", "1"});
  check_error([&] { dropout(x, -0.1); }, {"-0.1"});
  check_error([&] { dropout(arange(3, {.dtype = DType::i64}), 0.5); }, {"floating", "i64"});
}

// ---- scaled_dot_product_attention ----

// Explicit scores, mask, softmax and product with v over contiguous f64 copies.
struct NaiveAttention {
  std::vector<double> out, lse;
};
NaiveAttention naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                               double scale) {
  const int64_t tq = q.size(-2), d = q.size(-1), tk = k.size(-2), dv = v.size(-1);
  const int64_t batches = q.numel() / (tq * d);
  std::vector<double> qs = q.contiguous().to_vector<double>();
  std::vector<double> ks = k.contiguous().to_vector<double>();
  std::vector<double> vs = v.contiguous().to_vector<double>();
  NaiveAttention r;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < tq; ++i) {
      std::vector<double> scores(tk, -INFINITY);
      double max = -INFINITY;
      for (int64_t j = 0; j < tk; ++j) {
        if (causal && j > i + tk - tq) continue;
        double s = 0;
        for (int64_t c = 0; c < d; ++c) s += qs[(b * tq + i) * d + c] * ks[(b * tk + j) * d + c];
        scores[j] = s * scale;
        max = std::max(max, scores[j]);
      }
      std::vector<double> p(tk, 0.0);
      double z = 0;
      for (int64_t j = 0; j < tk; ++j)
        z += p[j] = std::isinf(scores[j]) ? 0 : std::exp(scores[j] - max);
      r.lse.push_back(z > 0 ? max + std::log(z) : -INFINITY);
      for (int64_t c = 0; c < dv; ++c) {
        double o = 0;
        for (int64_t j = 0; j < tk; ++j) o += z > 0 ? p[j] / z * vs[(b * tk + j) * dv + c] : 0;
        r.out.push_back(o);
      }
    }
  }
  return r;
}

void check_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                     std::optional<double> scale = {}) {
  const double s = scale.value_or(1 / std::sqrt(double(q.size(-1))));
  NaiveAttention want = naive_attention(q, k, v, causal, s);
  Shape out_shape = q.shape();
  out_shape.back() = v.size(-1);
  for (DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    INFO("dtype ", dtype_name(dtype), " causal ", causal);
    const double tol = dtype == DType::f64 ? 1e-12 : dtype == DType::f32 ? 1e-5 : 3e-2;
    auto outs =
        dispatch(find_op("scaled_dot_product_attention"), {q.to(dtype), k.to(dtype), v.to(dtype)},
                 {{"causal", causal}, {"scale", s}});
    check_close(outs[0], want.out, out_shape, tol, tol);
    CHECK(outs[1].dtype() == (dtype == DType::bf16 ? DType::f32 : DType::f64));  // the lse
    std::vector<double> lse = outs[1].to_vector<double>();
    REQUIRE(lse.size() == want.lse.size());
    for (size_t i = 0; i < lse.size(); ++i) {
      INFO("lse row ", i);
      CHECK((lse[i] == want.lse[i] ||
             std::fabs(lse[i] - want.lse[i]) <= tol * (1 + std::fabs(want.lse[i]))));
    }
    check_close(scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype), causal, scale),
                outs[0], 0, 0);
  }
}

TEST_CASE("attention matches a hand-computed case") {
  // One query, two keys with scores 0 and ln 3 (scale 1): weights 1/4 and 3/4.
  Tensor q = from_vector<double>({1, 0}, {1, 2});
  Tensor k = from_vector<double>({0, 5, std::log(3.0), 7}, {2, 2});
  Tensor v = from_vector<double>({4, 8}, {2, 1});
  check_close(scaled_dot_product_attention(q, k, v, false, 1.0), {7}, {1, 1}, 1e-12);
  // Causal with Tq = Tk = 2: query 0 sees key 0 only.
  Tensor q2 = from_vector<double>({1, 0, 1, 0}, {2, 2});
  check_close(scaled_dot_product_attention(q2, k, v, true, 1.0), {4, 7}, {2, 1}, 1e-12);
}

TEST_CASE("attention gives masked keys no weight at all") {
  // Query 0 sees key 0 only: its output is v[0] = 1 exactly, however large the masked values
  // (a masked key's weight of even a denormal, times 1e300, would show).
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO("dtype ", dtype_name(dtype));
    const double big = dtype == DType::f64 ? 1e300 : 1e37;
    std::vector<double> v(20, big);
    v[0] = 1;
    auto in = random_inputs({{20, 4}, {20, 4}}, 9);
    const Tensor out = scaled_dot_product_attention(
        in[0].to(dtype), in[1].to(dtype), from_vector<double>(v, {20, 1}).to(dtype), true);
    CHECK(out.to_vector<double>()[0] == 1.0);
  }
}

TEST_CASE("attention agrees with a naive f64 loop, with and without the causal mask") {
  SUBCASE("Tq != Tk, several heads") {
    auto in = random_inputs({{2, 3, 5, 4}, {2, 3, 7, 4}, {2, 3, 7, 6}}, 5);
    check_attention(in[0], in[1], in[2], false);
    check_attention(in[0], in[1], in[2], true);
    check_attention(in[0], in[1], in[2], true, 0.3);
  }
  SUBCASE("more queries than keys: early rows see nothing under the mask") {
    auto in = random_inputs({{1, 6, 3}, {1, 4, 3}, {1, 4, 2}}, 6);
    check_attention(in[0], in[1], in[2], false);
    check_attention(in[0], in[1], in[2], true);
  }
  SUBCASE("several query blocks") {
    auto in = random_inputs({{1, 150, 8}, {1, 150, 8}, {1, 150, 8}}, 7);
    check_attention(in[0], in[1], in[2], true);
    auto in2 = random_inputs({{130, 8}, {70, 8}, {70, 3}}, 8);
    check_attention(in2[0], in2[1], in2[2], false);
  }
}

TEST_CASE("attention reads q, k, v from transposed and strided layouts and broadcasts heads") {
  // GPT: one [B, T, 3·H·d] projection split into q, k, v, each viewed [B, T, H, d] -> [B, H, T, d].
  const int64_t b = 2, t = 9, h = 2, d = 4;
  Tensor qkv = random_inputs({{b, t, 3 * h * d}}, 9)[0];
  auto parts = split(qkv, h * d, 2);
  std::vector<Tensor> heads;
  for (const Tensor& p : parts) heads.push_back(p.view({b, t, h, d}).transpose(1, 2));
  REQUIRE(!heads[0].is_contiguous());
  check_attention(heads[0], heads[1], heads[2], true);
  // Columns two elements apart (packed inside the kernel).
  Tensor q_cols = dlf::test::strided_copy(heads[0].contiguous());
  check_attention(q_cols, heads[1], dlf::test::strided_copy(heads[2].contiguous()), false);
  // k and v shared across the batch: leading dims broadcast.
  Tensor k1 = heads[1].narrow(0, 0, 1), v1 = heads[2].select(0, 1);
  Tensor out = scaled_dot_product_attention(heads[0], k1, v1, false);
  CHECK(out.shape() == Shape{b, h, t, d});
  NaiveAttention want =
      naive_attention(heads[0], k1.expand({b, h, t, d}), v1.expand({b, h, t, d}), false, 0.5);
  check_close(out, want.out, {b, h, t, d}, 1e-12, 1e-12);
}

TEST_CASE("attention refuses mismatched shapes and dtypes, naming them") {
  Tensor q = zeros({2, 3, 4}), k = zeros({2, 5, 4}), v = zeros({2, 5, 6});
  CHECK(scaled_dot_product_attention(q, k, v).shape() == Shape{2, 3, 6});
  check_error(
      [&] {
        scaled_dot_product_attention(q, zeros({2, 5, 3}), v);
      },
      {"scaled_dot_product_attention", "head dim", "[2, 3, 4]", "[2, 5, 3]"});
  check_error(
      [&] {
        scaled_dot_product_attention(q, k, zeros({2, 4, 6}));
      },
      {"number of keys", "[2, 4, 6]"});
  check_error(
      [&] {
        scaled_dot_product_attention(q, zeros({3, 5, 4}), zeros({3, 5, 6}));
      },
      {"broadcast", "[2, 3, 4]", "[3, 5, 4]"});
  check_error([&] { scaled_dot_product_attention(zeros({4}), k, v); }, {"at least 2 dims"});
  check_error([&] { scaled_dot_product_attention(q, k.to(DType::f64), v); }, {"f32", "f64"});
}

}  // namespace
