#include "replica_task.h"

#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/optim.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/tensor_parallel.h>

#include <cmath>

namespace dlf::app {

ReplicaTask::ReplicaTask(const TaskSetup& s, std::unique_ptr<nn::Module> model,
                         parallel::SplitRule tp_split)
    : run_(s.run), mesh_(s.mesh), model_(std::move(model)) {
  const parallel::Layout& l = s.mesh.layout();
  DLF_CHECK(l.pp == 1, s.run.model, " has no pipeline stages: --pp is for the GPT models");
  DLF_CHECK(l.tp == 1 || tp_split, s.run.model,
            " trains data-parallel only: --tp is for the GPT, BERT and ViT models");
  if (l.tp > 1) {
    tp_split_ = std::move(tp_split);
    parallel::load_shards(*model_, s.initial, tp_split_, s.mesh.tp());
  } else {
    model_->load_state_dict(s.initial);
  }
  model_->to(device());
  model_->recompute(s.recompute);
  if (s.compile) compiled_.emplace(step_);
  if (l.dp > 1 && s.zero == 3) {
    fsdp_.emplace(*model_, s.mesh.dp(), parallel::FSDPOptions{.reduce_in_bf16 = s.reduce_in_bf16});
  } else if (l.dp > 1) {
    ddp_.emplace(*model_, s.mesh.dp(),
                 parallel::DDPOptions{.bucket_bytes = s.bucket_bytes,
                                      .shard_gradients = s.zero == 2,
                                      .reduce_in_bf16 = s.reduce_in_bf16});
  }
}

nn::LinearMaker ReplicaTask::linears(const TaskSetup& s) {
  if (s.mesh.layout().tp == 1) return {};
  return parallel::megatron_linears(s.mesh.tp());
}

double ReplicaTask::clip_grad_norm(double max_norm) {
  if (!tp_split_) return nn::optim::clip_grad_norm(model_->parameters(), max_norm);
  autograd::NoGradGuard no_grad;
  // Each parameter once: a split one from every tp rank, a replicated one from tp rank 0.
  double squares = 0;
  for (const auto& [name, p] : model_->named_parameters()) {
    if (!p.grad().defined()) continue;
    if (mesh_.tp_rank() == 0 || tp_split_(name) != parallel::Split::none)
      squares += sum_squares(p.grad()).item<double>();
  }
  Tensor total = full({1}, squares, {.dtype = DType::f64, .device = device()});
  mesh_.tp().allreduce(total);
  const double norm = std::sqrt(total.item<double>());
  nn::optim::scale_gradients(model_->parameters(), norm, max_norm);
  return norm;
}

std::pair<nn::NamedTensors, nn::NamedTensors> ReplicaTask::gather_whole(
    const nn::NamedTensors& optimizer_state) {
  if (fsdp_) {  // every rank gathers; the first keeps a copy
    nn::NamedTensors whole =
        fsdp_->whole_copy([this] { return model_->state_dict(); }, mesh_.dp_rank() == 0);
    if (mesh_.dp_rank() != 0) return {};
    return {std::move(whole), optimizer_state};
  }
  if (mesh_.dp_rank() != 0) return {};  // the replicas hold the same
  if (!tp_split_) return {model_->state_dict(), optimizer_state};
  nn::NamedTensors model = parallel::gather_state_dict(*model_, tp_split_, mesh_.tp());
  nn::NamedTensors state = parallel::gather_state(optimizer_state, tp_split_, mesh_.tp());
  if (mesh_.tp_rank() != 0) return {};
  return {std::move(model), std::move(state)};
}

nn::NamedTensors ReplicaTask::shard_optimizer_state(const nn::NamedTensors& whole) const {
  if (!tp_split_) return whole;
  return parallel::shard_state(whole, tp_split_, mesh_.tp());
}

double ReplicaTask::train_on(const std::vector<Tensor>& batch) {
  if (fsdp_) fsdp_->unshard();
  const Tensor loss = (compiled_ ? (*compiled_)(batch) : step_(batch))[0];
  if (ddp_) ddp_->synchronize();
  if (fsdp_) fsdp_->synchronize();
  return average(loss.item<double>());
}

Evaluation ReplicaTask::evaluate() {
  if (fsdp_) fsdp_->unshard();
  const Evaluation e = evaluate_replica();
  if (fsdp_) fsdp_->reshard();
  return e;
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
