// How the GPT planner runs a pipeline stage on the plan device (plan_gpt's parts): the model's
// stage alone for a micro-batch, and its rank's real training steps; where in the pipeline the
// rank runs, and the estimates of a deep stage from runs at two depths.
#pragma once
#include <dlf/device/allocator.h>
#include <dlf/nn/module.h>
#include <dlf/parallel/communicator.h>
#include <dlf/plan/plan.h>

#include <vector>

#include "step_meter.h"

namespace dlf::plan::internal {

// One rank of one pipeline stage: which, and what it computes.
struct StageShape {
  const GPTConfig& c;
  int tp, stage, stages, chunks;
  int64_t batch, seq;
  DType dtype;
  autograd::Recompute recompute;
};

// The model's own stage (ParallelGPT over a planning tp group): forward and backward of one
// micro-batch through every chunk of the stage, on the plan device.
struct StageRun {
  int64_t parameters = 0, activation_bytes = 0;
  double forward_s = 0, backward_s = 0, tp_comm_s = 0;
};
StageRun run_stage(const StageShape& s, const SimSpec& spec);

// Where a stage's rank runs: the stages of the layout's pipeline it runs in, and its place
// among them. 1F1B and GPipe: three, the first, the last or a middle stage (as the last but
// one) with its neighbours, whose transfers cross the links a run's would — the fewest
// micro-batches to reach the steady state; what the stage holds more in the whole pipeline is
// added after. Interleaved, whose chunks pass through every stage: all of them.
struct Position {
  std::vector<int> stages;
  int at = 0;
};
Position run_position(const PlanOptions& o, int stage);

// A rank of the stage as a run trains it: train::RankStep over the pipeline model
// (train::make_pipeline_model) on planning dp, tp and pp groups — DDP's allreduce overlapping
// the last micro-batch's backward or ZeRO's reduce-scatters, ZeroOptimizer's shards, FSDP's
// prefetched gathers, the offloaded optimizer's copies over the host link and its update on the
// host — run twice as the trainer runs it; the second step's peaks and times on the clock.
struct RankRun {
  int64_t micro_batches = 0;
  int64_t peak_step = 0, peak_update = 0;  // during forward and backward; the update
  BytesByCategory at_peak_step{}, at_peak_update{};
  double forward_backward_s = 0, update_s = 0, p2p_s = 0;
  parallel::CommSeconds dp;  // the step's data-parallel collectives
  PartSeconds parts;         // forward_backward_s's
};
RankRun run_rank_step(const PlanOptions& o, const nn::NamedTensors& whole, const Position& at,
                      int64_t micro_batches);

// A stage's runs: its micro-batch alone, and its rank's steps with the micro-batches the run
// takes and with more, the share of a micro-batch's activations the first held at once.
struct StageRuns {
  StageRun stage;
  RankRun ranked, more;
  double held = 0;
};

/// The micro-batches stage `stage` of `pp` runs to its steady state, and how many more a
/// second run takes (micro_batches_run, micro_batches_more); the chunks of micro-batches it
/// holds at once out of m (micro_batches_held).
int64_t micro_batches_more(const PlanOptions& o);
int64_t micro_batches_run(const PlanOptions& o, int pp, int stage, int64_t m);
double micro_batches_held(const PlanOptions& o, int pp, int stage,
                          const std::vector<int>& chunk_layers, int64_t m);

/// A stage's runs at depth a + t · (b - a), field by field.
StageRuns extrapolate(const StageRuns& a, const StageRuns& b, double t);
/// A stage's parts over its m micro-batches.
PartSeconds parts_over(const RankRun& ranked, const RankRun& more, int64_t m);
/// `c` cut for a pipeline of `pp` stages of `chunks` chunks whose stage `at` holds `blocks`.
GPTConfig cut_for(GPTConfig c, int pp, int chunks, int at, const std::vector<int>& blocks);

}  // namespace dlf::plan::internal
