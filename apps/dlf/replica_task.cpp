#include "replica_task.h"

#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/tensor_parallel.h>

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
  if (s.compile) compiled_.emplace(step_);  // DDP's and FSDP's collectives are ops of the step
  if (l.dp > 1 && s.zero == 3) {
    fsdp_.emplace(
        *model_, s.mesh.dp(),
        parallel::FSDPOptions{.reduce_in_bf16 = s.reduce_in_bf16,
                              .shards_on = s.offload_params ? std::optional(kCPU) : std::nullopt});
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

parallel::NormScope ReplicaTask::norm_scope() const {
  if (!tp_split_) return {};
  // A split parameter from every tp rank, a replicated one from tp rank 0.
  return parallel::norm_scope_of(model_->named_parameters(),
                                 [this](const std::string& name) {
                                   return mesh_.tp_rank() == 0 ||
                                          tp_split_(name) != parallel::Split::none;
                                 },
                                 {&mesh_.tp()});
}

std::pair<nn::NamedTensors, nn::NamedTensors> ReplicaTask::gather_whole(
    const nn::NamedTensors& optimizer_state) {
  // The replicas hold the same: the first gathers (under ZeRO-3 every replica gathers its
  // shards whole, and the first reads them), over its tp group when split.
  const bool first_replica = mesh_.dp_rank() == 0;
  auto whole_model = [this] {
    return tp_split_ ? parallel::gather_state_dict(*model_, tp_split_, mesh_.tp())
                     : model_->state_dict();
  };
  nn::NamedTensors model =
      fsdp_ ? fsdp_->whole_copy(whole_model, first_replica) : nn::NamedTensors();
  if (!first_replica) return {};
  if (!fsdp_) model = whole_model();
  if (!tp_split_) return {std::move(model), optimizer_state};
  nn::NamedTensors state = parallel::gather_state(optimizer_state, tp_split_, mesh_.tp());
  if (mesh_.tp_rank() != 0) return {};
  return {std::move(model), std::move(state)};
}

nn::NamedTensors ReplicaTask::shard_optimizer_state(const nn::NamedTensors& whole) const {
  if (!tp_split_) return whole;
  return parallel::shard_state(whole, tp_split_, mesh_.tp());
}

double ReplicaTask::train_on(const std::vector<Tensor>& batch) {
  const Tensor loss = (compiled_ ? (*compiled_)(batch) : step_(batch))[0];
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
