#include "models/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <dlf/error.h>

namespace dlf::models {
namespace {

// Sets to 0 every probability outside the fewest likeliest ones whose sum reaches top_p of
// `total` (ties kept in id order); returns the new total.
double keep_nucleus(std::vector<double>& p, double total, double top_p) {
  std::vector<int64_t> order(p.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return p[size_t(a)] > p[size_t(b)]; });
  double kept = 0;
  size_t n = 0;
  while (n < order.size() && (n == 0 || kept < top_p * total)) kept += p[size_t(order[n++])];
  for (size_t i = n; i < order.size(); ++i) p[size_t(order[i])] = 0;
  return kept;
}

}  // namespace

int64_t sample_token(std::vector<double> logits, const Sampling& s, Generator& gen) {
  DLF_CHECK(!logits.empty(), "sample_token: no logits");
  DLF_CHECK(s.temperature >= 0, "sampling: temperature must be >= 0, got ", s.temperature);
  DLF_CHECK(s.top_p > 0 && s.top_p <= 1, "sampling: top_p must be in (0, 1], got ", s.top_p);
  const auto best = std::max_element(logits.begin(), logits.end());
  if (s.temperature == 0) return best - logits.begin();
  const int64_t n = static_cast<int64_t>(logits.size());
  if (s.top_k > 0 && s.top_k < n) {
    std::vector<double> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (s.top_k - 1), sorted.end(),
                     std::greater<>());
    const double kth = sorted[size_t(s.top_k - 1)];
    for (double& l : logits)
      if (l < kth) l = -INFINITY;
  }
  const double top = *best;
  double total = 0;
  for (double& l : logits) total += (l = std::exp((l - top) / s.temperature));
  if (s.top_p < 1) total = keep_nucleus(logits, total, s.top_p);
  const double u = philox(gen.seed(), gen.take(1))[0] * 0x1p-32 * total;
  double cumulative = 0;
  for (int64_t i = 0; i < n; ++i) {
    cumulative += logits[size_t(i)];
    if (u < cumulative) return i;
  }
  return best - logits.begin();  // u rounded up to the total
}

}  // namespace dlf::models
