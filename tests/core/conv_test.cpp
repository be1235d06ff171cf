#include "op_check.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
using dlf::test::check_op;
using dlf::test::random_inputs;

namespace {

// Row-major element of a 4-D shape.
int64_t at(const Shape& s, int64_t a, int64_t b, int64_t c, int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

// Direct convolution in f64: out[n,o,y,x] = bias[o] + sum over the group's channels and the
// kernel of x[n, c, y*s - p + ky*d, x*s - p + kx*d] * w[o, c, ky, kx].
Tensor naive_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o) {
  const Shape xs = x.shape(), ws = w.shape();
  const int64_t cg = ws[1], og = ws[0] / o.groups;
  Shape os{xs[0], ws[0], 0, 0};
  for (int d = 0; d < 2; ++d) {
    os[2 + d] =
        (xs[2 + d] + 2 * o.padding[d] - o.dilation[d] * (ws[2 + d] - 1) - 1) / o.stride[d] + 1;
  }
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(numel(os)));
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t oc = 0; oc < os[1]; ++oc)
      for (int64_t y = 0; y < os[2]; ++y)
        for (int64_t xo = 0; xo < os[3]; ++xo) {
          double sum = bias.defined() ? bias.to_vector<double>()[oc] : 0.0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t ky = 0; ky < ws[2]; ++ky)
              for (int64_t kx = 0; kx < ws[3]; ++kx) {
                const int64_t iy = y * o.stride[0] - o.padding[0] + ky * o.dilation[0];
                const int64_t ix = xo * o.stride[1] - o.padding[1] + kx * o.dilation[1];
                if (iy < 0 || iy >= xs[2] || ix < 0 || ix >= xs[3]) continue;
                sum += xv[at(xs, n, (oc / og) * cg + c, iy, ix)] * wv[at(ws, oc, c, ky, kx)];
              }
          out[at(os, n, oc, y, xo)] = sum;
        }
  return from_vector(out, os);
}

// Transposed convolution as a scatter: every input point adds x * w[c, o, ky, kx] at
// out[n, o, y*s - p + ky*d, x*s - p + kx*d]; weight [C, O/groups, kH, kW].
Tensor naive_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias,
                              const ConvTranspose2dOptions& o) {
  const Shape xs = x.shape(), ws = w.shape();
  const int64_t cg = xs[1] / o.groups, og = ws[1];
  Shape os{xs[0], og * o.groups, 0, 0};
  for (int d = 0; d < 2; ++d) {
    os[2 + d] = (xs[2 + d] - 1) * o.stride[d] - 2 * o.padding[d] + o.dilation[d] * (ws[2 + d] - 1) +
                o.output_padding[d] + 1;
  }
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(numel(os)), 0.0);
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[1]; ++c)
      for (int64_t y = 0; y < xs[2]; ++y)
        for (int64_t xi = 0; xi < xs[3]; ++xi)
          for (int64_t oc = 0; oc < og; ++oc)
            for (int64_t ky = 0; ky < ws[2]; ++ky)
              for (int64_t kx = 0; kx < ws[3]; ++kx) {
                const int64_t oy = y * o.stride[0] - o.padding[0] + ky * o.dilation[0];
                const int64_t ox = xi * o.stride[1] - o.padding[1] + kx * o.dilation[1];
                if (oy < 0 || oy >= os[2] || ox < 0 || ox >= os[3]) continue;
                out[at(os, n, (c / cg) * og + oc, oy, ox)] +=
                    xv[at(xs, n, c, y, xi)] * wv[at(ws, c, oc, ky, kx)];
              }
  if (bias.defined()) {
    const std::vector<double> bv = bias.to_vector<double>();
    for (size_t i = 0; i < out.size(); ++i) out[i] += bv[(i / (os[2] * os[3])) % os[1]];
  }
  return from_vector(out, os);
}

double dot(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  REQUIRE(av.size() == bv.size());
  double s = 0;
  for (size_t i = 0; i < av.size(); ++i) s += av[i] * bv[i];
  return s;
}

struct ConvCase {
  const char* name;
  Shape x, weight;
  bool bias;
  Conv2dOptions options;
};

}  // namespace

