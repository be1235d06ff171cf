#include <limits>

#include "op_check.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
using dlf::test::check_op;
using dlf::test::random_inputs;
using dlf::test::strided_copy;

namespace {

// A 4x4 plane with a tie (the two 4s of the bottom-right 2x2 window).
Tensor plane(DType dtype = DType::f64) {
  return from_vector<double>({1, 5, 2, 0,  //
                              3, 4, 8, 7,  //
                              9, 6, 1, 2,  //
                              0, 3, 4, 4},
                             {1, 1, 4, 4})
      .to(dtype);
}

Attrs pool_attrs(std::vector<int64_t> kernel, std::vector<int64_t> stride,
                 std::vector<int64_t> padding) {
  return {{"kernel", kernel}, {"stride", stride}, {"padding", padding}};
}

// max_pool2d's (values, indices), through dispatch to see the second output.
std::vector<Tensor> max_pool_with_indices(const Tensor& x, const Attrs& a) {
  return dispatch(find_op("max_pool2d"), {x}, a);
}

// Pooling in f64 by definition: values, flat argmax (first max wins) and the padded-window
// average (padding counted in the divisor).
struct NaivePool {
  std::vector<double> max, avg;
  std::vector<int64_t> argmax;
};
NaivePool naive_pool(const Tensor& x, const Pool2dOptions& o, Shape& out_shape) {
  const Shape s = x.shape();
  out_shape = {s[0], s[1], (s[2] + 2 * o.padding[0] - o.kernel[0]) / o.stride[0] + 1,
               (s[3] + 2 * o.padding[1] - o.kernel[1]) / o.stride[1] + 1};
  const std::vector<double> v = x.to_vector<double>();
  NaivePool r;
  for (int64_t p = 0; p < s[0] * s[1]; ++p)
    for (int64_t oy = 0; oy < out_shape[2]; ++oy)
      for (int64_t ox = 0; ox < out_shape[3]; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t arg = -1;
        for (int64_t ky = 0; ky < o.kernel[0]; ++ky)
          for (int64_t kx = 0; kx < o.kernel[1]; ++kx) {
            const int64_t y = oy * o.stride[0] - o.padding[0] + ky;
            const int64_t xx = ox * o.stride[1] - o.padding[1] + kx;
            if (y < 0 || y >= s[2] || xx < 0 || xx >= s[3]) continue;
            const double e = v[(p * s[2] + y) * s[3] + xx];
            sum += e;
            if (e > best) best = e, arg = y * s[3] + xx;
          }
        r.max.push_back(best);
        r.argmax.push_back(arg);
        r.avg.push_back(sum / static_cast<double>(o.kernel[0] * o.kernel[1]));
      }
  return r;
}

}  // namespace

TEST_CASE("max_pool2d takes hand-computed maxima and their flat indices") {
  for (DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    INFO("dtype ", dtype_name(dtype));
    // 2x2 windows; the tie of the last window keeps the first 4.
    std::vector<Tensor> out =
        max_pool_with_indices(plane(dtype), pool_attrs({2, 2}, {2, 2}, {0, 0}));
    check_close(out[0], {5, 8, 9, 4}, {1, 1, 2, 2});
    CHECK(out[1].to_vector<int64_t>() == std::vector<int64_t>{1, 6, 8, 14});
    check_close(max_pool2d(plane(dtype)), {5, 8, 9, 4}, {1, 1, 2, 2});
    // 3x3 windows, stride 2, padding 1, on a strided input.
    out = max_pool_with_indices(strided_copy(plane(dtype)), pool_attrs({3, 3}, {2, 2}, {1, 1}));
    check_close(out[0], {5, 8, 9, 8}, {1, 1, 2, 2});
    CHECK(out[1].to_vector<int64_t>() == std::vector<int64_t>{1, 6, 8, 6});
  }
}

TEST_CASE("max_pool2d propagates NaN") {
  Tensor x = from_vector<float>({1, std::numeric_limits<float>::quiet_NaN(), 3, 2}, {1, 1, 2, 2});
  std::vector<Tensor> out = max_pool_with_indices(x, pool_attrs({2, 2}, {2, 2}, {0, 0}));
  CHECK(std::isnan(out[0].item<float>()));
  CHECK(out[1].item<int64_t>() == 1);
}

