#include "op_check.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
using dlf::test::check_op;

namespace {

std::vector<int64_t> sizes_along(const std::vector<Tensor>& pieces, int64_t dim) {
  std::vector<int64_t> out;
  for (const Tensor& p : pieces) out.push_back(p.size(dim));
  return out;
}

}  // namespace

TEST_CASE("cat joins hand-computed values in every dtype and layout") {
  Tensor a = from_vector<double>({0, 1, 2, 3}, {2, 2});
  Tensor b = from_vector<double>({4, 5}, {2, 1});
  Tensor c = from_vector<double>({6, 7, 8, 9, 10, 11}, {2, 3});
  Tensor joined =
      check_op([](const auto& in) { return cat(in, 1); }, {a, b, c}, {.bf16_tol = 1e-6});
  check_close(joined, {0, 1, 4, 6, 7, 8, 2, 3, 5, 9, 10, 11}, {2, 6});
  check_close(cat({a, b.transpose(0, 1).expand({2, 2})}, 0), {0, 1, 2, 3, 4, 5, 4, 5}, {4, 2});
  check_close(cat({a}, -1), a);
  CHECK(cat({arange(3, {.dtype = DType::i64}), arange(2, {.dtype = DType::i64})}, 0)
            .to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 0, 1});
  CHECK(cat({from_vector<bool>({true}), from_vector<bool>({false, true})}, 0).to_vector<bool>() ==
        std::vector<bool>{true, false, true});
  // An empty piece contributes nothing.
  check_close(cat({a, zeros({2, 0}, {.dtype = DType::f64})}, 1), a);
}

TEST_CASE("cat along each dim of strided 3-D inputs matches an index-by-index join") {
  // x[i][j][k] = 100 + 12i + 4j + k read through a transposed view; y = -(its index).
  Tensor x_full = arange(100, 124, 1, {.dtype = DType::f64}).view({2, 3, 4});
  Tensor y_full = arange(0, -24, -1, {.dtype = DType::f64}).view({2, 3, 4});
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim ", dim);
    const int64_t d = dim < 0 ? dim + 3 : dim;
    Tensor x = x_full.transpose(0, 2).contiguous().transpose(0, 2);  // same values, strided
    Tensor y = y_full.narrow(d, 0, 1 + d % 2);                       // offset-free narrow piece
    REQUIRE(!x.is_contiguous());
    Tensor got = cat({x, y}, dim);
    Shape expect_shape = x.shape();
    expect_shape[d] += y.shape()[d];
    REQUIRE(got.shape() == expect_shape);
    std::vector<double> expected;
    for (int64_t i = 0; i < expect_shape[0]; ++i) {
      for (int64_t j = 0; j < expect_shape[1]; ++j) {
        for (int64_t k = 0; k < expect_shape[2]; ++k) {
          std::array<int64_t, 3> idx{i, j, k};
          const bool from_x = idx[d] < x.shape()[d];
          if (!from_x) idx[d] -= x.shape()[d];
          const double base = 12.0 * idx[0] + 4.0 * idx[1] + idx[2];
          expected.push_back(from_x ? 100 + base : -base);
        }
      }
    }
    check_close(got, expected, expect_shape, 0, 0);
  }
}

TEST_CASE("cat refuses what it cannot join, naming the shapes") {
  Tensor a = zeros({2, 3}), b = zeros({3, 3});
  check_error([&] { cat({a, b}, 1); }, {"cat", "[2, 3]", "[3, 3]", "differ outside dim 1"});
  check_error([&] { cat({a, zeros({2})}, 0); }, {"[2, 3]", "[2]"});
  check_error([&] { cat({a, zeros({2, 3}, {.dtype = DType::f64})}, 0); }, {"f32", "f64", "[2, 3]"});
  check_error([&] { cat({}, 0); }, {"cat", "empty list"});
  check_error([&] { cat({a, a}, 2); }, {"dim"});
  check_error([&] { cat({zeros({})}, 0); }, {"rank-0"});
}

