// Measured against predicted, by op class: the wall time of each outermost op the calling
// thread dispatches beside the time a sim device of a spec would charge it. What `dlf profile
// --compare` prints and what `dlf calibrate` fits its efficiency curves to.
#pragma once
#include <array>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <dlf/core/op.h>
#include <dlf/device/cold_starts.h>
#include <dlf/device/sim_spec.h>

namespace dlf {

/// Watches the calling thread's outermost ops while it is an observer (add_observer).
class OpClassTimes : public DispatchObserver {
 public:
  /// Prices ops as a sim device of `spec` would (simulated_seconds, cold starts counted from
  /// the ops it has watched; views are free there); `keep_ops` keeps each op's cost and time as
  /// well (ops()).
  explicit OpClassTimes(SimSpec spec, bool keep_ops = false)
      : spec_(std::move(spec)), keep_ops_(keep_ops) {}
  /// Stops observing, if it still is (a step that threw never removed it).
  ~OpClassTimes() override { remove_observer(this); }
  OpClassTimes(const OpClassTimes&) = default;             ///< an unregistered copy
  OpClassTimes& operator=(const OpClassTimes&) = default;  ///< an unregistered copy
  void on_op_start(const OpDef& op) override;              ///< starts an outermost op's clock
  /// Adds an outermost op's measured and predicted time to its class (DispatchObserver); a
  /// collective is not compared (it waits for its peers), but its bytes count towards the next
  /// ops' cold starts.
  void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override;

  /// One class's ops so far.
  struct Totals {
    long calls = 0;        ///< how many ran
    double measured = 0;   ///< seconds on the wall clock, dispatch included
    double predicted = 0;  ///< seconds the spec's device would charge
  };
  /// Per OpClass.
  const std::array<Totals, kOpClasses>& by_class() const { return classes_; }
  /// Per op name (its class is op_class(name)).
  const std::map<std::string, Totals, std::less<>>& by_op() const { return ops_by_name_; }

  /// One outermost op as it ran, what a sim device would price it by.
  struct Op {
    OpClass op_class = OpClass::elementwise;       ///< its class
    MathPrecision precision = MathPrecision::f32;  ///< the precision of its arithmetic
    double flops = 0;                              ///< its cost's FLOPs
    double bytes = 0;                              ///< bytes it reads and writes
    double rows = 0;                               ///< its cost's rows (Cost::rows)
    double cold = 0;                               ///< the share of a cold start it paid
    double measured = 0;                           ///< seconds on the wall clock
  };
  /// Every op so far, in order, when constructed with keep_ops (else empty).
  const std::vector<Op>& ops() const { return ops_; }
  const SimSpec& spec() const { return spec_; }  ///< the one ops are priced by
  /// Counts bytes moved by work it does not watch towards the next ops' cold starts.
  void moved(double bytes) { cold_starts_.moved(bytes); }
  /// Forgets the ops and totals so far, not which kernels ran (their cold starts): what a run
  /// did before the steps compared.
  void clear();

 private:
  SimSpec spec_;
  bool keep_ops_ = false;
  int depth_ = 0;
  std::chrono::steady_clock::time_point start_;
  sim::ColdStarts cold_starts_;
  std::array<Totals, kOpClasses> classes_{};
  std::map<std::string, Totals, std::less<>> ops_by_name_;
  std::vector<Op> ops_;
};

}  // namespace dlf
