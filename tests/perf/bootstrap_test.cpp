// The paired bootstrap of B/A and the verdicts dlf bench compare draws from it.
#include <dlf/perf/bootstrap.h>
#include <dlf/perf/compare.h>

#include <random>

#include "test_util.h"

using namespace dlf::perf;

TEST_CASE("paired_ratio: B exactly 1.1 A in every round is 1.1 with no spread") {
  const RatioEstimate r = paired_ratio({10, 20, 30, 40}, {11, 22, 33, 44});
  CHECK(r.ratio == doctest::Approx(1.1));
  CHECK(r.low == doctest::Approx(1.1));
  CHECK(r.high == doctest::Approx(1.1));
}

TEST_CASE("paired_ratio: the median of the rounds' ratios, by hand") {
  // ratios 1.0, 1.2, 1.1, 0.9, 1.3: median 1.1; the interval lies within the ratios' range
  const RatioEstimate r = paired_ratio({10, 10, 10, 10, 10}, {10, 12, 11, 9, 13});
  CHECK(r.ratio == doctest::Approx(1.1));
  CHECK(r.low >= 0.9);
  CHECK(r.high <= 1.3);
  CHECK(r.low < 1.1);
  CHECK(r.high > 1.1);
}

TEST_CASE("paired_ratio: a slow stretch of the machine cancels within rounds") {
  // A's times drift 2x over the session; B is 5 % slower with 1 % noise in every round.
  std::mt19937_64 gen(7);
  std::normal_distribution<double> noise(1, 0.01);
  std::vector<double> a, b;
  for (int i = 0; i < 10; ++i) {
    const double machine = 1 + i / 9.0;
    a.push_back(100 * machine);
    b.push_back(105 * machine * noise(gen));
  }
  const RatioEstimate r = paired_ratio(a, b);
  CHECK(r.low > 1.0);
  CHECK(r.ratio == doctest::Approx(1.05).epsilon(0.01));
  CHECK(verdict_of(r, 0.02) == "slower");
}

TEST_CASE("verdicts: the interval off 1 and the ratio past min_change") {
  CHECK(verdict_of({1.10, 1.05, 1.15}, 0.02) == "slower");
  CHECK(verdict_of({0.90, 0.85, 0.95}, 0.02) == "faster");
  CHECK(verdict_of({1.01, 0.99, 1.03}, 0.02) == "same");   // the interval holds 1
  CHECK(verdict_of({1.01, 1.005, 1.02}, 0.02) == "same");  // real, but too small to matter
  CHECK(verdict_of({1.01, 1.005, 1.02}, 0.0) == "slower");
}

TEST_CASE("paired_ratio refuses rounds that do not pair up") {
  dlf::test::check_error([] { paired_ratio({1, 2}, {1}); }, {"2 rounds of A", "1 of B"});
  dlf::test::check_error([] { paired_ratio({1, 0}, {1, 1}); }, {"round 1"});
}
