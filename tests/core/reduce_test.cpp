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

Tensor matrix(const std::vector<double>& values, const Shape& shape) {
  return from_vector<double>(values, shape);
}

}  // namespace

TEST_CASE("reductions of a small matrix give hand-computed values") {
  Tensor x = arange(6, {.dtype = DType::f64}).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  check_close(sum(x), {15}, {});
  check_close(sum(x, {0}), {3, 5, 7}, {3});
  check_close(sum(x, {-1}, true), {3, 12}, {2, 1});
  check_close(sum(x, {1, 0}), {15}, {});
  check_close(mean(x, {1}), {1, 4}, {2});
  check_close(mean(x), {2.5}, {});
  check_close(max(x, {0}), {3, 4, 5}, {3});
  check_close(max(x, {}, true), {5}, {1, 1});
  check_close(var(x, {1}), {1, 1}, {2});
  check_close(var(x), {3.5}, {});
  check_close(var(x, {}, 0), {17.5 / 6}, {});
  check_close(var(x, {0}, 0, true), {2.25, 2.25, 2.25}, {1, 3});

  Tensor ties = matrix({1, 3, 3, 2, 0, 2}, {2, 3});
  Tensor idx = argmax(ties, 1);
  CHECK(idx.dtype() == DType::i64);
  CHECK(idx.to_vector<int64_t>() == std::vector<int64_t>{1, 0});  // the first of equal maxima
  CHECK(argmax(ties, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
  CHECK(argmax(ties, -1, true).shape() == Shape{2, 1});
}

TEST_CASE("reductions over several dims, keepdim and scalars") {
  Tensor x = arange(24, {.dtype = DType::f64}).view({2, 3, 4});  // x[i][j][k] = 12i + 4j + k
  check_close(sum(x, {0, 2}), {60, 92, 124}, {3});
  check_close(sum(x, {-1, 0}, true), {60, 92, 124}, {1, 3, 1});
  check_close(max(x, {0, 1}), {20, 21, 22, 23}, {4});
  check_close(mean(x, {1, 2}), {5.5, 17.5}, {2});
  Tensor s = full({}, 4.0, {.dtype = DType::f64});
  check_close(sum(s), {4}, {});
  check_close(sum(s, {0}), {4}, {});
  check_close(sum(zeros({0, 3}), {0}), {0, 0, 0}, {3});
}

TEST_CASE("reductions read strided and expanded inputs in place") {
  Tensor x = arange(24, {.dtype = DType::f64}).view({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});  // p[k][i][j]
  check_close(sum(p, {1, 2}), {60, 66, 72, 78}, {4});
  check_close(max(p, {0}), {3, 7, 11, 15, 19, 23}, {2, 3});
  CHECK(argmax(p, 2).to_vector<int64_t>() == std::vector<int64_t>(8, 2));
  check_close(sum(x.slice(2, 1, 4, 2), {2}), {4, 12, 20, 28, 36, 44}, {2, 3});

  Tensor col = from_vector<double>({1, 2}, {2, 1}).expand({2, 1000});
  check_close(sum(col, {1}), {1000, 2000}, {2});
  check_close(mean(col, {0}).slice(0, 0, 2), {1.5, 1.5}, {2});
  check_close(var(col, {1}), {0, 0}, {2});
  // One scalar from a large broadcast input: the reduced range is split across threads.
  check_close(sum(from_vector<float>({0.5f}).expand({100000})), {50000}, {});
}

TEST_CASE("large reductions match naive loops on every parallel path") {
  const int64_t rows = 300, cols = 200;
  Tensor x = random_inputs({{rows, cols}}, 3)[0];
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> col_sum(cols, 0), row_sum(rows, 0), row_max(rows, -1e300);
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const double e = v[i * cols + j];
      col_sum[j] += e;
      row_sum[i] += e;
      row_max[i] = std::max(row_max[i], e);
      total += e;
    }
  }
  double squares = 0;
  for (double e : v) squares += (e - total / (rows * cols)) * (e - total / (rows * cols));
  check_close(sum(x, {0}), col_sum, {cols}, 1e-10);  // blocked over outputs
  check_close(max(x, {1}), row_max, {rows}, 0);      // one output per row
  check_close(sum(x, {1}), row_sum, {rows}, 1e-12);  // contiguous runs summed in lanes
  check_close(sum(x.to(DType::f32), {1}), row_sum, {rows}, 1e-5);
  check_close(sum(x), {total}, {}, 1e-9);                                // one output, split range
  check_close(var(x), {squares / (rows * cols - 1)}, {}, 1e-12, 1e-10);  // Chan's merge
  check_close(sum(x.to(DType::f32)), {total}, {}, 1e-4);                 // f32 sums in double
  check_close(sum(x.transpose(0, 1), {1}), col_sum, {cols}, 1e-10);

  // The first of two equal maxima wins across the threads' chunks too.
  std::vector<double> flat(60000, 0.0);
  flat[45000] = 7;
  flat[50000] = 7;
  flat[100] = -std::numeric_limits<double>::infinity();
  Tensor big = from_vector<double>(flat);
  CHECK(argmax(big, 0).item<int64_t>() == 45000);
  check_close(max(big), {7}, {});
  const double all_minus_inf = max(full({40000}, -INFINITY)).item<double>();
  CHECK((std::isinf(all_minus_inf) && all_minus_inf < 0));
}

