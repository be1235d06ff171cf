// `dlf profile --compare sim:SPEC`: does a simulated device predict this machine? Each
// outermost op of rank 0's profiled steps is timed on the wall clock and priced as a sim device
// of SPEC prices it (roofline time at the spec's peaks and its op class's efficiency, plus the
// overheads); the two are summed by op class (dlf::OpClass) and per step, side by side with the
// error.
#pragma once
#include <cstdint>
#include <ostream>

#include <dlf/core/op_class_times.h>

namespace dlf::train {

/// Rank 0's op times by class beside a sim device's predictions, printed as a table.
class SimComparison : public OpClassTimes {
 public:
  using OpClassTimes::OpClassTimes;
  /// The table by class and the step's line: `steps` profiled, `step_seconds` their measured
  /// wall time.
  void print(std::ostream& os, int64_t steps, double step_seconds) const;
};

}  // namespace dlf::train
