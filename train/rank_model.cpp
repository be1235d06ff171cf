#include <dlf/core/factory.h>
#include <dlf/device/host.h>
#include <dlf/train/rank_model.h>

namespace dlf::train {

void RankModel::wrap_data_parallel(const std::vector<Tensor>& tied) {
  if (mesh_.layout().dp == 1) return;
  if (options_.zero == 3) {
    fsdp_.emplace(module(), mesh_.dp(),
                  parallel::FSDPOptions{.backward_passes = options_.micro_batches,
                                        .reduce_in_bf16 = options_.reduce_in_bf16,
                                        .own_units = tied,
                                        .shards_on = options_.offload_params
                                                         ? std::optional(host_of(device()))
                                                         : std::nullopt});
  } else {
    ddp_.emplace(module(), mesh_.dp(),
                 parallel::DDPOptions{.bucket_bytes = options_.bucket_bytes,
                                      .backward_passes = options_.micro_batches,
                                      .shard_gradients = options_.zero == 2,
                                      .reduce_in_bf16 = options_.reduce_in_bf16,
                                      .own_buckets = tied});
  }
}

void RankModel::finish_backward(const std::function<void()>& tie) {
  if (ddp_) ddp_->synchronize();
  if (fsdp_) fsdp_->synchronize();
  if (tie) tie();
  if (after_backward_) after_backward_();
}

double RankModel::average(double value) const {
  if (mesh_.layout().dp == 1) return value;
  Tensor t = full({1}, value, {.dtype = DType::f64, .device = device()});
  mesh_.dp().allreduce(t, parallel::ReduceOp::avg);
  return t.item<double>();
}

}  // namespace dlf::train
