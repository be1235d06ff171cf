#include <dlf/error.h>
#include <dlf/perf/bootstrap.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace dlf::perf {
namespace {

double median_in_place(std::vector<double>& v) {
  const size_t n = v.size(), mid = n / 2;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
  if (n % 2) return v[mid];
  const double upper = v[mid];
  return (*std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid)) + upper) / 2;
}

}  // namespace

RatioEstimate paired_ratio(const std::vector<double>& a, const std::vector<double>& b,
                           double confidence, int resamples, uint64_t seed) {
  DLF_CHECK(!a.empty() && a.size() == b.size(), "paired_ratio: ", a.size(), " rounds of A and ",
            b.size(), " of B (they must pair up)");
  DLF_CHECK(confidence > 0 && confidence < 1 && resamples > 0,
            "paired_ratio: confidence in (0, 1) and resamples > 0");
  std::vector<double> ratios;
  for (size_t i = 0; i < a.size(); ++i) {
    DLF_CHECK(a[i] > 0 && b[i] > 0, "paired_ratio: round ", i, " has a time that is not positive");
    ratios.push_back(b[i] / a[i]);
  }
  std::vector<double> scratch = ratios;
  RatioEstimate out;
  out.ratio = median_in_place(scratch);
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<size_t> pick(0, ratios.size() - 1);
  std::vector<double> medians;
  for (int r = 0; r < resamples; ++r) {
    for (double& x : scratch) x = ratios[pick(gen)];
    medians.push_back(median_in_place(scratch));
  }
  std::sort(medians.begin(), medians.end());
  const double tail = (1 - confidence) / 2;
  auto at = [&](double q) {
    return medians[std::min(medians.size() - 1, size_t(q * double(medians.size())))];
  };
  out.low = at(tail);
  out.high = at(1 - tail);
  return out;
}

}  // namespace dlf::perf