TEST_CASE("conv2d computes a hand-computed case") {
  Tensor x = arange(1, 10, 1, {.dtype = DType::f64}).view({1, 1, 3, 3});
  Tensor w = from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2});
  check_close(conv2d(x, w, from_vector<double>({1})), {38, 48, 68, 78}, {1, 1, 2, 2});
  // Padding 1, stride 2: the corner windows see one, two or four input values.
  check_close(conv2d(x, w, {}, {.stride = {2, 2}, .padding = {1, 1}}), {4, 18, 36, 77},
              {1, 1, 2, 2});
  check_close(conv2d(x.to(DType::f32), w.to(DType::f32), {}, {.stride = {2, 2}, .padding = {1, 1}}),
              {4, 18, 36, 77}, {1, 1, 2, 2});
}

TEST_CASE("conv2d matches a direct convolution loop") {
  const std::vector<ConvCase> cases{
      {"stride 2, padding 1, bias",
       {2, 3, 7, 6},
       {4, 3, 3, 3},
       true,
       {.stride = {2, 2}, .padding = {1, 1}}},
      {"dilation 2, non-square kernel",
       {1, 2, 8, 7},
       {3, 2, 3, 2},
       false,
       {.padding = {2, 1}, .dilation = {2, 2}}},
      {"groups 2", {2, 4, 5, 5}, {6, 2, 3, 3}, true, {.padding = {1, 1}, .groups = 2}},
      {"depthwise, multiplier 2",
       {1, 4, 6, 5},
       {8, 1, 3, 3},
       true,
       {.stride = {1, 2}, .padding = {1, 0}, .groups = 4}},
      {"1x2 kernel, uneven stride", {2, 3, 5, 9}, {2, 3, 1, 2}, false, {.stride = {2, 3}}},
  };
  for (const ConvCase& c : cases) {
    INFO(c.name);
    std::vector<Shape> shapes{c.x, c.weight};
    if (c.bias) shapes.push_back({c.weight[0]});
    std::vector<Tensor> in = random_inputs(shapes, 7);
    if (!c.bias) in.push_back(Tensor());
    Tensor ref =
        check_op([&](const std::vector<Tensor>& t) { return conv2d(t[0], t[1], t[2], c.options); },
                 in, {.f32_tol = 1e-5, .bf16_tol = 5e-2});
    check_close(ref, naive_conv2d(in[0], in[1], in[2], c.options), 1e-12, 1e-12);
  }
}

TEST_CASE("conv_transpose2d computes a hand-computed case") {
  // Stride 2 with a 2x2 kernel of ones copies each input value into its own 2x2 block.
  Tensor x = from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor w = ones({1, 1, 2, 2}, {.dtype = DType::f64});
  const std::vector<double> blocks{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  check_close(conv_transpose2d(x, w, {}, {.stride = {2, 2}}), blocks, {1, 1, 4, 4});
  check_close(conv_transpose2d(x.to(DType::f32), w.to(DType::f32), {}, {.stride = {2, 2}}), blocks,
              {1, 1, 4, 4});
}

TEST_CASE("conv_transpose2d matches a scatter loop") {
  struct Case {
    const char* name;
    Shape x, weight;
    bool bias;
    ConvTranspose2dOptions options;
  };
  const std::vector<Case> cases{
      {"stride 2, padding 1, output_padding 1, bias",
       {2, 4, 3, 4},
       {4, 3, 3, 3},
       true,
       {.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1}}},
      {"groups 2, dilation, non-square kernel",
       {1, 4, 4, 3},
       {4, 3, 2, 3},
       false,
       {.stride = {2, 1}, .dilation = {1, 2}, .groups = 2}},
      // output_padding 1 >= stride 1: oneDNN cannot take it, the loops do for f32/bf16 too.
      {"output_padding below the dilation",
       {1, 2, 3, 3},
       {2, 2, 2, 2},
       true,
       {.output_padding = {1, 1}, .dilation = {2, 2}}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<Shape> shapes{c.x, c.weight};
    if (c.bias) shapes.push_back({c.weight[1] * c.options.groups});
    std::vector<Tensor> in = random_inputs(shapes, 11);
    if (!c.bias) in.push_back(Tensor());
    Tensor ref = check_op(
        [&](const std::vector<Tensor>& t) { return conv_transpose2d(t[0], t[1], t[2], c.options); },
        in, {.f32_tol = 1e-5, .bf16_tol = 5e-2});
    check_close(ref, naive_conv_transpose2d(in[0], in[1], in[2], c.options), 1e-12, 1e-12);
  }
}

TEST_CASE("conv_transpose2d is the adjoint of conv2d") {
  const Conv2dOptions o{.stride = {2, 2}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2};
  std::vector<Tensor> in = random_inputs({{2, 4, 8, 9}, {6, 2, 3, 2}}, 3);
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO("dtype ", dtype_name(dtype));
    Tensor cx = conv2d(x.to(dtype), w.to(dtype), {}, o);
    Tensor y = random_inputs({cx.shape()}, 5)[0];
    // output_padding makes conv_transpose2d's output exactly x's size again.
    ConvTranspose2dOptions t{
        .stride = o.stride, .padding = o.padding, .dilation = o.dilation, .groups = o.groups};
    for (int d = 0; d < 2; ++d) {
      const int64_t span = o.dilation[d] * (w.size(2 + d) - 1) + 1;
      t.output_padding[d] =
          x.size(2 + d) - ((y.size(2 + d) - 1) * o.stride[d] - 2 * o.padding[d] + span);
    }
    Tensor xt = conv_transpose2d(y.to(dtype), w.to(dtype), {}, t);
    REQUIRE(xt.shape() == x.shape());
    const double lhs = dot(cx, y), rhs = dot(x, xt);
    CHECK(std::fabs(lhs - rhs) <= (dtype == DType::f64 ? 1e-10 : 1e-3) * std::fabs(lhs));
  }
}

