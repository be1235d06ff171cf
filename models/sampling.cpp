#include "models/sampling.h"

#include <algorithm>
#include <cmath>

#include <dlf/error.h>

namespace dlf::models {

int64_t sample_token(std::vector<double> logits, double temperature, int64_t top_k,
                     Generator& gen) {
  DLF_CHECK(!logits.empty(), "sample_token: no logits");
  DLF_CHECK(temperature >= 0, "sampling: temperature must be >= 0, got ", temperature);
  const auto best = std::max_element(logits.begin(), logits.end());
  if (temperature == 0) return best - logits.begin();
  const int64_t n = static_cast<int64_t>(logits.size());
  if (top_k > 0 && top_k < n) {
    std::vector<double> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[top_k - 1];
    for (double& l : logits)
      if (l < kth) l = -INFINITY;
  }
  const double top = *best;
  double total = 0;
  for (double& l : logits) total += (l = std::exp((l - top) / temperature));
  const double u = philox(gen.seed(), gen.take(1))[0] * 0x1p-32 * total;
  double cumulative = 0;
  for (int64_t i = 0; i < n; ++i) {
    cumulative += logits[i];
    if (u < cumulative) return i;
  }
  return best - logits.begin();  // u rounded up to the total
}

}  // namespace dlf::models
