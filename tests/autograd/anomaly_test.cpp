#include "test_util.h"

#include <dlf/autograd/anomaly.h>

#include <limits>

using namespace dlf;
using dlf::test::check_error;

TEST_CASE("all_finite: NaN and infinity in every floating dtype; integers always finite") {
  for (DType t : {DType::f32, DType::f64, DType::bf16}) {
    INFO(dtype_name(t));
    CHECK(all_finite(from_vector<double>({1, -2, 3e30}).to(t)));
    CHECK_FALSE(
        all_finite(from_vector<double>({1, std::numeric_limits<double>::quiet_NaN()}).to(t)));
    CHECK_FALSE(all_finite(from_vector<double>({-std::numeric_limits<double>::infinity()}).to(t)));
  }
  CHECK(all_finite(from_vector<int64_t>({1, 2})));
  CHECK_FALSE(all_finite(from_vector<double>({0, std::numeric_limits<double>::infinity()})
                             .view({2, 1})
                             .expand({2, 3})));  // strided
}

TEST_CASE("detect_anomaly: the first forward op that makes NaN or infinity is named") {
  const Tensor x = from_vector<double>({1, 0, 2});
  (void)(x / x);  // without the guard nothing is checked
  autograd::DetectAnomalyGuard guard;
  CHECK(all_finite(x * 2));
  // 0/0 -> NaN in div; the mul after it has a NaN input and is not blamed.
  check_error([&] { (void)((x / x) * 3.0); }, {"'div'", "output 0", "[3]"});
}

TEST_CASE("detect_anomaly: a gradient that becomes infinite names the backward being computed") {
  const Tensor x = from_vector<double>({4, 0}).requires_grad_();
  const Tensor y = sum(sqrt(x));  // finite: sqrt(0) = 0; its gradient 1 / (2 sqrt(0)) is not
  {
    autograd::DetectAnomalyGuard guard;
    check_error([&] { y.backward({}, true); }, {"while computing the gradient of 'sqrt'"});
  }
  y.backward();  // without the guard backward runs, and the gradient is infinite
  CHECK_FALSE(all_finite(x.grad()));
}
