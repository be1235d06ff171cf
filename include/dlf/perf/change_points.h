// Change points of a benchmark series: E-divisive means (Matteson and James, 2014) proposes a
// split, a t-test decides whether it is real, recursively, as Hunter and Apache Otava do
// (Daly et al., ICPE 2020).
#pragma once
#include <cstddef>
#include <vector>

namespace dlf::perf {

/// When a proposed split counts.
struct ChangePointOptions {
  /// The t-test's two-sided p-value, corrected for the splits the best one was chosen from, must
  /// be below this (tests/perf measure the false-alarm rate this gives on stationary noise).
  double max_p = 0.001;
  /// And the means must differ by at least this share of the earlier one: a real change too
  /// small to matter (an instruction count moving 0.1 %) is not reported.
  double min_change = 0.02;
};

/// A change between point `index - 1` and point `index` of a series.
struct ChangePoint {
  size_t index = 0;          ///< the first point after the change
  double p_value = 1;        ///< of the t-test between the segments either side
  double mean_before = 0;    ///< the mean of the segment before (back to the previous change)
  double mean_after = 0;     ///< the mean of the segment after (up to the next change)
  size_t points_before = 0;  ///< the points in the segment before
  size_t points_after = 0;   ///< the points in the segment after
  /// The change as a share of the mean before: +0.10 is 10 % higher.
  double change() const { return mean_after / mean_before - 1; }
};

/// The change points of `series`, in order. Each segment's split is the one of largest energy
/// statistic (alpha 1); it is kept when a t-test of the points on either side passes `options`,
/// its p-value corrected for the segment's number of possible splits (Sidak), since the split
/// tested is the best of them. Splitting goes on in the segments until no split passes; then
/// each kept point is tested again against its final neighbours. With `groups` (one a point,
/// in order: the commit each run measured), a change falls only between two groups, so
/// several runs of one commit stay on one side.
std::vector<ChangePoint> e_divisive(const std::vector<double>& series,
                                    const ChangePointOptions& options = {},
                                    const std::vector<size_t>& groups = {});

/// The energy statistic Q of splitting `x` before index `tau` (0 < tau < x.size()): how much
/// further apart the two parts' points are than the points within each part, scaled by
/// n m / (n + m).
double energy_statistic(const std::vector<double>& x, size_t tau);

/// The two-sided p-value that `a` and `b` have the same mean: Welch's t-test when both sides
/// have 5 points or more; else Student's, the variance pooled over both (a side of one point is
/// then that point against the other side's prediction interval); 1 when both have one point.
/// Constant sides: 0 when their means differ, else 1.
double t_test(const std::vector<double>& a, const std::vector<double>& b);

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom.
double student_t_two_sided(double t, double df);

}  // namespace dlf::perf