TEST_CASE("sum, max and argmax of integers; bf16 reduces to bf16") {
  Tensor i = from_vector<int32_t>({4, -2, 9, 9}, {2, 2});
  CHECK(sum(i).dtype() == DType::i32);
  CHECK(sum(i, {0}).to_vector<int32_t>() == std::vector<int32_t>{13, 7});
  CHECK(max(i, {1}).to_vector<int32_t>() == std::vector<int32_t>{4, 9});
  Tensor l = from_vector<int64_t>({3, 8, -1, 8});
  CHECK(sum(l).item<int64_t>() == 18);
  CHECK(argmax(l, 0).item<int64_t>() == 1);
  Tensor b = from_vector<float>({0.5f, 1.5f, 2.0f, 4.0f}).to(DType::bf16);
  CHECK(sum(b).dtype() == DType::bf16);
  check_close(sum(b), {8}, {});
  check_close(mean(b), {2}, {});
  check_close(var(b, {}, 0), {1.625}, {});
  check_close(max(b), {4}, {});
}

TEST_CASE("reductions agree across dtypes and layouts (check_op)") {
  auto in = random_inputs({{3, 4, 5}}, 7);
  check_op([](const auto& t) { return sum(t[0], {0, 2}); }, in, {.bf16_tol = 0.05});
  check_op([](const auto& t) { return mean(t[0], {1}, true); }, in, {.bf16_tol = 0.02});
  check_op([](const auto& t) { return max(t[0], {-1, 0}); }, in, {.bf16_tol = 0.01});
  check_op([](const auto& t) { return var(t[0], {2}); }, in, {.bf16_tol = 0.05});
  check_op([](const auto& t) { return var(t[0], {}, 0); }, in);
  check_op([](const auto& t) { return argmax(t[0], 1); }, in);
}

TEST_CASE("reductions refuse bad dims and dtypes") {
  Tensor x = zeros({2, 3});
  check_error([&] { sum(x, {2}); }, {"sum", "dim 2", "[2, 3]"});
  check_error([&] { mean(x, {-3}); }, {"mean", "dim -3", "[2, 3]"});
  check_error([&] { var(x, {1, -1}); }, {"var", "listed twice", "[2, 3]"});
  check_error([&] { argmax(x, 5); }, {"argmax", "dim 5", "[2, 3]"});
  check_error([&] { max(zeros({0, 3}), {0}); }, {"max", "no elements", "[0, 3]"});
  check_error([&] { mean(from_vector<int64_t>({1, 2})); }, {"mean", "i64"});
  check_error([&] { sum(from_vector<bool>({true})); }, {"sum", "bool"});
}

TEST_CASE("reduction costs count one read of the input") {
  Tensor x = zeros({4, 5});
  std::vector<Tensor> in{x};
  std::vector<Tensor> out{sum(x, {1})};
  Cost c = op_cost(find_op("sum"), in, Attrs{{"dims", Shape{1}}}, out);
  CHECK(c.flops == 20);
  CHECK(c.bytes_read == 80);
  CHECK(c.bytes_written == 16);
  CHECK(op_cost(find_op("var"), in, {}, out).flops == 100);
}
