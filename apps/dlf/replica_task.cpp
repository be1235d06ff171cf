#include "replica_task.h"

#include <dlf/core/factory.h>
#include <dlf/nn/optim/optimizer.h>

namespace dlf::app {

ReplicaTask::ReplicaTask(const TaskSetup& s, std::unique_ptr<nn::Module> model)
    : run_(s.run), mesh_(s.mesh), model_(std::move(model)) {
  const parallel::Layout& l = s.mesh.layout();
  DLF_CHECK(l.tp == 1 && l.pp == 1, s.run.model,
            " trains data-parallel only: --tp and --pp are for the GPT models");
  model_->load_state_dict(s.initial);
  model_->to(device());
  if (l.dp > 1)
    ddp_.emplace(*model_, s.mesh.dp(), parallel::DDPOptions{.bucket_bytes = s.bucket_bytes});
}

double ReplicaTask::clip_grad_norm(double max_norm) {
  return nn::optim::clip_grad_norm(model_->parameters(), max_norm);
}

std::pair<nn::NamedTensors, nn::NamedTensors> ReplicaTask::gather_whole(
    const nn::NamedTensors& optimizer_state) {
  if (mesh_.dp_rank() != 0) return {};  // the replicas hold the same
  return {model_->state_dict(), optimizer_state};
}

double ReplicaTask::finish_backward(const Tensor& loss) {
  loss.backward();
  if (ddp_) ddp_->synchronize();
  return average(loss.item<double>());
}

double ReplicaTask::average(double value) const {
  if (mesh_.layout().dp == 1) return value;
  Tensor t = full({1}, value, {.dtype = DType::f64, .device = device()});
  mesh_.dp().allreduce(t, parallel::ReduceOp::avg);
  return t.item<double>();
}

int64_t ReplicaTask::rows(int64_t batch) const {
  const int dp = mesh_.layout().dp;
  DLF_CHECK(batch % dp == 0, "a batch of ", batch, " does not split over ", dp, " replicas");
  return batch / dp;
}

}  // namespace dlf::app
