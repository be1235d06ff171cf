// How much slower B is than A, with a confidence interval: a bootstrap over paired rounds.
#pragma once
#include <cstdint>
#include <vector>

namespace dlf::perf {

/// A ratio B / A with its confidence interval.
struct RatioEstimate {
  double ratio = 1;  ///< the median of the rounds' ratios b[i] / a[i]
  double low = 1;    ///< the interval's lower end
  double high = 1;   ///< the interval's upper end
};

/// b[i] / a[i] over rounds measured side by side (A and B interleaved, so a slow stretch of the
/// machine hits both of a round): the median ratio and its percentile bootstrap interval at
/// `confidence`, the rounds resampled `resamples` times with a generator seeded by `seed`.
/// A dlf::Error unless a and b are as long, non-empty and positive.
RatioEstimate paired_ratio(const std::vector<double>& a, const std::vector<double>& b,
                           double confidence = 0.99, int resamples = 4000, uint64_t seed = 1);

}  // namespace dlf::perf
