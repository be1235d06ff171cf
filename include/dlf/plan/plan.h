// Planning a GPT training layout on meta devices: per-device memory by category and the
// predicted step time, for models far larger than this machine (GPT-3 175B over 1024 devices).
//
// Each pipeline stage's rank runs on a meta device as `dlf train` runs it: its stage of the model
// (ParallelGPT, attention heads, MLP columns and the vocabulary split tp ways) alone for a
// micro-batch's forward and backward, and its train::RankStep over planning dp, tp and pp groups
// (parallel::PlanningCommunicator, whose collectives run on the meta device's clock priced over
// the devices the mesh gives each group: tp innermost, then pp, then dp) — DDP or ZeRO, offload,
// clipping, the pipeline's sends and AdamW as a run has them — so memory and times come from the
// same op records, collectives and cost model as a real run. The pipeline's fill and drain and
// the activations its schedule holds at once are added to the stage's run.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dlf/autograd/checkpoint.h>
#include <dlf/core/dtype.h>
#include <dlf/device/allocator.h>
#include <dlf/device/sim_spec.h>
#include <dlf/models/gpt.h>
#include <dlf/parallel/mesh.h>
#include <dlf/parallel/pipeline.h>
#include <dlf/plan/breakdown.h>
#include <dlf/train/trainer.h>

namespace dlf::plan {

using models::GPTConfig;
using parallel::Layout;

using parallel::PipelineSchedule;

/// What ZeRO-Offload keeps in host memory (`--offload`).
enum class Offload : uint8_t {
  none,       ///< nothing: everything on the device
  optimizer,  ///< the optimizer state and update (nn::optim::Optimizer::offload)
  params,     ///< those and ZeRO-3's parameter shards (parallel::FSDPOptions::shards_on)
};
const char* offload_name(Offload offload);     ///< "none", "optimizer", "params"
Offload parse_offload(std::string_view name);  ///< offload_name()'s inverse; else a dlf::Error

/// What plan_gpt plans.
struct PlanOptions {
  GPTConfig model;           ///< the GPT
  Layout layout;             ///< dp x tp x pp
  SimSpec spec;              ///< the device
  int64_t global_batch = 0;  ///< sequences per step; 0: dp · micro_batch · (4·pp if pp > 1)
  int64_t micro_batch = 1;   ///< sequences per micro-batch
  int64_t seq = 0;           ///< 0: the model's context
  DType dtype = DType::f32;  ///< f32, or bf16: mixed precision (autocast, f32 master weights)
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;  ///< the pipeline's
  int virtual_stages = 1;  ///< chunks of layers per rank (PipelineSchedule::interleaved)
  /// what each block keeps for backward and recomputes there (autograd::checkpoint)
  autograd::Recompute recompute = autograd::Recompute::none;
  int zero = 0;                     ///< ZeRO stage over dp (parallel/zero.h): 0 to 3
  Offload offload = Offload::none;  ///< what ZeRO-Offload keeps in host memory
  /// An estimate: a deep stage runs with fewer blocks a chunk (as many as fill two gradient
  /// buckets, and one more) and what grows with its blocks is extrapolated to its own — many
  /// times faster for deep models, the times within 1 %, but a peak may come at a moment only
  /// deeper stages reach (plan::search confirms what it chooses with the whole stage).
  bool estimate = false;
};

/// What one device of the most loaded pipeline stage holds and does.
struct StagePlan {
  /// the stage and how many blocks it holds
  ///@{
  int stage = 0, layers = 0;
  ///@}
  int64_t parameters = 0;        ///< on one of its devices
  BytesByCategory memory{};      ///< at the device's peak
  int64_t peak_bytes = 0;        ///< at the peak
  bool peak_at_update = false;   ///< the peak is in the optimizer step, not forward + backward
  int64_t activation_bytes = 0;  ///< of one micro-batch
  /// micro-batch chunks whose activations are held at once (a chunk: one of the stage's
  /// virtual stages, so with V of them 1/V of a micro-batch's activations)
  int in_flight = 1;
  /// seconds per micro-batch: forward, backward, tp collectives; the optimizer step (ZeRO's
  /// gathers of the updated parameters and offload's copies included)
  ///@{
  double forward_s = 0, backward_s = 0, tp_comm_s = 0, optimizer_s = 0;
  ///@}
  /// seconds of a micro-batch in the pipeline's steady state as the stage's run took it: its
  /// forward and backward with tp's and the pipeline's transfers and ZeRO-3's gathers
  double micro_batch_s = 0;
};

/// A planned GPT layout: per device memory, step time and throughput.
struct Plan {
  PlanOptions options;  ///< as asked, with its defaults filled in
  /// the model's parameters; micro-batches per pipeline and step
  ///@{
  int64_t parameters = 0, micro_batches = 0;
  ///@}
  StagePlan worst;                ///< the stage with the highest peak memory
  std::vector<StagePlan> stages;  ///< every stage, in order
  int slowest = 0;     ///< the pipeline's bottleneck: the stage with the longest micro-batch
  double stage_s = 0;  ///< slowest stage's time per micro-batch, p2p included
  double fill_s = 0;   ///< the pipeline's fill and drain: the other stages' micro-batch each
  /// seconds: a pipeline send; the bubble's share; the dp allreduce and its exposed part
  ///@{
  double p2p_s = 0, bubble_fraction = 0, dp_allreduce_s = 0, dp_exposed_s = 0;
  ///@}
  double optimizer_s = 0;  ///< the slowest stage's AdamW step
  /// per step: seconds, tokens per second, model FLOPs utilization
  ///@{
  double step_s = 0, tokens_per_s = 0, mfu = 0;
  ///@}
  /// model FLOP/s achieved by each device, counting 6·N + 12·L·T·C FLOPs a token (N parameters,
  /// L layers, T tokens a sequence, C the width; recomputation not counted)
  double flops_per_device = 0;
  /// the step by part (describe_breakdown, limit_line): the busiest stage's compute and
  /// communication waits over the step's micro-batches, the fill and drain, the optimizer
  StepBreakdown breakdown;
  bool fits = true;  ///< whether the worst stage fits
};

/// The stage runs of many plans (a search's), each made once: a stage's forward and backward on
/// the meta device, which depend on the model, the spec, tp, the stage's blocks (and whether it
/// holds the embedding or the head), the micro-batch, the sequence, the dtype, recompute and
/// the schedule; and its rank's training steps (train::RankStep), which depend on dp, pp, ZeRO,
/// offload and the micro-batches they run as well.
class StageCache {
 public:
  StageCache();
  ~StageCache();
  StageCache(const StageCache&) = delete;
  StageCache& operator=(const StageCache&) = delete;
  /// stage runs made on the meta device (each kind once)
  int64_t runs_made() const;

