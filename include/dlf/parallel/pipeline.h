// Pipeline parallelism: the layers split into stages, one per rank of a pp group, and a batch
// into micro-batches that flow through them — activations forward, their gradients back, by
// send/recv. Two schedules: GPipe (every forward, then every backward) and 1F1B (after a
// warm-up, one forward then one backward, so a stage holds at most pp - stage micro-batches
// of activations instead of all of them).
#pragma once
#include <functional>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

enum class PipelineSchedule { gpipe, one_f_one_b };

struct PipelineStep {
  int micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  Shape activation_shape;  ///< what travels between stages, e.g. [b, T, C]
  DType activation_dtype = DType::f32;
};

/// One training step's forward and backward through the pipeline of `pp` (this rank is stage
/// pp.rank()). `stage(input, m)` runs this stage on micro-batch m: the first stage gets an
/// undefined input (it reads its own data), the others the previous stage's activations; the
/// last stage returns micro-batch m's loss, the others their output activations. Gradients
/// accumulate over the micro-batches with each loss weighted 1/micro_batches. Returns the mean
/// loss on the last stage, 0 on the others.
double run_pipeline(Communicator& pp, const PipelineStep& step,
                    const std::function<Tensor(const Tensor& input, int m)>& stage);

}  // namespace dlf::parallel
