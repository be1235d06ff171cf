// The compiled planner: one training step of a model captured as a graph on a meta device, as
// `dlf train --compile` runs it on one device or as one rank of a mesh, and what its memory
// plan says a device holds.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dlf/device/sim_spec.h>
#include <dlf/graph/executable.h>
#include <dlf/models/gpt.h>
#include <dlf/parallel/mesh.h>
#include <dlf/parallel/pipeline.h>
#include <dlf/train/rank_step.h>

namespace dlf::plan {

/// One training step of a zoo model (forward, backward, clipping, AdamW, as `dlf train
/// --compile` runs it) captured on the default device, optimised and planned, run twice; what
/// its memory plan says a device holds, and what the device's allocator held at most over the
/// second run.
struct CompiledStepMemory {
  std::string model;  ///< its name
  /// rows of its batch and tokens a row (0 for images)
  ///@{
  int64_t batch = 0, seq = 0;
  ///@}
  size_t nodes = 0;  ///< of the optimised graph
  /// Bytes: the parameters, the optimizer state (and the step's other external tensors: its
  /// step counters, module buffers), the batch, and the arena (activations, temporaries and
  /// the gradients, planned into one block)
  ///@{
  int64_t parameters = 0, optimizer_state = 0, batch_bytes = 0, arena = 0;
  ///@}
  int64_t measured_peak = 0;  ///< the allocator's high-water over the second run
  /// What the plan says the step peaks at: the sum of the four.
  int64_t planned_peak() const { return parameters + optimizer_state + batch_bytes + arena; }
};
/// The layout a captured step runs in, as `dlf train --compile` runs it; above one rank the
/// default device must be a meta device, and the step is one rank's: dp rank 0, tp rank 0 of
/// pipeline stage `stage`. A GPT over more than one rank, or in micro-batches, runs as dlf train
/// runs it (train::make_pipeline_model: its stage of the model sharded over tp, its replica's rows
/// in micro-batches through the pipeline schedule, gradients reduced over dp); other families over
/// dp replicas as DDP or FSDP, a BERT's or ViT's replica as tp rank 0's shard of it (Megatron's
/// linears) over `tp` ranks. Either way DDP's buckets are averaged inside the step (ZeRO-2:
/// reduce-scattered), the optimizer state and update sharded under ZeRO-1 and -2, and under
/// ZeRO-3 (FSDP) the parameters too, each block's gathered in the step's arena while it runs.
struct Replicas {
  int dp = 1;     ///< data-parallel ranks
  int zero = 0;   ///< 0, 1, 2 or 3
  int tp = 1;     ///< tensor-parallel ranks a replica (GPT, BERT, ViT) is sharded over
  int pp = 1;     ///< pipeline stages of a replica's GPT
  int stage = 0;  ///< the stage captured, from 0 to pp - 1
  /// a GPT's sequences a micro-batch (the replica's rows a multiple of it), their gradients
  /// accumulated (or through the pipeline); 0: all its rows at once
  int64_t micro_batch = 0;
  parallel::PipelineSchedule schedule = parallel::PipelineSchedule::one_f_one_b;  ///< with pp
  int virtual_stages = 1;  ///< chunks of layers a stage (the interleaved schedule)
  int64_t bucket_bytes = int64_t(25) << 20;  ///< DDP's buckets (dlf train's --bucket-mb)
  bool reduce_in_bf16 = false;  ///< gradients reduced in bf16 (dlf train's --grad-reduce bf16)
  int ranks() const { return dp * tp * pp; }  ///< in all
};
/// The model a captured step trains: a zoo model, or a GPT by its dimensions.
struct StepModel {
  /// The zoo's model of that name (a dlf::Error when there is none).
  StepModel(std::string zoo_name);  // NOLINT(google-explicit-constructor): a name is a model
  /// The GPT `config` describes, named by its name.
  explicit StepModel(models::GPTConfig config);
  std::string name;                      ///< as reports name it
  std::optional<models::GPTConfig> gpt;  ///< its configuration when it is a GPT
};

/// One training step captured and run once (capture_step): what `dlf graph` shows and the
/// compiled planner measures.
struct CapturedStep {
  std::unique_ptr<parallel::Mesh> mesh = {};   ///< outlives the step over it
  std::unique_ptr<train::RankStep> step = {};  ///< the rank's step, captured
  std::vector<Tensor> batch = {};              ///< a replica's rows, on the host
  /// the replica's rows and tokens a row (0 for images)
  ///@{
  int64_t rows = 0, seq = 0;
  ///@}
  bool zero3 = false;  ///< the parameters sharded (FSDP): their shards' bytes count

  /// Runs the step once more (the last run's arena freed first).
  void run();
  /// The step's graph::Compiled.
  const graph::Compiled& captured() const;
};

/// The step of `model` on the default device, run once: captured, optimised and planned (as
/// `dlf train --compile` runs it, train::RankStep): on one device, or as one rank of a mesh
/// whose groups are planning communicators (the rank dp 0, tp 0 of stage `r.stage`).
CapturedStep capture_step(const StepModel& model, int64_t batch, int64_t seq,
                          const std::string& precision,
                          const std::vector<std::string>& skip_passes = {}, const Replicas& r = {});

/// The memory plan's figures of a captured step, and the allocator's high-water over one more
/// run of it.
CompiledStepMemory memory_of(CapturedStep& c, const std::string& model);

/// The step of `model` (batch, seq 0: the benchmarks'; batch is a replica's rows) at `precision`
/// (fp32, bf16) on the default device, as dp rank 0, tp rank 0 of stage `replicas.stage`.
CompiledStepMemory compiled_step_memory(const StepModel& model, int64_t batch, int64_t seq,
                                        const std::string& precision,
                                        const Replicas& replicas = {});

/// What a device of `spec` holds of the step compiled, planned on a meta device of that spec
/// without its capacity: every pipeline stage of `replicas` captured (compiled_step_memory),
/// the one of largest peak reported.
struct CompiledPlan {
  CompiledStepMemory largest;        ///< the stage of largest peak
  int stage = 0;                     ///< which stage that is
  std::vector<int64_t> stage_peaks;  ///< each stage's planned peak, in order
  /// Whether the largest stage's peak fits the spec's memory (any, when it is unlimited)
  bool fits(const SimSpec& spec) const {
    return spec.memory_bytes == 0 || largest.planned_peak() <= spec.memory_bytes;
  }
};
CompiledPlan plan_compiled_stages(const SimSpec& spec, const StepModel& model, int64_t batch,
                                  int64_t seq, const std::string& precision, Replicas replicas);

/// "; compiled, it is planned to fit: --compile ..." for an eager run that ran out of memory on
/// a device of `spec` when graph mode plans its step to fit there (its memory plan
/// rematerialises cheap activations and reuses freed bytes); else "" (also for a layout graph
/// mode does not plan). `refused_flags`: the run has --recompute or --offload, which --compile
/// leaves out.
std::string compiled_fit_hint(const SimSpec& spec, const StepModel& model, int64_t batch,
                              int64_t seq, const std::string& precision, const Replicas& replicas,
                              bool refused_flags);

}  // namespace dlf::plan
