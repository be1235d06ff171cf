#include "autograd/grad_cases.h"

using namespace dlf;
using test::GradCase;
using test::leaves;

namespace {
using V = std::vector<Tensor>;

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
        GradCase{"conv2d", "stride 2, dilation 2, non-square kernel, no bias",
                 [] {
                   return leaves({{1, 2, 7, 6}, {2, 2, 2, 3}});
                 },
                 [](const V& x) {
                   return conv2d(x[0], x[1], {},
                                 {.stride = {2, 1}, .padding = {1, 0}, .dilation = {2, 2}});
                 }},
        GradCase{"conv2d", "groups 2, transposed input",
                 [] {
                   return V{test::transposed_leaf({4, 4, 4, 1}), leaves({{4, 2, 2, 2}, {4}})[0],
                            leaves({{4}})[0]};
                 },
                 [](const V& x) {
                   return conv2d(x[0].permute({3, 2, 1, 0}), x[1], x[2], {.groups = 2});
                 }},
        GradCase{"conv2d", "depthwise, stride 2 with a remainder",
                 [] {
                   return leaves({{1, 3, 6, 6}, {3, 1, 3, 3}});
                 },
                 [](const V& x) {
                   return conv2d(x[0], x[1], {}, {.stride = {2, 2}, .groups = 3});
                 }},
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
        GradCase{"avg_pool2d", "2x2",
                 [] {
                   return leaves({{2, 2, 4, 4}});
                 },
                 [](const V& x) { return avg_pool2d(x[0]); }},
        GradCase{"avg_pool2d", "3x3, stride 2, padding 1, odd size",
                 [] {
                   return leaves({{1, 2, 5, 5}});
                 },
                 [](const V& x) {
                   return avg_pool2d(x[0], {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
                 }},
        GradCase{"upsample_nearest2d", "x2 and 3 -> 5",
                 [] {
                   return leaves({{1, 2, 2, 3}});
                 },
                 [](const V& x) {
                   return upsample_nearest2d(x[0], {4, 5});
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
    });
}  // namespace

TEST_CASE("gradcheck: convolution, pooling, upsampling") { test::run_grad_cases("conv"); }

TEST_CASE("the f32 conv backward (oneDNN forward ops) agrees with the f64 one") {
  V in64 = leaves({{2, 3, 6, 6}, {4, 3, 3, 3}, {4}}, 9);
  V in32;
  for (const Tensor& t : in64) in32.push_back(t.detach().to(DType::f32).requires_grad_());
  for (const V* in : {&in64, &in32}) {
    Tensor y = conv2d((*in)[0], (*in)[1], (*in)[2], {.stride = {2, 2}, .padding = {1, 1}});
    sum(y * y).backward();
  }
  for (int i = 0; i < 3; ++i) test::check_close(in32[i].grad(), in64[i].grad(), 1e-3, 1e-4);
}
