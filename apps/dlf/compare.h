// `dlf profile --compare sim:SPEC`: does a simulated device predict this machine? Each
// outermost op of rank 0's profiled steps is timed on the wall clock and priced as a sim device
// of SPEC prices it (roofline time at the spec's peaks and its op class's efficiency, plus the
// overheads); the two are summed by op class (dlf::OpClass) and per step, side by side with the
// error.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include <dlf/core/op.h>
#include <dlf/device/sim_spec.h>

namespace dlf::app {

/// Watches the calling thread's outermost ops while it is an observer (add_observer).
class SimComparison : public DispatchObserver {
 public:
  /// Prices ops as a sim device of `spec` would.
  explicit SimComparison(SimSpec spec) : spec_(std::move(spec)) {}
  void on_op_start(const OpDef& op) override;  ///< starts an outermost op's clock
  /// Adds an outermost op's measured and predicted time to its class (DispatchObserver).
  void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override;

  /// The table by class and the step's line: `steps` profiled, `step_seconds` their measured
  /// wall time.
  void print(std::ostream& os, int64_t steps, double step_seconds) const;

 private:
  struct Totals {
    long calls = 0;
    double measured = 0, predicted = 0;  // seconds
  };
  SimSpec spec_;
  int depth_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::array<Totals, kOpClasses> classes_{};
};

}  // namespace dlf::app
