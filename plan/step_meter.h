// What a rank's forward and backward passes spend their seconds on, by StepPart: the compute
// of each outermost op the plan device charged (last_charged_seconds), and the waits of the
// tp, pipeline and dp groups (parallel::CommSeconds::exposed). The groups share the device's
// communication stream: a blocking collective queued behind dp's asynchronous ones (DDP's
// buckets, ZeRO's; the step's only asynchronous collectives) waited for dp, and that part of
// its wait (CommSeconds::queued) is dp's.
#pragma once
#include <array>

#include <dlf/core/op.h>
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
  explicit StepMeter(const parallel::Mesh& mesh);
  ~StepMeter() override { remove_observer(this); }
  StepMeter(const StepMeter&) = delete;
  StepMeter& operator=(const StepMeter&) = delete;
  void on_op_start(const OpDef&) override { ++depth_; }
  /// Adds an outermost op's charged seconds and FLOPs to its part.
  void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override;
  /// Stops observing; the ops' parts and the groups' waits since construction.
  PartSeconds stop();

 private:
  const parallel::Mesh& mesh_;
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
