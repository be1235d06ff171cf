// E-divisive means with a t-test: hand-computed statistics, known change points, and no false
// alarms on stationary noise.
#include <dlf/perf/change_points.h>

#include <random>

#include "test_util.h"

using namespace dlf::perf;

namespace {

// `n` points of mean `level` with a small deterministic wobble (+-1 %).
std::vector<double> flat(size_t n, double level) {
  std::vector<double> x;
  for (size_t i = 0; i < n; ++i) x.push_back(level * (1 + 0.01 * std::sin(double(i) * 1.7)));
  return x;
}

std::vector<double> join(std::vector<std::vector<double>> parts) {
  std::vector<double> x;
  for (const auto& p : parts) x.insert(x.end(), p.begin(), p.end());
  return x;
}

}  // namespace

TEST_CASE("the energy statistic of a split, by hand") {
  // [0, 0 | 1, 1]: between-distances 4 x 1 -> 2 * 4 / 4 = 2, none within: Q = 2 * 2 / 4 * 2 = 2.
  CHECK(energy_statistic({0, 0, 1, 1}, 2) == doctest::Approx(2));
  // [0 | 0, 1, 1]: 2 * (0 + 1 + 1) / 3 - (1 + 1 + 0) / 3 = 2/3; Q = 1 * 3 / 4 * 2/3 = 0.5.
  CHECK(energy_statistic({0, 0, 1, 1}, 1) == doctest::Approx(0.5));
  dlf::test::check_error([] { energy_statistic({1, 2}, 2); }, {"split 2", "2 points"});
}

TEST_CASE("Student's t: two-sided p-values, and the pooled two-sample test") {
  CHECK(student_t_two_sided(0, 5) == doctest::Approx(1));
  CHECK(student_t_two_sided(2.228139, 10) == doctest::Approx(0.05).epsilon(1e-4));  // t tables
  CHECK(student_t_two_sided(12.706205, 1) == doctest::Approx(0.05).epsilon(1e-4));
  CHECK(student_t_two_sided(1.959964, 1e7) == doctest::Approx(0.05).epsilon(1e-4));
  // Means 3 and 5, variances 2.5: t = -2 with 8 degrees of freedom, p = 0.0805 (scipy's
  // ttest_ind gives 0.08051623795726257).
  // Pooled over sides of 2 and 4: squares 0.5 + 5, sd^2 = 5.5 / 4, se = sqrt(1.375 * 0.75),
  // t = (1.5 - 5.5) / 1.0155 = -3.9389 with 4 degrees of freedom: p = 0.0169751 (Student's
  // closed form for 4 degrees of freedom, F(t) = 1/2 + 3/8 u (1 - t^2 / (12 a)), a = 1 + t^2/4,
  // u = t / sqrt(a)).
  CHECK(t_test({1, 2}, {4, 5, 6, 7}) == doctest::Approx(0.0169751).epsilon(1e-5));
  CHECK(t_test({1, 2, 3, 4, 5}, {3, 4, 5, 6, 7}) == doctest::Approx(0.0805162).epsilon(1e-5));
  // One point against five of sd sqrt(2.5): t = (10 - 3) / (1.5811 * sqrt(1.2)) = 4.0415, df 4,
  // by the same closed form p = 0.0155853.
  CHECK(t_test({1, 2, 3, 4, 5}, {10}) == doctest::Approx(0.0155853).epsilon(1e-5));
  CHECK(t_test({2, 2, 2}, {3, 3}) == 0);  // constant sides that differ
  CHECK(t_test({2, 2, 2}, {2, 2}) == 1);
  CHECK(t_test({1}, {2}) == 1);  // nothing to compare a spread with
}

TEST_CASE("one step: found at its index, with its size") {
  const std::vector<ChangePoint> c = e_divisive(join({flat(10, 100), flat(10, 120)}));
  REQUIRE(c.size() == 1);
  CHECK(c[0].index == 10);
  CHECK(c[0].change() == doctest::Approx(0.2).epsilon(0.01));
  CHECK(c[0].points_before == 10);
  CHECK(c[0].points_after == 10);
  CHECK(c[0].p_value < 1e-6);
}

