// Helpers shared by the test suites.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <dlf/dlf.h>

namespace dlf::test {

/// Checks shape and every element of `t` against `expected` within atol + rtol*|expected|.
inline void check_close(const Tensor& t, const std::vector<double>& expected, const Shape& shape,
                        double atol = 1e-5, double rtol = 1e-5) {
  REQUIRE(shape_str(t.shape()) == shape_str(shape));
  std::vector<double> got = t.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i, ": got ", got[i], ", expected ", expected[i]);
    CHECK(std::fabs(got[i] - expected[i]) <= atol + rtol * std::fabs(expected[i]));
  }
}

/// Checks two tensors of the same shape element by element.
inline void check_close(const Tensor& a, const Tensor& b, double atol = 1e-5, double rtol = 1e-5) {
  check_close(a, b.to_vector<double>(), b.shape(), atol, rtol);
}

/// Runs `fn` and checks that it throws dlf::Error whose message contains every fragment.
template <typename Fn>
void check_error(Fn&& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    FAIL("expected dlf::Error");
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const auto& f : fragments) {
      INFO("message: ", msg);
      CHECK(msg.find(f) != std::string::npos);
    }
  }
}

}  // namespace dlf::test
