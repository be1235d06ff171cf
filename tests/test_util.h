// Helpers shared by the test suites.
#pragma once
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
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

/// ||a - b|| / ||b|| over all elements (b the reference).
inline double relative_error(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  REQUIRE(x.size() == y.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff += (x[i] - y[i]) * (x[i] - y[i]);
    norm += y[i] * y[i];
  }
  return std::sqrt(diff / norm);
}

/// Same dtype, shape and bytes.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         (a.nbytes() == 0 ||
          std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0);
}

/// Runs `fn` with files limited to `bytes` (as a full disk would stop them: a write fails with
// EFBIG; SIGXFSZ ignored, as dlf's command line does).
template <typename Fn>
inline void with_file_size_limit(rlim_t bytes, Fn&& fn) {
  rlimit before{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &before) == 0);
  rlimit limited = before;
  limited.rlim_cur = bytes;
  auto* const old_handler = signal(SIGXFSZ, SIG_IGN);
  REQUIRE(setrlimit(RLIMIT_FSIZE, &limited) == 0);
  try {
    fn();
  } catch (...) {
    setrlimit(RLIMIT_FSIZE, &before);
    signal(SIGXFSZ, old_handler);
    throw;
  }
  setrlimit(RLIMIT_FSIZE, &before);
  signal(SIGXFSZ, old_handler);
}

}  // namespace dlf::test