TEST_CASE("two steps, up then down below the start") {
  const std::vector<ChangePoint> c = e_divisive(join({flat(8, 100), flat(8, 130), flat(8, 90)}));
  REQUIRE(c.size() == 2);
  CHECK(c[0].index == 8);
  CHECK(c[0].change() > 0.25);
  CHECK(c[1].index == 16);
  CHECK(c[1].change() < -0.25);
  CHECK(c[1].points_before == 8);  // the segment between the two changes
}

TEST_CASE("a change at the newest point is found from that one point") {
  const std::vector<ChangePoint> c = e_divisive(join({flat(12, 100), {150}}));
  REQUIRE(c.size() == 1);
  CHECK(c[0].index == 12);
  CHECK(c[0].points_after == 1);
  // ... but not when it is within the spread of the points before
  CHECK(e_divisive(join({flat(12, 100), {101}})).empty());
}

TEST_CASE("deterministic series (instruction counts): any change above min_change") {
  std::vector<double> x(6, 1000.0);
  x.resize(12, 1005.0);  // +0.5 %: real, but below the default 2 %
  CHECK(e_divisive(x).empty());
  const std::vector<ChangePoint> c = e_divisive(x, {.max_p = 0.001, .min_change = 0.001});
  REQUIRE(c.size() == 1);
  CHECK(c[0].index == 6);
  CHECK(c[0].p_value == 0);
}

TEST_CASE("with groups (the commits of runs), a change falls between groups only") {
  // 3 runs of each of commits a b c d; b's last run is at the new level already
  const std::vector<double> x = {10, 10, 10, 10, 10, 20, 20, 20, 20, 20, 20, 20};
  const std::vector<size_t> commits = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3};
  REQUIRE(e_divisive(x).size() == 1);
  CHECK(e_divisive(x)[0].index == 5);  // inside commit b
  const std::vector<ChangePoint> c = e_divisive(x, {.max_p = 0.05}, commits);
  REQUIRE(c.size() == 1);
  CHECK((c[0].index == 3 || c[0].index == 6));
  CHECK(e_divisive(x, {}, std::vector<size_t>(12, 0)).empty());  // one commit: nothing to split
  dlf::test::check_error([&] { e_divisive(x, {}, {0, 1}); }, {"2 groups for 12 points"});
}

TEST_CASE("a non-finite value is refused") {
  dlf::test::check_error([] { e_divisive({1, NAN, 2}); }, {"non-finite"});
}

// The rate the options promise: 1000 series of 30 points of Gaussian noise (sd 5 % of the mean)
// and 1000 of heavier-tailed noise (Student's t with 3 degrees of freedom, as a loaded machine's
// stragglers). With the default max_p of 0.001: no Gaussian series and 17 heavy-tailed ones
// had a change point when this was written.
TEST_CASE("no false alarms on stationary noise: Gaussian at most 0.5 %, heavy-tailed 2.5 %") {
  int gaussian_alarms = 0, tailed_alarms = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal(100, 5);
    std::student_t_distribution<double> heavy(3);
    std::vector<double> gaussian, tailed;
    for (int i = 0; i < 30; ++i) {
      gaussian.push_back(normal(gen));
      tailed.push_back(100 + 3 * heavy(gen));
    }
    gaussian_alarms += !e_divisive(gaussian).empty();
    tailed_alarms += !e_divisive(tailed).empty();
  }
  CHECK(gaussian_alarms <= 5);
  CHECK(tailed_alarms <= 25);
}

// The other side of the bargain, at the noise of a CPU-time series (3 %): a 10 % step after 15
// runs is found at its place, or one run off, in 95 % of series. (In 5 % noise it is found in
// about 57 %: a history that noisy needs more runs a commit, or dlf bench compare.)
TEST_CASE("a 10 % step in 3 % noise is found within one point of its place in 95 % of series") {
  int found = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal(100, 3);
    std::vector<double> x;
    for (int i = 0; i < 30; ++i) x.push_back(normal(gen) * (i >= 15 ? 1.1 : 1.0));
    const std::vector<ChangePoint> c = e_divisive(x);
    found += c.size() == 1 && c[0].index >= 14 && c[0].index <= 16;
  }
  INFO(found, " of 200");
  CHECK(found >= 190);
}
