// The part of a task whose model is whole on every rank — data parallelism only (BERT, ViT,
// UNet): the replica, DDP over the dp group, clipping, checkpoints. A family adds its batches,
// its loss and its evaluation.
#pragma once
#include <memory>
#include <optional>

#include "task.h"

namespace dlf::app {

class ReplicaTask : public RankTask {
 public:
  nn::NamedTensors named_parameters() const override { return model_->named_parameters(); }
  double clip_grad_norm(double max_norm) override;
  std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole(
      const nn::NamedTensors& optimizer_state) override;
  nn::NamedTensors shard_optimizer_state(const nn::NamedTensors& whole) const override {
    return whole;
  }
  const parallel::DistributedDataParallel* ddp() const override { return ddp_ ? &*ddp_ : nullptr; }

 protected:
  /// `model` takes the setup's initial state, moves to the rank's device and is wrapped in DDP.
  /// dlf::Error for a layout with tensor or pipeline parallelism.
  ReplicaTask(const TaskSetup& setup, std::unique_ptr<nn::Module> model);

  /// After backward of this rank's loss: the gradients averaged over the replicas, and the
  /// loss too (returned, the same on every rank).
  double finish_backward(const Tensor& loss);
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
  std::optional<parallel::DistributedDataParallel> ddp_;
};

}  // namespace dlf::app