TEST_CASE("conv2d reports its FLOPs") {
  std::vector<Tensor> in = random_inputs({{1, 2, 5, 5}, {3, 2, 3, 3}, {3}});
  const OpDef& op = find_op("conv2d");
  Attrs a{{"stride", std::vector<int64_t>{1, 1}},
          {"padding", std::vector<int64_t>{0, 0}},
          {"dilation", std::vector<int64_t>{1, 1}},
          {"groups", int64_t{1}}};
  std::vector<Tensor> out = dispatch(op, in, a);
  const Cost c = op_cost(op, in, a, out);
  CHECK(c.flops == 2 * 3 * 9 * 2 * 9 + 3 * 9);  // 2·O·Ho·Wo·C·kH·kW + bias adds
  CHECK(c.bytes_read == 8 * (50 + 54 + 3));
  CHECK(c.bytes_written == 8 * 27);
}

TEST_CASE("conv2d and conv_transpose2d refuse bad input") {
  Tensor x = zeros({1, 3, 5, 5});
  check_error([&] { conv2d(x, zeros({2, 4, 3, 3})); }, {"conv2d", "[1, 3, 5, 5]", "[2, 4, 3, 3]"});
  check_error(
      [&] {
        conv2d(x, zeros({2, 1, 3, 3}), {}, {.groups = 2});
      },
      {"conv2d", "groups=2", "[1, 3, 5, 5]"});
  check_error(
      [&] {
        conv2d(x, zeros({2, 3, 6, 3}));
      },
      {"conv2d", "larger than the padded input", "[2, 3, 6, 3]"});
  check_error(
      [&] {
        conv2d(zeros({3, 5, 5}), zeros({2, 3, 3, 3}));
      },
      {"conv2d", "4-D", "[3, 5, 5]"});
  check_error([&] { conv2d(x, zeros({2, 3, 3, 3}), zeros({3})); }, {"conv2d", "bias", "[3]"});
  check_error([&] { conv2d(x, zeros({2, 3, 3, 3}, {.dtype = DType::f64})); }, {"conv2d", "f64"});
  check_error(
      [&] {
        conv_transpose2d(x, zeros({4, 2, 3, 3}));
      },
      {"conv_transpose2d", "[1, 3, 5, 5]", "[4, 2, 3, 3]"});
  check_error(
      [&] {
        conv_transpose2d(x, zeros({3, 2, 3, 3}), {}, {.output_padding = {1, 1}});
      },
      {"conv_transpose2d", "output_padding"});
  check_error(
      [&] {
        conv_transpose2d(zeros({1, 3, 5}), zeros({3, 2, 3, 3}));
      },
      {"conv_transpose2d", "4-D"});
}
