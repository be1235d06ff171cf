#include "test_util.h"

using namespace dlf;
using dlf::test::check_error;

TEST_CASE("accuracy: the share of rows whose first largest logit is the label") {
  const Tensor logits = from_vector<float>({1, 3, 2,   // -> 1
                                            0, 0, -1,  // tie -> 0
                                            5, 1, 1,   // -> 0
                                            2, 2, 0},  // tie -> 0
                                           {4, 3});
  CHECK(nn::accuracy(logits, from_vector<int64_t>({1, 0, 2, 1})) == 0.5);
  CHECK(nn::accuracy(logits, from_vector<int64_t>({1, 0, 0, 0})) == 1.0);
  CHECK(nn::accuracy(logits.slice(0, 2, 4), from_vector<int64_t>({1, 1})) == 0.0);
  check_error(
      [&] {
        nn::accuracy(logits, from_vector<int64_t>({1, 0}));
      },
      {"accuracy", "[4, 3]", "[2]"});
}

TEST_CASE("accuracy over [..., C]: the share of labelled positions, ignore_index left out") {
  // argmax per position: 2, 0, 1, 1.
  const Tensor logits =
      from_vector<float>({0, 1, 2, 5, 1, 1, 0, 3, 1, 0.5f, 0.7f, 0.6f}, {1, 4, 3});
  CHECK(nn::accuracy(logits, from_vector<int64_t>({2, -100, 0, 1}, {1, 4})) ==
        doctest::Approx(2.0 / 3));
  CHECK(nn::accuracy(logits, from_vector<int64_t>({-100, 0, -100, -100}, {1, 4})) == 1);
  CHECK(nn::accuracy(logits, full({1, 4}, -100, {.dtype = DType::i64})) == 0);
  // An ignore_index that is a class: the positions so labelled count neither way.
  CHECK(nn::accuracy(logits, from_vector<int64_t>({2, 0, 1, 1}, {1, 4}), 1) == 1);
  check_error(
      [&] {
        nn::accuracy(logits, from_vector<int64_t>({1, 2, 0}, {1, 3}));
      },
      {"logits [1, 4, 3]", "labels [1, 3]"});
}