TEST_CASE("stack adds a dim and joins along it") {
  Tensor a = from_vector<double>({1, 2, 3}), b = from_vector<double>({4, 5, 6});
  check_close(stack({a, b}, 0), {1, 2, 3, 4, 5, 6}, {2, 3});
  check_close(stack({a, b}, 1), {1, 4, 2, 5, 3, 6}, {3, 2});
  check_close(stack({a, b, a}, -1), {1, 4, 1, 2, 5, 2, 3, 6, 3}, {3, 3});
  check_error([&] { stack({a, zeros({2}, {.dtype = DType::f64})}, 0); }, {"stack", "[3]", "[2]"});
  check_error([&] { stack({}, 0); }, {"stack", "empty list"});
}

TEST_CASE("split, split_sizes, chunk and unbind return views of PyTorch's sizes") {
  Tensor x = arange(10, {.dtype = DType::f64}).view({5, 2});
  SUBCASE("split") {
    auto pieces = split(x, 2, 0);
    CHECK(sizes_along(pieces, 0) == std::vector<int64_t>{2, 2, 1});
    CHECK(pieces[1].storage() == x.storage());
    check_close(pieces[1], {4, 5, 6, 7}, {2, 2});
    check_close(pieces[2], {8, 9}, {1, 2});
    CHECK(sizes_along(split(x, 7, 0), 0) == std::vector<int64_t>{5});
    check_close(split(x, 1, -1)[1], {1, 3, 5, 7, 9}, {5, 1});
    CHECK(sizes_along(split(zeros({0, 2}), 3, 0), 0) == std::vector<int64_t>{0});
    check_error([&] { split(x, 0, 0); }, {"split", "0", "[5, 2]"});
  }
  SUBCASE("split_sizes") {
    auto pieces = split_sizes(x, {1, 0, 4}, 0);
    CHECK(sizes_along(pieces, 0) == std::vector<int64_t>{1, 0, 4});
    check_close(pieces[2].select(0, 3), {8, 9}, {2});
    check_error([&] { split_sizes(x, {2, 2}, 0); }, {"[2, 2]", "5", "[5, 2]"});
    check_error([&] { split_sizes(x, {6, -1}, 0); }, {"negative"});
  }
  SUBCASE("chunk: ceil(n / chunks) per piece, possibly fewer pieces") {
    Tensor six = arange(6, {.dtype = DType::f64});
    CHECK(sizes_along(chunk(six, 4, 0), 0) == std::vector<int64_t>{2, 2, 2});
    CHECK(sizes_along(chunk(six, 3, 0), 0) == std::vector<int64_t>{2, 2, 2});
    CHECK(sizes_along(chunk(six, 5, 0), 0) == std::vector<int64_t>{2, 2, 2});
    CHECK(sizes_along(chunk(six, 6, 0), 0) == std::vector<int64_t>{1, 1, 1, 1, 1, 1});
    CHECK(sizes_along(chunk(six, 10, 0), 0) == std::vector<int64_t>{1, 1, 1, 1, 1, 1});
    CHECK(sizes_along(chunk(x, 3, 0), 0) == std::vector<int64_t>{2, 2, 1});
    CHECK(sizes_along(chunk(x, 2, 0), 0) == std::vector<int64_t>{3, 2});
    CHECK(sizes_along(chunk(zeros({0}), 3, 0), 0) == std::vector<int64_t>{0, 0, 0});
    check_close(chunk(six, 4, 0)[2], {4, 5}, {2});
    check_error([&] { chunk(six, 0, 0); }, {"chunk", "0"});
  }
  SUBCASE("unbind: the slices at each index, without the dim") {
    auto rows = unbind(x, 0), columns = unbind(x, -1);
    REQUIRE(rows.size() == 5);
    REQUIRE(columns.size() == 2);
    CHECK(columns[1].storage() == x.storage());
    check_close(rows[3], {6, 7}, {2});
    check_close(columns[1], {1, 3, 5, 7, 9}, {5});
    CHECK(unbind(zeros({0, 2}), 0).empty());
    CHECK(unbind(zeros({0, 2}).requires_grad_(), 0).empty());  // no op, no gradient to record
    check_error([] { unbind(zeros({}), 0); }, {"unbind", "rank-0"});
  }
  SUBCASE("cat undoes split") {
    check_close(cat(split(x.transpose(0, 1), 2, 1), 1), x.transpose(0, 1), 0, 0);
  }
}