TEST_CASE("avg_pool2d counts the padding in the divisor") {
  check_close(avg_pool2d(plane()), {13.0 / 4, 17.0 / 4, 18.0 / 4, 11.0 / 4}, {1, 1, 2, 2});
  const Pool2dOptions padded{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
  const std::vector<double> expected{13.0 / 9, 26.0 / 9, 25.0 / 9, 39.0 / 9};
  check_close(avg_pool2d(plane(), padded), expected, {1, 1, 2, 2}, 1e-12, 1e-12);
  check_close(avg_pool2d(plane(DType::f32), padded), expected, {1, 1, 2, 2});
}

TEST_CASE("pooling matches a direct loop, in f32, bf16 and on strided inputs") {
  const std::vector<Pool2dOptions> cases{
      {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}},
      {.kernel = {2, 2}, .stride = {2, 2}},
      {.kernel = {3, 3}, .stride = {1, 2}, .padding = {1, 0}},
  };
  Tensor x = random_inputs({{2, 3, 9, 8}}, 4)[0];
  for (const Pool2dOptions& o : cases) {
    INFO("kernel ", o.kernel[0], "x", o.kernel[1], " stride ", o.stride[0], "x", o.stride[1]);
    Shape out_shape;
    NaivePool naive = naive_pool(x, o, out_shape);
    Tensor max = check_op([&](const std::vector<Tensor>& t) { return max_pool2d(t[0], o); }, {x},
                          {.f32_tol = 1e-6, .bf16_tol = 1e-2});
    check_close(max, naive.max, out_shape, 0, 0);
    Tensor avg = check_op([&](const std::vector<Tensor>& t) { return avg_pool2d(t[0], o); }, {x},
                          {.f32_tol = 1e-5, .bf16_tol = 2e-2});
    check_close(avg, naive.avg, out_shape, 1e-12, 1e-12);
    Attrs a = pool_attrs({o.kernel[0], o.kernel[1]}, {o.stride[0], o.stride[1]},
                         {o.padding[0], o.padding[1]});
    CHECK(max_pool_with_indices(x, a)[1].to_vector<int64_t>() == naive.argmax);
  }
}

TEST_CASE("pooling refuses bad input") {
  Tensor x = zeros({1, 2, 4, 4});
  check_error([&] { max_pool2d(zeros({2, 4, 4})); }, {"max_pool2d", "4-D", "[2, 4, 4]"});
  check_error(
      [&] {
        avg_pool2d(x, {.kernel = {2, 2}, .padding = {2, 0}});
      },
      {"avg_pool2d", "padding", "half the kernel"});
  check_error(
      [&] {
        max_pool2d(x, {.kernel = {5, 2}});
      },
      {"max_pool2d", "larger than the padded input", "[1, 2, 4, 4]"});
  check_error([&] { avg_pool2d(x, {.kernel = {0, 2}}); }, {"avg_pool2d", "positive"});
}

TEST_CASE("upsample_nearest2d repeats source pixels") {
  Tensor x = from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2});
  const std::vector<double> doubled{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  for (DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    check_close(upsample_nearest2d(x.to(dtype), {4, 4}), doubled, {1, 1, 4, 4});
  }
  // 5 -> 3 columns: src = floor(dst * 5 / 3) = 0, 1, 3.
  check_close(upsample_nearest2d(arange(5, {.dtype = DType::f64}).view({1, 1, 1, 5}), {2, 3}),
              {0, 1, 3, 0, 1, 3}, {1, 1, 2, 3});
}

TEST_CASE("upsample_bilinear2d interpolates between source pixels") {
  Tensor x = from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2});
  SUBCASE("pixel centres (align_corners=false)") {
    // Source coordinate (dst + 0.5) / 2 - 0.5, clamped at 0: 0, 0.25, 0.75, 1.25 (-> last pixel).
    check_close(upsample_bilinear2d(x, {4, 4}),
                {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4},
                {1, 1, 4, 4}, 1e-12, 1e-12);
    // Downsampling 4 -> 2 columns samples at 0.5 and 2.5.
    check_close(upsample_bilinear2d(arange(4, {.dtype = DType::f64}).view({1, 1, 1, 4}), {1, 2}),
                {0.5, 2.5}, {1, 1, 1, 2}, 1e-12, 1e-12);
  }
  SUBCASE("corners aligned") {
    // Rows at 0, 0.5, 1; columns at 0, 1/3, 2/3, 1.
    check_close(upsample_bilinear2d(x, {3, 4}, true),
                {1, 4.0 / 3, 5.0 / 3, 2, 2, 7.0 / 3, 8.0 / 3, 3, 3, 10.0 / 3, 11.0 / 3, 4},
                {1, 1, 3, 4}, 1e-12, 1e-12);
  }
}

TEST_CASE("upsampling in f32, bf16 and on strided inputs") {
  Tensor x = random_inputs({{2, 3, 5, 4}}, 9)[0];
  check_op(
      [](const std::vector<Tensor>& t) {
        return upsample_nearest2d(t[0], {7, 9});
      },
      {x}, {.f32_tol = 1e-6, .bf16_tol = 1e-2});
  for (bool align : {false, true}) {
    INFO("align_corners ", align);
    check_op(
        [&](const std::vector<Tensor>& t) {
          return upsample_bilinear2d(t[0], {8, 3}, align);
        },
        {x}, {.f32_tol = 1e-5, .bf16_tol = 2e-2});
  }
}

TEST_CASE("upsampling refuses bad input") {
  check_error(
      [] {
        upsample_nearest2d(zeros({2, 3, 4}), {4, 4});
      },
      {"upsample_nearest2d", "4-D", "[2, 3, 4]"});
  check_error(
      [] {
        upsample_bilinear2d(zeros({1, 1, 2, 2}), {0, 4});
      },
      {"upsample_bilinear2d", "size", "[0, 4]"});
}
