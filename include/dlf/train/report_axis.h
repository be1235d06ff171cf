// The report's chart axes: round ticks, steps of 1, 2 or 5 x 10^k ("nice numbers", Heckbert's
// Graphics Gems labelling as d3's ticks and scale.nice() choose them).
#pragma once
#include <string>
#include <vector>

namespace dlf::train {

/// An axis's ticks and their labels.
struct AxisTicks {
  std::vector<double> values;       ///< evenly spaced, ascending; the first and last bound the axis
  std::vector<std::string> labels;  ///< each value with the step's decimals ("0.0", "0.2", ...)
};

/// Round ticks over [lo, hi] (lo < hi): a step of 1, 2 or 5 x 10^k dividing the range into about
/// `count` parts (d3's rule: the round step nearest to (hi - lo) / count on a log scale), from the
/// multiple of the step at or below lo to the one at or above hi. `whole`: no step below 1 (an
/// axis of steps or ops). [0.013, 5.56] gives 0, 1, ..., 6; [0, 1.05] gives 0.0, 0.2, ..., 1.2.
AxisTicks axis_ticks(double lo, double hi, int count = 5, bool whole = false);

}  // namespace dlf::train
