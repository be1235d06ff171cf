#include <cmath>

#include "op_check.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
using dlf::test::check_op;
using dlf::test::random_inputs;

namespace {

struct NaiveNorm {
  std::vector<double> y, mean, rstd;
};

// The reference: x contiguous as `blocks` blocks of n elements; element `pos` of block b uses
// parameter (b % groups) * (n / every) + pos / every.
NaiveNorm naive_norm(const Tensor& x, int64_t blocks, int64_t n, int64_t groups, int64_t every,
                     const Tensor& weight, const Tensor& bias, double eps) {
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> w = weight.defined() ? weight.to_vector<double>() : std::vector<double>{};
  std::vector<double> b = bias.defined() ? bias.to_vector<double>() : std::vector<double>{};
  NaiveNorm r{std::vector<double>(v.size()), {}, {}};
  for (int64_t blk = 0; blk < blocks; ++blk) {
    double m = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) m += v[blk * n + i] / n;
    for (int64_t i = 0; i < n; ++i) var += (v[blk * n + i] - m) * (v[blk * n + i] - m) / n;
    const double rstd = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = blk % groups * (n / every) + i / every;
      double y = (v[blk * n + i] - m) * rstd;
      if (!w.empty()) y *= w[p];
      if (!b.empty()) y += b[p];
      r.y[blk * n + i] = y;
    }
    r.mean.push_back(m);
    r.rstd.push_back(rstd);
  }
  return r;
}

void check_norm(const std::vector<Tensor>& got, const NaiveNorm& want, const Shape& stats,
                double tol) {
  check_close(got[0], want.y, got[0].shape(), tol, tol);
  check_close(got[1], want.mean, stats, tol, tol);
  check_close(got[2], want.rstd, stats, tol, tol);
}

}  // namespace

TEST_CASE("softmax and log_softmax give hand-computed values") {
  Tensor x = from_vector<double>({0, std::log(2.0), std::log(3.0), 0, 0, 0}, {2, 3});
  check_close(softmax(x, 1), {1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3}, {2, 3});
  check_close(softmax(x.to(DType::f32), -1), {1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3},
              {2, 3});
  check_close(softmax(x, 0), {0.5, 2.0 / 3, 0.75, 0.5, 1.0 / 3, 0.25}, {2, 3});
  check_close(log_softmax(x, 1),
              {std::log(1.0 / 6), std::log(2.0 / 6), std::log(0.5), std::log(1.0 / 3),
               std::log(1.0 / 3), std::log(1.0 / 3)},
              {2, 3});
  // An expanded input: both rows read the same three values.
  check_close(softmax(from_vector<float>({0, std::log(2.0f), std::log(3.0f)}).expand({2, 3}), 1),
              {1.0 / 6, 2.0 / 6, 0.5, 1.0 / 6, 2.0 / 6, 0.5}, {2, 3});
}

TEST_CASE("softmax rows sum to one and log_softmax is log(softmax) along every dim") {
  Tensor x = random_inputs({{4, 7, 5}}, 11)[0];
  for (DType dtype : {DType::f64, DType::f32}) {
    for (int64_t dim : {0, 1, 2, -1}) {
      INFO("dtype ", std::string(dtype_name(dtype)), " dim ", dim);
      Tensor xs = x.to(dtype);
      Tensor s = softmax(xs, dim);
      Shape reduced = x.shape();
      reduced.erase(reduced.begin() + (dim + 3) % 3);
      check_close(sum(s, {dim}), std::vector<double>(numel(reduced), 1.0), reduced, 1e-6);
      std::vector<double> ls = log_softmax(xs, dim).to_vector<double>();
      std::vector<double> sv = s.to_vector<double>();
      for (size_t i = 0; i < sv.size(); ++i) CHECK(std::fabs(std::exp(ls[i]) - sv[i]) < 1e-6);
    }
  }
}

TEST_CASE("softmax is stable for large-magnitude inputs") {
  // Steps of 4 are exact in bf16 around 1000.
  const double e4 = std::exp(-4.0), e8 = std::exp(-8.0), z = 1 + e4 + e8, lz = std::log(z);
  for (DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    INFO("dtype ", std::string(dtype_name(dtype)));
    const double tol = dtype == DType::bf16 ? 1e-2 : 1e-6;
    Tensor x = from_vector<double>({1000, 1004, 1008, -1000, -1004, -1008}, {2, 3}).to(dtype);
    for (const Tensor& in : {x, dlf::test::strided_copy(x)}) {
      check_close(softmax(in, 1), {e8 / z, e4 / z, 1 / z, 1 / z, e4 / z, e8 / z}, {2, 3}, tol);
      check_close(log_softmax(in, 1), {-8 - lz, -4 - lz, -lz, -lz, -4 - lz, -8 - lz}, {2, 3}, tol,
                  tol);
    }
  }
  check_close(log_softmax(from_vector<float>({1000, 0}), 0), {0, -1000}, {2});
}

