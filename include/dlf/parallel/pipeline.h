// Pipeline parallelism: the layers split into stages, one per rank of a pp group, and a batch
// into micro-batches that flow through them — activations forward, their gradients back, by
// send/recv. Three schedules: GPipe (every forward, then every backward); 1F1B (after a
// warm-up, one forward then one backward, so a stage holds at most pp - stage micro-batches
// of activations instead of all of them); and Megatron-LM's interleaved 1F1B, where each rank
// holds V chunks of layers (virtual stages v·pp + rank, so a micro-batch passes every rank V
// times) and the bubble shrinks V-fold for V times the sends.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// Cuts `costs` (a layer stack's per-layer costs, in order) into `parts` contiguous, non-empty
/// runs so that the costliest run costs as little as possible; returns the parts + 1 boundaries
/// (0, ..., costs.size()). Among the best cuts it loads the later runs first: under 1F1B an
/// early stage holds more micro-batches' activations. dlf::Error when parts > costs.size().
std::vector<int> partition_by_cost(std::span<const double> costs, int parts);

/// Pipeline schedules.
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved };

/// "gpipe", "1f1b", "interleaved".
const char* schedule_name(PipelineSchedule schedule);
/// schedule_name()'s inverse; a dlf::Error names the choices.
PipelineSchedule parse_schedule(std::string_view name);

/// One pipeline step's options.
struct PipelineStep {
  int micro_batches = 1;                                      ///< per step
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;  ///< 1F1B, GPipe or interleaved
  /// Chunks of layers per rank (interleaved: at least 2, and pp must divide micro_batches).
  int virtual_stages = 1;
  Shape activation_shape;               ///< what travels between stages, e.g. [b, T, C]
  DType activation_dtype = DType::f32;  ///< of what goes between stages
  bool forward_only = false;            ///< evaluation: no gradients, no activations kept
  /// The tensor-parallel group whose ranks hold the same activations (a stage's boundary):
  /// each sends 1/size of them over its own link and the receivers allgather the slices
  /// (Megatron-LM's scatter/gather). Null, or sizes that do not divide them: whole sends.
  Communicator* slices = nullptr;
};

/// "GPipe", "1F1B", "interleaved 1F1B, 2 virtual stages": a schedule for people.
std::string schedule_label(PipelineSchedule schedule, int virtual_stages);

/// dlf::Error unless the schedule can run: interleaved needs at least 2 virtual stages, 2
/// pipeline stages and micro-batches a multiple of the stages; the others 1 virtual stage.
void check_schedule(PipelineSchedule schedule, int virtual_stages, int stages,
                    int64_t micro_batches);

/// How many (micro-batch, chunk) forwards stage `stage` runs before its first backward (it
/// holds the activations of that many and one more, at most all of them): all under GPipe,
/// pp - stage - 1 under 1F1B, 2(pp - stage - 1) + (V - 1)·pp interleaved (Megatron-LM's
/// warm-up; all of them when the micro-batches are as many as the stages).
int64_t warmup_forwards(PipelineSchedule schedule, int stages, int stage, int virtual_stages,
                        int64_t micro_batches);

/// One forward or backward of a stage: a micro-batch through one of its chunks.
struct PipelinePass {
  int micro_batch = 0;  ///< which
  int chunk = 0;        ///< 0 unless interleaved
};
/// A stage's k-th forward (or backward) pass: micro-batch k, or interleaved, Megatron-LM's
/// order — micro-batches in groups of pp, each group through chunk 0, then chunk 1, ...
/// (backward: the last chunk first).
PipelinePass pipeline_pass(PipelineSchedule schedule, int k, int stages, int virtual_stages,
                           bool forward);

/// Runs chunk `chunk` of this rank's layers (0 when not interleaved) on micro-batch `m`.
using StageFn = std::function<Tensor(const Tensor& input, int m, int chunk)>;

/// One training step's forward and backward through the pipeline of `pp` (this rank is stage
/// pp.rank(); interleaved, its chunk v is virtual stage v·pp + rank). `stage(input, m, chunk)`
/// runs a (virtual) stage on micro-batch m: the first gets an undefined input (it reads its
/// own data), the others the previous stage's activations; the last returns micro-batch m's
/// loss, the others their output activations. Gradients accumulate over the micro-batches with
/// each loss weighted 1/micro_batches (none with forward_only). Returns the mean loss on the
/// last stage's rank, 0 on the others: an f64 scalar on the device, summed there, so that a
/// captured step (graph::capture) holds the whole schedule — its sends, receives and backwards.
Tensor run_pipeline(Communicator& pp, const PipelineStep& step, const StageFn& stage);

}  // namespace dlf::parallel