 private:
  friend Plan plan_gpt(const PlanOptions& options, StageCache* cache);
  struct Runs;
  std::unique_ptr<Runs> runs_;
};

/// Throws dlf::Error for a layout that does not divide the model or the batch, or a schedule
/// it cannot run (parallel::check_schedule). The stages are gpt_stage_blocks()'s, as a run has
/// them (interleaved: rank s holds virtual stages s, pp + s, ... of pp · V). With a cache, the
/// stage runs an earlier plan made are reused (the same numbers).
Plan plan_gpt(const PlanOptions& options, StageCache* cache = nullptr);

/// Plans every dp × tp × pp layout of `devices` that divides the model and options'
/// global_batch (which must be set), each with train::default_micro_batch(); best first: the
/// layouts that fit by predicted step time, then the others by peak memory.
std::vector<Plan> rank_layouts(const PlanOptions& options, int devices);
/// A few lines for people.
std::string describe(const Plan& plan);
/// One `plan` JSON line (bench/ and shared/BENCH.md style).
std::string to_json_line(const Plan& plan);

/// A data-parallel layout of any registered model (GPT, BERT, ViT, UNet), planned from the
/// model itself: a rank's train::RankStep runs on a meta device (no memory, no initialisation)
/// over a planning dp group — DDP or ZeRO, offload, clipping and AdamW as a run has them — so
/// memory by category, op and collective times come from the real step's ops; a forward of
/// one replica gives the FLOPs.
struct ReplicaPlanOptions {
  std::string model;         ///< a registered name
  int dp = 1;                ///< data-parallel ranks
  SimSpec spec;              ///< the device
  int64_t global_batch = 0;  ///< sequences or images per step; 0: one per device
  int64_t seq = 0;           ///< GPT and BERT: tokens per sequence; 0: the model's context
  DType dtype = DType::f32;  ///< f32, or bf16: mixed precision (autocast, f32 master weights)
  /// Module::recompute: what each block keeps for backward and recomputes there
  autograd::Recompute recompute = autograd::Recompute::none;
  int zero = 0;                     ///< ZeRO stage over dp (parallel/zero.h): 0 to 3
  Offload offload = Offload::none;  ///< what ZeRO-Offload keeps in host memory
};

/// A planned data-parallel layout of any model.
struct ReplicaPlan {
  ReplicaPlanOptions options;    ///< as asked, with its defaults filled in
  int64_t parameters = 0;        ///< of one replica
  std::string unit;              ///< what the batch counts: "tokens", "images"
  double items_per_step = 0;     ///< per step, in `unit`
  BytesByCategory memory{};      ///< per device, at its peak
  int64_t peak_bytes = 0;        ///< planned per device, at its peak
  int64_t activation_bytes = 0;  ///< held at the end of the forward pass
  /// Seconds per step: forward, backward, the optimizer, the data-parallel reduction and what
  /// of it is exposed.
  ///@{
  double forward_s = 0, backward_s = 0, optimizer_s = 0, dp_allreduce_s = 0, dp_exposed_s = 0;
  ///@}
  /// Per step: seconds, items per second, model FLOPs utilization.
  ///@{
  double step_s = 0, items_per_s = 0, mfu = 0;
  ///@}
  bool fits = true;  ///< whether the peak fits the device
};

/// Plans it; a dlf::Error for an unknown model or a batch dp does not divide.
ReplicaPlan plan_replica(const ReplicaPlanOptions& options);
std::string describe(const ReplicaPlan& plan);      ///< a few lines for people
std::string to_json_line(const ReplicaPlan& plan);  ///< one `plan` JSON line

/// "1.2M", "124.4M", "175.0B": a parameter count for people.
std::string format_count(double count);

}  // namespace dlf::plan
