#include "gpt_task.h"

#include <dlf/models/gpt_distributed.h>
#include <dlf/models/registry.h>
#include <dlf/nn/data/prefetch.h>

#include "model_io.h"

namespace dlf::app {
namespace {

using nn::data::TextBatch;

class GPTTask final : public RankTask {
 public:
  GPTTask(const TaskSetup& s, const nn::data::TextDataset& data)
      : run_(s.run),
        data_(data),
        seq_(sequence_length(s.run, models::gpt_config(s.run.model))),
        rows_(s.run.batch / s.mesh.layout().dp),
        row0_(s.mesh.dp_rank() * rows_),
        eval_batches_(s.eval_batches),
        gpt_(models::gpt_config(s.run.model), s.mesh, s.initial,
             {.micro_batches = int(rows_ / s.micro_batch),
              .schedule = s.schedule,
              .virtual_stages = s.virtual_stages,
              .bucket_bytes = s.bucket_bytes,
              .zero = s.zero,
              .offload_params = s.offload_params,
              .reduce_in_bf16 = s.reduce_in_bf16,
              .compile = s.compile}),
        batches_(
            [this](int64_t step) {
              return mine(data_.sample(nn::data::Split::train, step, run_.batch, seq_, run_.seed));
            },
            s.first_step) {
    gpt_.module().recompute(s.recompute);
  }

  nn::NamedTensors named_parameters() const override { return gpt_.module().named_parameters(); }
  double forward_backward() override {
    const TextBatch b = batches_.next();
    return gpt_.forward_backward(b.x, b.y);
  }
  parallel::NormScope norm_scope() const override { return gpt_.norm_scope(); }
  void set_after_backward(std::function<void()> after) override {
    gpt_.set_after_backward(std::move(after));
  }
  Evaluation evaluate() override {
    double total = 0;
    for (int64_t i = 0; i < eval_batches_; ++i) {
      const TextBatch b = mine(data_.window(nn::data::Split::val, i, run_.batch, seq_));
      total += gpt_.loss(b.x, b.y);
    }
    return {.loss = total / double(eval_batches_), .metric = {}, .value = 0};
  }
  std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole(
      const nn::NamedTensors& optimizer_state) override {
    return gpt_.gather_whole(optimizer_state);
  }
  nn::NamedTensors shard_optimizer_state(const nn::NamedTensors& whole) const override {
    return gpt_.shard_optimizer_state(whole);
  }
  parallel::ShardedParameters* shards() override { return gpt_.shards(); }
  std::string batch_description() const override {
    return std::to_string(run_.batch) + " x " + std::to_string(seq_) + " tokens";
  }
  double items_per_step() const override { return double(run_.batch * seq_); }
  const char* item_unit() const override { return "tok"; }

 private:
  // This replica's rows of a batch.
  TextBatch mine(const TextBatch& b) const {
    if (rows_ == run_.batch) return b;
    return {b.x.narrow(0, row0_, rows_).contiguous(), b.y.narrow(0, row0_, rows_).contiguous()};
  }

  const RunConfig& run_;
  const nn::data::TextDataset& data_;
  int64_t seq_, rows_, row0_, eval_batches_;
  models::DistributedGPT gpt_;
  nn::data::Prefetcher<TextBatch> batches_;
};

}  // namespace

std::unique_ptr<RankTask> make_gpt_task(const TaskSetup& setup, const nn::data::TextDataset& data) {
  return std::make_unique<GPTTask>(setup, data);
}

}  // namespace dlf::app
