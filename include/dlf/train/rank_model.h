// One rank's part of a model under a dp x tp x pp mesh, as it trains: the part itself (a whole
// replica, its tensor-parallel shard, or a pipeline stage), its forward and backward on this
// rank's rows of a batch, the gradients' reduction over the data-parallel replicas (DDP, or
// FSDP under ZeRO-3), and — under graph mode — that whole step captured once and replayed.
// Checkpoints hold whole tensors: the part gathers the whole model and optimizer state, and
// takes its share of a whole one, so a run resumes under any layout.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dlf/autograd/checkpoint.h>
#include <dlf/graph/executable.h>
#include <dlf/models/family.h>
#include <dlf/parallel/ddp.h>
#include <dlf/parallel/fsdp.h>
#include <dlf/parallel/grad_norm.h>
#include <dlf/parallel/mesh.h>
#include <dlf/parallel/pipeline.h>

namespace dlf::train {

/// How a rank's part of the model runs its step.
struct PartOptions {
  /// A pipeline family's micro-batches per step and replica (the rows a multiple of them).
  int micro_batches = 1;
  /// 1F1B, GPipe or interleaved
  parallel::PipelineSchedule schedule = parallel::PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;  ///< chunks of layers per rank (the interleaved schedule)
  int64_t bucket_bytes = int64_t(25) << 20;  ///< DDP's gradient buckets
  int zero = 0;  ///< 2: DDP reduce-scatters the gradients; 3: FSDP shards the parameters
  /// ZeRO-3's parameter shards in host memory (parallel::FSDPOptions::shards_on)
  bool offload_params = false;
  bool reduce_in_bf16 = false;  ///< the data-parallel gradient average crosses the wire in bf16
  /// activation recompute of every block (nn::Module::recompute)
  autograd::Recompute recompute = autograd::Recompute::none;
  /// The step (forward and backward, the gradients' reduction and what set_after_backward()
  /// gives) captured as a graph at the first step and replayed after (graph::Compiled).
  bool compile = false;
  /// passes of graph::optimize the captured step leaves out (`dlf graph --skip-pass`)
  std::vector<std::string> skip_passes = {};
};

/// One rank's part of a model (see above). Every rank of the mesh makes the same calls (SPMD).
class RankModel {
 public:
  virtual ~RankModel() = default;
  /// This rank's part, named as the whole model names its parameters.
  virtual nn::Module& module() = 0;
  /// This rank's part.
  const nn::Module& module() const { return const_cast<RankModel*>(this)->module(); }
  /// Forward and backward of this replica's rows `batch` (on the host, in the family's form),
  /// the gradients' reduction over the replicas and then what set_after_backward() gives,
  /// eagerly or (PartOptions::compile) as one captured graph: afterwards every gradient is
  /// ready. The mean loss over the global batch, on every rank.
  virtual double step(const std::vector<Tensor>& batch) = 0;
  /// step() without reading the loss on the host: the loss as an f64 [1] on the device — this
  /// replica's mean for a whole replica, the global batch's through a pipeline (on a meta
  /// device, its shape only: what a planner runs).
  virtual Tensor run_step(const std::vector<Tensor>& batch) = 0;
  /// What the step runs once the gradients are ready — under PartOptions::compile inside its
  /// graph (clipping, the optimizer's update).
  void set_after_backward(std::function<void()> after) { after_backward_ = std::move(after); }
  /// The mean loss of this replica's rows `batch` (host, the family's form) without gradients,
  /// averaged over the replicas, on every rank.
  virtual double loss(const std::vector<Tensor>& batch) = 0;
  /// The family's score of the model as this rank holds it (collective).
  virtual models::Evaluation evaluate(const models::Task& task) = 0;
  /// How this rank's gradients add up to the global gradient norm (each parameter of the whole
  /// model counted once) over the model-parallel ranks; the replicas hold the same.
  virtual parallel::NormScope norm_scope() const = 0;
  /// The whole model (state_dict names) and the whole optimizer state from this rank's
  /// `optimizer_state` (by parameter name), gathered onto world rank 0; the other ranks get
  /// nothing (collective).
  virtual std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole(
      const nn::NamedTensors& optimizer_state) = 0;
  /// This rank's share of a whole optimizer state by parameter name.
  virtual nn::NamedTensors shard_optimizer_state(const nn::NamedTensors& whole) const = 0;
  /// The data-parallel layout for a ZeroOptimizer (DDP's, or FSDP's under ZeRO-3); null
  /// without data parallelism.
  parallel::ShardedParameters* shards() {
    if (fsdp_) return &*fsdp_;
    return ddp_ ? &*ddp_ : nullptr;
  }
  /// The step's graph under PartOptions::compile (captured at the first step), else null.
  const graph::Compiled* compiled() const { return compiled_ ? &*compiled_ : nullptr; }

 protected:
  /// A part over `mesh`, run as `options` say.
  RankModel(parallel::Mesh& mesh, const PartOptions& options) : mesh_(mesh), options_(options) {}
  /// Wraps module() over the data-parallel group as the options say (nothing with one
  /// replica): FSDP under ZeRO-3, else DDP; `tied` parameters have buckets (FSDP: units) of
  /// their own. Called by a part once its module is on its device.
  void wrap_data_parallel(const std::vector<Tensor>& tied = {});
  /// Waits for the gradients' reduction, then `tie` (the gradients of weights a pipeline
  /// holds twice) and after_backward_.
  void finish_backward(const std::function<void()>& tie = {});
  /// `value` averaged over the replicas.
  double average(double value) const;
  Device device() const { return mesh_.dp().device(); }  ///< the rank's

  parallel::Mesh& mesh_;                                    ///< the rank's groups
  PartOptions options_;                                     ///< how the part runs
  std::optional<graph::Compiled> compiled_;                 ///< the captured step, when compiled
  std::optional<parallel::DistributedDataParallel> ddp_;    ///< over dp, unless ZeRO-3
  std::optional<parallel::FullyShardedDataParallel> fsdp_;  ///< ZeRO-3, instead of ddp_
  std::function<void()> after_backward_;                    ///< set_after_backward()'s
};

/// This rank's part of `model` of `family` whose whole state is `whole` (the same on every
/// rank): a pipeline family's stage and tensor-parallel shard (models::ParallelGPT), any
/// other's whole replica or (with a split rule) its tensor-parallel shard, on the rank's device.
/// dlf::Error for a layout the family does not run (a pipeline of a replica family; tensor
/// parallelism without a rule). `vocab`: the model's vocabulary, its tokenizer's
/// (models::BuildOptions::vocab; 0: the model's own).
std::unique_ptr<RankModel> make_rank_model(const models::Family& family, const std::string& model,
                                           parallel::Mesh& mesh, const nn::NamedTensors& whole,
                                           const PartOptions& options, int64_t vocab = 0);
/// make_rank_model() for a GPT given by its configuration (one not in the zoo).
std::unique_ptr<RankModel> make_pipeline_model(const models::GPTConfig& config,
                                               parallel::Mesh& mesh, const nn::NamedTensors& whole,
                                               const PartOptions& options);

}  // namespace dlf::train
