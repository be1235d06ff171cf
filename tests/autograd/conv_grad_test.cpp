#include <dlf/core/op.h>

#include "autograd/grad_cases.h"

using namespace dlf;
using test::GradCase;
using test::leaves;

namespace {
using V = std::vector<Tensor>;

Tensor weight_grad(const Tensor& x, const Tensor& g, const Shape& weight_shape,
                   const Conv2dOptions& o) {
  return dispatch1(find_op("conv2d_weight_grad"), {x, g},
                   {{"stride", Shape{o.stride[0], o.stride[1]}},
                    {"padding", Shape{o.padding[0], o.padding[1]}},
                    {"dilation", Shape{o.dilation[0], o.dilation[1]}},
                    {"groups", o.groups},
                    {"weight_shape", weight_shape}});
}

Tensor pool_backward(const char* op, const Tensor& g, Attrs attrs) {
  return dispatch1(find_op(op), {g}, std::move(attrs));
}

[[maybe_unused]] const bool cases = test::add_grad_cases(
    "conv",
    {
        GradCase{"conv2d", "3x3, padding 1, bias",
                 [] {
                   return leaves({{2, 2, 5, 5}, {3, 2, 3, 3}, {3}});
                 },
                 [](const V& x) {
                   return conv2d(x[0], x[1], x[2], {.padding = {1, 1}});
                 }},
        GradCase{"conv2d", "stride 2x1, dilation 2, non-square kernel, no bias",
                 [] {
                   return leaves({{1, 2, 7, 6}, {2, 2, 2, 3}});
                 },
                 [](const V& x) {
                   return conv2d(x[0], x[1], {},
                                 {.stride = {2, 1}, .padding = {1, 0}, .dilation = {2, 2}});
                 }},
        GradCase{"conv2d", "groups 2, transposed input",
                 [] {
                   return V{test::transposed_leaf({4, 4, 4, 1}), leaves({{4, 2, 2, 2}})[0],
                            leaves({{4}})[0]};
                 },
                 [](const V& x) {
                   return conv2d(x[0].permute({3, 2, 1, 0}), x[1], x[2], {.groups = 2});
                 }},
        GradCase{"conv2d", "depthwise, stride 2 with a remainder, transposed weight",
                 [] {
                   return V{leaves({{2, 3, 6, 5}})[0], test::transposed_leaf({3, 3, 1, 3})};
                 },
                 [](const V& x) {
                   return conv2d(x[0], x[1].permute({3, 2, 1, 0}), {},
                                 {.stride = {2, 2}, .padding = {0, 1}, .groups = 3});
                 }},
        GradCase{"conv2d", "one pixel, 1x1 kernel",
                 [] {
                   return leaves({{1, 1, 1, 1}, {2, 1, 1, 1}, {2}});
                 },
                 [](const V& x) { return conv2d(x[0], x[1], x[2]); }},
        GradCase{"conv_transpose2d", "stride 2, output_padding 1, bias",
                 [] {
                   return leaves({{2, 2, 3, 3}, {2, 3, 3, 3}, {3}});
                 },
                 [](const V& x) {
                   return conv_transpose2d(
                       x[0], x[1], x[2],
                       {.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1}});
                 }},
        GradCase{"conv_transpose2d", "groups 2, dilation 2",
                 [] {
                   return leaves({{1, 4, 3, 3}, {4, 1, 2, 2}});
                 },
                 [](const V& x) {
                   return conv_transpose2d(x[0], x[1], {}, {.dilation = {2, 2}, .groups = 2});
                 }},
        GradCase{"conv_transpose2d", "transposed input, non-square kernel, stride 1x2, padding 0x1",
                 [] {
                   return V{test::transposed_leaf({3, 3, 2, 2}), leaves({{2, 2, 2, 3}})[0]};
                 },
                 [](const V& x) {
                   return conv_transpose2d(x[0].permute({3, 2, 1, 0}), x[1], {},
                                           {.stride = {1, 2}, .padding = {0, 1}});
                 }},
        GradCase{"conv_transpose2d", "output_padding 1 >= stride 1 (allowed by dilation 2)",
                 [] {
                   return leaves({{1, 2, 3, 3}, {2, 2, 2, 2}});
                 },
                 [](const V& x) {
                   return conv_transpose2d(x[0], x[1], {},
                                           {.output_padding = {1, 1}, .dilation = {2, 2}});
                 }},
        GradCase{"conv2d_weight_grad", "groups 2, stride 2, padding 1 (double backward)",
                 [] {
                   return leaves({{2, 4, 5, 5}, {2, 2, 3, 3}});
                 },
                 [](const V& x) {
                   return weight_grad(x[0], x[1], {2, 2, 2, 2},
                                      {.stride = {2, 2}, .padding = {1, 1}, .groups = 2});
                 }},
        GradCase{"conv2d_weight_grad", "gradient smaller than the output (conv_transpose2d's)",
                 [] {
                   return leaves({{1, 2, 4, 4}, {1, 3, 2, 3}});
                 },
                 [](const V& x) {
                   return weight_grad(x[0], x[1], {3, 2, 2, 2}, {.dilation = {2, 1}});
                 }},
        GradCase{"max_pool2d", "2x2 windows",
                 [] {
                   return leaves({{2, 2, 4, 4}});
                 },
                 [](const V& x) { return max_pool2d(x[0]); }},
        GradCase{"max_pool2d", "overlapping 3x3 windows, stride 2, padding 1",
                 [] {
                   return leaves({{1, 2, 5, 5}});
                 },
                 [](const V& x) {
                   return max_pool2d(x[0], {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
                 }},
        GradCase{
            "max_pool2d", "transposed input, 2x3 windows, stride 1",
            [] {
              return V{test::transposed_leaf({5, 4, 2, 1})};
            },
            [](const V& x) {
              return max_pool2d(x[0].permute({3, 2, 1, 0}), {.kernel = {2, 3}, .stride = {1, 1}});
            }},
        GradCase{"avg_pool2d", "2x2",
                 [] {
                   return leaves({{2, 2, 4, 4}});
                 },
                 [](const V& x) { return avg_pool2d(x[0]); }},
        GradCase{"avg_pool2d", "3x3, stride 2, padding 1 counted, odd size",
                 [] {
                   return leaves({{1, 2, 5, 5}});
                 },
                 [](const V& x) {
                   return avg_pool2d(x[0], {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
                 }},
        GradCase{"avg_pool2d", "transposed input, overlapping 2x3 windows, padding 0x1",
                 [] {
                   return V{test::transposed_leaf({5, 4, 2, 1})};
                 },
                 [](const V& x) {
                   return avg_pool2d(x[0].permute({3, 2, 1, 0}),
                                     {.kernel = {2, 3}, .stride = {1, 2}, .padding = {0, 1}});
                 }},
        GradCase{"avg_pool2d_backward", "3x3, stride 2, padding 1 (double backward)",
                 [] {
                   return leaves({{1, 2, 3, 3}});
                 },
                 [](const V& x) {
                   return pool_backward("avg_pool2d_backward", x[0],
                                        {{"kernel", Shape{3, 3}},
                                         {"stride", Shape{2, 2}},
                                         {"padding", Shape{1, 1}},
                                         {"input_shape", Shape{1, 2, 5, 5}}});
                 }},
        GradCase{"upsample_nearest2d", "x2 and 3 -> 5",
                 [] {
                   return leaves({{1, 2, 2, 3}});
                 },
                 [](const V& x) {
                   return upsample_nearest2d(x[0], {4, 5});
                 }},
        GradCase{"upsample_nearest2d", "downsampling 5x4 -> 3x2, transposed input",
                 [] {
                   return V{test::transposed_leaf({4, 5, 2, 1})};
                 },
                 [](const V& x) {
                   return upsample_nearest2d(x[0].permute({3, 2, 1, 0}), {3, 2});
                 }},
        GradCase{"upsample_bilinear2d", "half-pixel centres",
                 [] {
                   return leaves({{1, 2, 3, 3}});
                 },
                 [](const V& x) {
                   return upsample_bilinear2d(x[0], {5, 4});
                 }},
        GradCase{"upsample_bilinear2d", "align_corners, transposed input",
                 [] {
                   return V{test::transposed_leaf({3, 2, 2, 1})};
                 },
                 [](const V& x) {
                   return upsample_bilinear2d(x[0].permute({3, 2, 1, 0}), {4, 3}, true);
                 }},
        GradCase{
            "upsample_bilinear2d", "downsampling 4x5 -> 3x2, both corner modes",
            [] {
              return leaves({{2, 1, 4, 5}});
            },
            [](const V& x) {
              return upsample_bilinear2d(x[0], {3, 2}) + upsample_bilinear2d(x[0], {3, 2}, true);
            }},
        GradCase{"upsample_nearest2d_backward", "2x3 -> 4x5 (double backward)",
                 [] {
                   return leaves({{1, 2, 4, 5}});
                 },
                 [](const V& x) {
                   return pool_backward("upsample_nearest2d_backward", x[0],
                                        {{"input_size", Shape{2, 3}}});
                 }},
        GradCase{"upsample_bilinear2d_backward", "3x3 -> 5x4, both corner modes (double backward)",
                 [] {
                   return leaves({{1, 2, 5, 4}});
                 },
                 [](const V& x) {
                   return pool_backward("upsample_bilinear2d_backward", x[0],
                                        {{"input_size", Shape{3, 3}}, {"align_corners", false}}) +
                          pool_backward("upsample_bilinear2d_backward", x[0],
                                        {{"input_size", Shape{3, 3}}, {"align_corners", true}});
                 }},
    });

// Backpropagates sum(fn(inputs)^2) once in f64 and once in `dtype` (oneDNN's backward
// primitives, or the loops where oneDNN refuses the geometry) and compares every gradient.
void check_against_f64(const std::function<Tensor(const V&)>& fn, const std::vector<Shape>& shapes,
                       DType dtype, double atol, double rtol) {
  V in64 = leaves(shapes, 9);
  V low;
  for (const Tensor& t : in64) low.push_back(t.detach().to(dtype).requires_grad_());
  for (const V* in : {&in64, &low}) {
    const Tensor y = fn(*in).to(DType::f64);
    sum(y * y).backward();
  }
  for (size_t i = 0; i < in64.size(); ++i) {
    INFO("input ", i);
    test::check_close(low[i].grad().to(DType::f64), in64[i].grad(), atol, rtol);
  }
}

}  // namespace

TEST_CASE("gradcheck: convolution, pooling, upsampling") { test::run_grad_cases("conv"); }

TEST_CASE("the f32 and bf16 conv and pooling backward agree with the f64 one") {
  const auto conv = [](const V& x) {
    return conv2d(x[0], x[1], x[2],
                  {.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}, .groups = 2});
  };
  const std::vector<Shape> conv_shapes{{2, 4, 7, 6}, {6, 2, 3, 2}, {6}};
  const auto conv_t = [](const V& x) {
    return conv_transpose2d(
        x[0], x[1], x[2],
        {.stride = {2, 2}, .padding = {1, 0}, .output_padding = {1, 0}, .groups = 2});
  };
  const std::vector<Shape> conv_t_shapes{{2, 4, 3, 4}, {4, 3, 3, 2}, {6}};
  // Width stride 3 > kernel 2: some inputs are in no window and get a zero gradient.
  const auto pool = [](const V& x) {
    return avg_pool2d(x[0], {.kernel = {3, 2}, .stride = {2, 3}, .padding = {1, 1}});
  };
  SUBCASE("f32") {
    check_against_f64(conv, conv_shapes, DType::f32, 1e-4, 1e-4);
    check_against_f64(conv_t, conv_t_shapes, DType::f32, 1e-4, 1e-4);
    check_against_f64(pool, {{2, 3, 6, 5}}, DType::f32, 1e-5, 1e-5);
  }
  SUBCASE("f32, a weight gradient oneDNN refuses (output_padding >= stride): the loops") {
    check_against_f64(
        [](const V& x) {
          return conv_transpose2d(x[0], x[1], {}, {.output_padding = {1, 1}, .dilation = {2, 2}});
        },
        {{2, 2, 4, 3}, {2, 3, 2, 2}}, DType::f32, 1e-4, 1e-4);
  }
  SUBCASE("bf16") {
    check_against_f64(conv, conv_shapes, DType::bf16, 0.25, 0.05);
    check_against_f64(pool, {{2, 3, 6, 5}}, DType::bf16, 0.02, 0.02);
  }
}

TEST_CASE("conv2d_weight_grad: hand-computed values and bad shapes") {
  // x = 1..9 in a 3x3 plane, grad = ones over the 2x2 output of a 2x2 kernel: each weight
  // sums the 2x2 block of x it meets.
  const Tensor x = arange(1, 10, 1, {.dtype = DType::f32}).reshape({1, 1, 3, 3});
  const Tensor g = ones({1, 1, 2, 2}, {.dtype = DType::f32});
  test::check_close(weight_grad(x, g, {1, 1, 2, 2}, {}), {12, 16, 24, 28}, {1, 1, 2, 2});
  test::check_close(weight_grad(x.to(DType::f64), g.to(DType::f64), {1, 1, 2, 2}, {}),
                    {12, 16, 24, 28}, {1, 1, 2, 2});
  test::check_error(
      [&] {
        weight_grad(x, ones({1, 1, 3, 3}, {.dtype = DType::f32}), {1, 1, 2, 2}, {});
      },
      {"conv2d_weight_grad", "[1, 1, 3, 3]", "[1, 1, 2, 2]"});
  test::check_error(
      [&] {
        weight_grad(x, g, {1, 2, 2, 2}, {});
      },
      {"conv2d_weight_grad", "groups=1"});
}
