// What a rank's forward and backward passes spend their seconds on, by StepPart: the compute
// of each outermost op the plan device charged (last_charged_seconds), and the waits of the
// tp, pipeline and dp groups (parallel::CommSeconds::exposed). The groups share the device's
// communication stream: a blocking collective queued behind dp's asynchronous ones (DDP's
// buckets, ZeRO's; the step's only asynchronous collectives) waited for dp, and that part of
// its wait (CommSeconds::queued) is dp's, as is what the communication stream runs past the
// compute stream at the end (the last buckets' reduction, which the update waits for). The
// wait of a collective of another group (the tied embedding's gradient, a subgroup of pp's
// first and last stages) is the pipeline's.
#pragma once
#include <array>

#include <dlf/core/op.h>
#include <dlf/device/sim_device.h>
#include <dlf/parallel/mesh.h>
#include <dlf/plan/breakdown.h>
#include <dlf/plan/plan.h>

namespace dlf::plan {

/// A run's seconds and FLOPs by part.
struct PartSeconds {
  std::array<double, kStepParts> seconds{}, flops{}, bytes{};
};

/// Observes the calling thread's ops on a sim or meta device while it lives, and the mesh's
/// groups from its construction to stop().
class StepMeter : public DispatchObserver {
 public:
  /// Watches `mesh`'s groups and `clock`, the device's.
  StepMeter(const parallel::Mesh& mesh, const sim::Timeline& clock);
  ~StepMeter() override { remove_observer(this); }
  StepMeter(const StepMeter&) = delete;
  StepMeter& operator=(const StepMeter&) = delete;
  void on_op_start(const OpDef&) override;
  /// Adds an outermost op's charged seconds and FLOPs to its part.
  void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override;
  /// Stops observing; the ops' parts and the groups' waits since construction.
  PartSeconds stop();

 private:
  // How far the device's clock (its latest stream) is past its compute stream.
  double lead() const { return clock_.now() - clock_.now(sim::Stream::compute); }
  const parallel::Mesh& mesh_;
  const sim::Timeline& clock_;
  double lead_;                         // at the start
  double op_start_ = 0;                 // the compute stream's time when the outermost op began
  parallel::CommSeconds tp_, pp_, dp_;  // the groups' at the start
  int depth_ = 0;
  PartSeconds parts_;
};

/// A plan's step by part: the busiest stage's forward and backward passes over the step's
/// micro-batches, the pipeline's fill and drain, the optimizer step; with the links its groups
/// cross.
StepBreakdown step_breakdown(const PlanOptions& options, const PartSeconds& busiest, double fill_s,
                             double optimizer_s);

}  // namespace dlf::plan