TEST_CASE("softmax agrees across dtypes and layouts (check_op)") {
  auto in = random_inputs({{3, 4, 5}}, 5);
  check_op([](const auto& t) { return softmax(t[0], 1); }, in, {.bf16_tol = 0.02});
  check_op([](const auto& t) { return softmax(t[0], 0); }, in, {.bf16_tol = 0.02});
  check_op([](const auto& t) { return log_softmax(t[0], -1); }, in, {.bf16_tol = 0.05});
  check_op([](const auto& t) { return log_softmax(t[0].transpose(0, 2), 1); }, in);
}

TEST_CASE("layer_norm matches a naive f64 loop, with and without weight and bias") {
  Tensor hand = layer_norm(from_vector<double>({1, 2, 3, 4}), {4}, {}, {}, 0.0);
  const double r = 1 / std::sqrt(1.25);
  check_close(hand, {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, {4});

  auto in = random_inputs({{2, 3, 4}, {3, 4}, {3, 4}, {4}, {4}}, 2);
  const OpDef& op = find_op("layer_norm");
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO("dtype ", std::string(dtype_name(dtype)));
    auto t = dlf::test::convert_floating(in, dtype);
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
    Attrs two{{"normalized_shape", Shape{3, 4}}, {"eps", 1e-5}};
    check_norm(dispatch(op, {t[0], t[1], t[2]}, two),
               naive_norm(in[0], 2, 12, 1, 1, in[1], in[2], 1e-5), {2}, tol);
    check_norm(dispatch(op, {t[0], Tensor(), Tensor()}, two),
               naive_norm(in[0], 2, 12, 1, 1, {}, {}, 1e-5), {2}, tol);
    Attrs one{{"normalized_shape", Shape{4}}, {"eps", 1e-3}};
    check_norm(dispatch(op, {t[0], t[3], Tensor()}, one),
               naive_norm(in[0], 6, 4, 1, 1, in[3], {}, 1e-3), {6}, tol);
    check_norm(dispatch(op, {t[0], Tensor(), t[4]}, one),
               naive_norm(in[0], 6, 4, 1, 1, {}, in[4], 1e-3), {6}, tol);
  }
  check_op(
      [](const auto& t) {
        return layer_norm(t[0], {3, 4}, t[1], t[2]);
      },
      in, {.bf16_tol = 0.1});
  check_op([](const auto& t) { return layer_norm(t[0].transpose(0, 1), {4}, t[3]); }, in);
}

TEST_CASE("rms_norm gives hand values and agrees across dtypes, layouts and its composite") {
  // mean of squares (1 + 4 + 9 + 16) / 4 = 7.5
  const Tensor x = from_vector<double>({1, -2, 3, 4}, {1, 4});
  const double r = 1 / std::sqrt(7.5 + 0.5);
  const std::vector<Tensor> out =
      dispatch(find_op("rms_norm"), {x, from_vector<double>({1, 2, 0, -1})}, {{"eps", 0.5}});
  check_close(out[0], {r, -4 * r, 0, -4 * r}, {1, 4}, 1e-15);
  check_close(out[1], {r}, {1}, 1e-15);
  CHECK(dispatch(find_op("rms_norm"), {x.to(DType::bf16), Tensor()}, {{"eps", 0.5}})[1].dtype() ==
        DType::f32);

  auto in = random_inputs({{3, 5, 67}, {67}}, 6);
  const auto composite = [](const Tensor& t, const Tensor& w) {
    return t * rsqrt(mean(t * t, {-1}, true) + 1e-6) * w;
  };
  check_close(check_op([](const auto& t) { return rms_norm(t[0], t[1]); }, in, {.bf16_tol = 3e-2}),
              composite(in[0], in[1]), 1e-13, 1e-13);
  check_op([](const auto& t) { return rms_norm(t[0].transpose(0, 2), {}, 1e-3); }, {in[0]});
  // The fused backward against the composite's gradients.
  Tensor xa = in[0].detach().requires_grad_(), wa = in[1].detach().requires_grad_();
  Tensor xb = in[0].detach().requires_grad_(), wb = in[1].detach().requires_grad_();
  const Tensor g = random_inputs({{3, 5, 67}}, 7)[0];
  autograd::backward({rms_norm(xa, wa)}, {g});
  autograd::backward({composite(xb, wb)}, {g});
  check_close(xa.grad(), xb.grad(), 1e-12, 1e-12);
  check_close(wa.grad(), wb.grad(), 1e-12, 1e-12);
}

