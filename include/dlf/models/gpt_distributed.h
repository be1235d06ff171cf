// One rank of a GPT trained over a dp × tp × pp mesh (Megatron-LM's 3-D parallelism): its
// pipeline stage of the model, sharded over its tp group (ParallelGPT); its dp replica's rows
// cut into micro-batches that flow through the pipeline (1F1B, GPipe or interleaved); gradients
// averaged over dp once per step (DDP, overlapping the last micro-batch's backward) and the tied
// embedding's summed over the pipeline's two ends. Every rank of the mesh makes the same calls
// (SPMD); one device is the 1 × 1 × 1 mesh.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include <dlf/graph/executable.h>
#include <dlf/models/gpt_parallel.h>
#include <dlf/parallel/ddp.h>
#include <dlf/parallel/fsdp.h>
#include <dlf/parallel/grad_norm.h>
#include <dlf/parallel/mesh.h>
#include <dlf/parallel/pipeline.h>

namespace dlf::models {

/// How DistributedGPT runs a step.
struct DistributedGPTOptions {
  int micro_batches = 1;  ///< per step, per dp replica
  /// 1F1B, GPipe or interleaved
  parallel::PipelineSchedule schedule = parallel::PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;  ///< chunks of layers per rank (the interleaved schedule)
  int64_t bucket_bytes = int64_t(25) << 20;  ///< DDP's
  int zero = 0;  ///< 2: DDP reduce-scatters the gradients; 3: FSDP shards the parameters
  /// ZeRO-3's parameter shards in host memory (parallel::FSDPOptions::shards_on)
  bool offload_params = false;
  bool reduce_in_bf16 = false;  ///< the data-parallel gradient average crosses the wire in bf16
  /// The training step (forward and backward through the pipeline schedule, the gradients'
  /// reduction and what set_after_backward() gives) captured as a graph at the first step and
  /// replayed after (graph::Compiled); under ZeRO a ZeroOptimizer's clip_and_update given to
  /// set_after_backward (ZeRO-2's and -3's gradient parts live in the graph, and ZeRO-3's
  /// gathered parameters).
  bool compile = false;
};

/// One rank's part of a GPT over a dp x tp x pp mesh (see above).
class DistributedGPT {
 public:
  /// This rank's stage and shard of the GPT whose parameters are `whole` (GPT::state_dict()
  /// names, the same on every rank), on the rank's device.
  DistributedGPT(const GPTConfig& config, parallel::Mesh& mesh, const nn::NamedTensors& whole,
                 DistributedGPTOptions options = {});

  /// This rank's stage and shard.
  ParallelGPT& module() { return *model_; }
  /// This rank's stage and shard.
  const ParallelGPT& module() const { return *model_; }
  /// The data-parallel layout for a ZeroOptimizer (DDP's, or FSDP's under ZeRO-3); null
  /// without data parallelism.
  parallel::ShardedParameters* shards() {
    if (fsdp_) return &*fsdp_;
    return ddp_ ? &*ddp_ : nullptr;
  }

  /// Forward and backward of this replica's rows x, y [b, T] (b a multiple of the
  /// micro-batches): afterwards every gradient is ready for the optimizer. Returns the mean
  /// loss over the whole global batch, on every rank.
  double forward_backward(const Tensor& x, const Tensor& y);
  /// forward_backward() without reading the loss on the host: the mean loss as an f64 [1] on
  /// the device (on a meta device, its shape only: what a planner runs).
  Tensor step(const Tensor& x, const Tensor& y);
  /// The step's graph::Compiled under options.compile (captured at the first step), else null.
  const graph::Compiled* compiled() const { return compiled_ ? &*compiled_ : nullptr; }
  /// What the step runs once the gradients are ready — under options.compile inside its graph
  /// (clipping, the optimizer's update).
  void set_after_backward(std::function<void()> after) { after_backward_ = std::move(after); }
  /// The mean loss of this replica's rows x, y without gradients, averaged over the replicas;
  /// on every rank.
  double loss(const Tensor& x, const Tensor& y);
  /// The global L2 norm of the gradients, each parameter of the whole model counted once;
  /// scales them to `max_norm` when above. The norm before clipping, on every rank.
  double clip_grad_norm(double max_norm);
  /// How this rank's gradients add up to the global norm: a replicated parameter on tp rank 0
  /// only, the last stage's copy of the head not at all, summed over tp and pp.
  parallel::NormScope norm_scope() const;

  /// The whole model (GPT::state_dict() names) and the whole optimizer state, from this rank's
  /// `optimizer_state` (nn::optim::state_by_name of its optimizer), gathered onto world rank 0
  /// (dp 0, tp 0, stage 0); the other ranks get nothing. Collective over the mesh.
  std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole(
      const nn::NamedTensors& optimizer_state);
  /// This rank's share of a whole optimizer state by name (what gather_whole gave).
  nn::NamedTensors shard_optimizer_state(const nn::NamedTensors& whole) const;

 private:
  parallel::PipelineStep pipeline_step(const Tensor& x, bool forward_only) const;
  /// The pipeline's forward (and backward) of x, y: the mean loss, averaged over the replicas,
  /// as an f64 [1] on the device.
  Tensor run(const Tensor& x, const Tensor& y, bool forward_only);
  /// run() with backward, the gradients' reduction and tying, then after_backward_: the step
  /// forward_backward() runs, eagerly or captured.
  Tensor train_step(const Tensor& x, const Tensor& y);

  parallel::Mesh& mesh_;
  DistributedGPTOptions options_;
  std::unique_ptr<ParallelGPT> model_;
  std::optional<parallel::DistributedDataParallel> ddp_;
  std::optional<parallel::FullyShardedDataParallel> fsdp_;
  std::optional<graph::Compiled> compiled_;
  std::function<void()> after_backward_;
};

}  // namespace dlf::models
