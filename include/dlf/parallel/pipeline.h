// Pipeline parallelism: the layers split into stages, one per rank of a pp group, and a batch
// into micro-batches that flow through them — activations forward, their gradients back, by
// send/recv. Two schedules: GPipe (every forward, then every backward) and 1F1B (after a
// warm-up, one forward then one backward, so a stage holds at most pp - stage micro-batches
// of activations instead of all of them).
#pragma once
#include <functional>
#include <span>
#include <vector>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// Cuts `costs` (a layer stack's per-layer costs, in order) into `parts` contiguous, non-empty
/// runs so that the costliest run costs as little as possible; returns the parts + 1 boundaries
/// (0, ..., costs.size()). Among the best cuts it loads the later runs first: under 1F1B an
/// early stage holds more micro-batches' activations. dlf::Error when parts > costs.size().
std::vector<int> partition_by_cost(std::span<const double> costs, int parts);

/// Pipeline schedules.
enum class PipelineSchedule { gpipe, one_f_one_b };

/// One pipeline step's options.
struct PipelineStep {
  int micro_batches = 1;                                      ///< per step
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;  ///< 1F1B or GPipe
  Shape activation_shape;               ///< what travels between stages, e.g. [b, T, C]
  DType activation_dtype = DType::f32;  ///< of what goes between stages
  bool forward_only = false;            ///< evaluation: no gradients, no activations kept
};

/// One training step's forward and backward through the pipeline of `pp` (this rank is stage
/// pp.rank()). `stage(input, m)` runs this stage on micro-batch m: the first stage gets an
/// undefined input (it reads its own data), the others the previous stage's activations; the
/// last stage returns micro-batch m's loss, the others their output activations. Gradients
/// accumulate over the micro-batches with each loss weighted 1/micro_batches (none with
/// forward_only). Returns the mean loss on the last stage, 0 on the others.
double run_pipeline(Communicator& pp, const PipelineStep& step,
                    const std::function<Tensor(const Tensor& input, int m)>& stage);

}  // namespace dlf::parallel