TEST_CASE("group_norm matches a naive f64 loop, with and without weight and bias") {
  auto in = random_inputs({{2, 6, 3, 2}, {6}, {6}}, 4);
  const OpDef& op = find_op("group_norm");
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO("dtype ", std::string(dtype_name(dtype)));
    auto t = dlf::test::convert_floating(in, dtype);
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
    Attrs three{{"groups", int64_t{3}}, {"eps", 1e-5}};
    check_norm(dispatch(op, {t[0], t[1], t[2]}, three),
               naive_norm(in[0], 6, 12, 3, 6, in[1], in[2], 1e-5), {2, 3}, tol);
    check_norm(dispatch(op, {t[0], Tensor(), Tensor()}, three),
               naive_norm(in[0], 6, 12, 3, 6, {}, {}, 1e-5), {2, 3}, tol);
    Attrs one{{"groups", int64_t{1}}, {"eps", 1e-5}};
    check_norm(dispatch(op, {t[0], t[1], Tensor()}, one),
               naive_norm(in[0], 2, 36, 1, 6, in[1], {}, 1e-5), {2, 1}, tol);
  }
  check_op([](const auto& t) { return group_norm(t[0], 2, t[1], t[2]); }, in, {.bf16_tol = 0.1});
  // Channels-last memory: the same values through a permuted view.
  Tensor nhwc = in[0].permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  check_close(group_norm(nhwc, 3, in[1], in[2]), group_norm(in[0], 3, in[1], in[2]), 1e-12);
  CHECK(group_norm(nhwc, 3, in[1], in[2]).is_channels_last());
}

TEST_CASE("group_norm_silu is silu of group_norm, row-major and channels last") {
  auto in = random_inputs({{2, 6, 3, 4}, {6}, {6}}, 5);
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO("dtype ", std::string(dtype_name(dtype)));
    auto t = dlf::test::convert_floating(in, dtype);
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
    const Tensor expected = silu(group_norm(t[0], 3, t[1], t[2]));
    check_close(group_norm_silu(t[0], 3, t[1], t[2]), expected, tol, tol);
    check_close(group_norm_silu(t[0], 3), silu(group_norm(t[0], 3)), tol, tol);
    const Tensor nhwc =
        group_norm_silu(t[0].contiguous(MemoryFormat::channels_last), 3, t[1], t[2]);
    CHECK(nhwc.is_channels_last());
    check_close(nhwc, expected, tol, tol);
  }
}

TEST_CASE("normalisations refuse bad input") {
  Tensor x = zeros({2, 3, 4});
  check_error([&] { softmax(zeros({2, 3}), 2); }, {"softmax", "dim 2", "[2, 3]"});
  check_error([&] { log_softmax(zeros({2, 3}), -3); }, {"log_softmax", "dim -3", "[2, 3]"});
  check_error([&] { softmax(from_vector<int64_t>({1}), 0); }, {"softmax", "i64"});
  check_error([&] { layer_norm(x, {3}); }, {"layer_norm", "[3]", "[2, 3, 4]"});
  check_error([&] { layer_norm(x, {2, 3, 4, 5}); }, {"layer_norm", "[2, 3, 4, 5]"});
  check_error([&] { layer_norm(x, {4}, zeros({3})); }, {"layer_norm", "weight", "[3]", "[4]"});
  check_error([&] { layer_norm(x, {4}, {}, zeros({4}, {.dtype = DType::f64})); },
              {"layer_norm", "bias", "f64"});
  check_error([&] { group_norm(zeros({2, 6, 4}), 4); }, {"group_norm", "6 channels", "4 groups"});
  check_error(
      [&] {
        group_norm(zeros({2, 6, 4}), 3, zeros({3}));
      },
      {"group_norm", "weight", "[3]", "[6]"});
  check_error([&] { group_norm(zeros({6}), 3); }, {"group_norm", "[6]"});
  check_error([&] { rms_norm(x, zeros({3})); }, {"rms_norm", "weight", "[3]", "[4]"});
  check_error([&] { rms_norm(zeros({0})); }, {"rms_norm", "[0]"});
  check_error([&] { rms_norm(from_vector<int64_t>({1})); }, {"rms_norm", "i64"});
}
