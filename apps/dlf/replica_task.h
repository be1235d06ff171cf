// The part of a task whose model is replicated over the data-parallel ranks (BERT, ViT, UNet),
// whole on each or, for the transformers, its blocks split over a tensor-parallel group: DDP
// over the dp group, clipping, checkpoints of the whole state. A family adds its batches, its
// loss and its evaluation.
#pragma once
#include <memory>
#include <optional>

#include <dlf/graph/executable.h>
#include <dlf/nn/linear.h>
#include <dlf/parallel/fsdp.h>
#include <dlf/parallel/tp_sharding.h>

#include "task.h"

namespace dlf::app {

class ReplicaTask : public RankTask {
 public:
  nn::NamedTensors named_parameters() const override { return model_->named_parameters(); }
  parallel::NormScope norm_scope() const override;
  /// Runs `after` inside compiled_'s step, after backward.
  void set_after_backward(std::function<void()> after) override {
    after_backward_ = std::move(after);
  }
  std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole(
      const nn::NamedTensors& optimizer_state) override;
  nn::NamedTensors shard_optimizer_state(const nn::NamedTensors& whole) const override;
  /// evaluate_replica() with the whole model at hand (ZeRO-3 gathers what no block holds).
  Evaluation evaluate() final;
  parallel::ShardedParameters* shards() override {
    if (fsdp_) return &*fsdp_;
    return ddp_ ? &*ddp_ : nullptr;
  }

 protected:
  /// `model` takes the setup's initial state (its shard of it under tensor parallelism, split
  /// by `tp_split`), moves to the rank's device and is wrapped in DDP. dlf::Error for a
  /// pipeline, or for tensor parallelism without a rule (a family that does not support it).
  ReplicaTask(const TaskSetup& setup, std::unique_ptr<nn::Module> model,
              parallel::SplitRule tp_split = {});
  /// What a family's config needs to build its layers split over the setup's tp group.
  static nn::LinearMaker linears(const TaskSetup& setup);

  /// The family's evaluation (see RankTask::evaluate), on this rank's part of the data.
  virtual Evaluation evaluate_replica() = 0;
  /// The family's loss on a batch of its inputs, on this rank's device.
  virtual Tensor batch_loss(const std::vector<Tensor>& batch) const = 0;
  /// batch_loss(batch), its backward and the gradients averaged over the replicas (under
  /// --compile the loss and its backward run as one captured graph); returns the loss averaged
  /// over the replicas, the same on every rank.
  double train_on(const std::vector<Tensor>& batch);
  /// `value` averaged over the replicas.
  double average(double value) const;
  /// This replica's rows [row0, row0 + rows) of a global batch of `batch` rows.
  int64_t rows(int64_t batch) const;
  int64_t row0(int64_t batch) const { return rows(batch) * mesh_.dp_rank(); }
  Device device() const { return mesh_.dp().device(); }

  const RunConfig& run_;
  parallel::Mesh& mesh_;
  std::unique_ptr<nn::Module> model_;

 private:
  /// batch_loss, what it keeps for backward counted as activations
  Tensor scoped_loss(const std::vector<Tensor>& batch) const {
    MemoryScope activations(MemoryCategory::activations);
    return batch_loss(batch);
  }
  /// ZeRO-3's gather of what no block holds, scoped_loss, its backward, the gradients'
  /// reduction and after_backward_: run eagerly, or (--compile) captured as one graph in
  /// compiled_
  graph::StepFn step_ = graph::backward_step(
      [this](const std::vector<Tensor>& batch) {
        if (fsdp_) fsdp_->unshard();
        return scoped_loss(batch);
      },
      [this] {
        if (ddp_) ddp_->synchronize();
        if (fsdp_) fsdp_->synchronize();
        if (after_backward_) after_backward_();
      });
  std::optional<graph::Compiled> compiled_;
  std::function<void()> after_backward_;
  std::optional<parallel::DistributedDataParallel> ddp_;
  std::optional<parallel::FullyShardedDataParallel> fsdp_;  ///< ZeRO-3, instead of ddp_
  parallel::SplitRule tp_split_;                            // empty without tensor parallelism
};

}  // namespace dlf::app
