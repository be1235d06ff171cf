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
