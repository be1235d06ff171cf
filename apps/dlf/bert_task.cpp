#include "bert_task.h"

#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/models/bert.h>
#include <dlf/nn/data/masking.h>
#include <dlf/nn/data/prefetch.h>
#include <dlf/nn/metrics.h>

#include "replica_task.h"

namespace dlf::app {
namespace {

using nn::data::MaskedBatch;

// The masking of batch `index` of a split draws from its own stretch of one counter-based
// stream, so a resumed run masks what the uninterrupted one would have.
MaskedBatch masked(const Tensor& tokens, uint64_t seed, uint64_t stream, int64_t index) {
  Generator gen(seed ^ stream);
  gen.set_offset(uint64_t(index) << 32);
  return nn::data::mask_tokens(tokens, gen, models::kMaskToken, 256);
}

constexpr uint64_t kTrainStream = 0x6d61736b, kValidationStream = 0x76616c;

// This replica's rows of a masked batch, and the factor that makes the mean of the replicas'
// summed losses the batch's mean loss: the replicas over the batch's masked positions. A tensor
// (a graph input under --compile, where the count changes from batch to batch).
struct RankBatch {
  MaskedBatch rows;
  Tensor scale;
};

int64_t masked_count(const Tensor& labels) {
  int64_t n = 0;
  for (int64_t label : labels.contiguous().to_vector<int64_t>()) n += label != -100;
  return n;
}

class BertTask final : public ReplicaTask {
 public:
  BertTask(const TaskSetup& s, const nn::data::TextDataset& data)
      : ReplicaTask(s, std::make_unique<models::BertForMaskedLM>(config(s)),
                    models::bert_tensor_parallel_split),
        data_(data),
        seq_(bert_sequence(s.run.seq)),
        eval_batches_(s.eval_batches),
        batches_([this](int64_t step) { return batch(nn::data::Split::train, step); },
                 s.first_step) {
    const int64_t context = bert().config().max_positions;
    DLF_CHECK(seq_ <= context, "--seq ", seq_, " is longer than ", run_.model, "'s ", context,
              " positions");
  }

  double forward_backward() override {
    const RankBatch b = batches_.next();
    return train_on({b.rows.inputs.to(device()), b.rows.labels.to(device()), b.scale.to(device())});
  }
  Tensor batch_loss(const std::vector<Tensor>& b) const override {
    const Tensor loss = bert().loss(b[0], b[1], Reduction::sum);
    return loss * b[2].to(loss.dtype());
  }

  Evaluation evaluate_replica() override {
    autograd::NoGradGuard no_grad;
    double loss = 0, accuracy = 0;
    for (int64_t i = 0; i < eval_batches_; ++i) {
      const RankBatch b = batch(nn::data::Split::val, i);
      const Tensor inputs = b.rows.inputs.to(device()), labels = b.rows.labels.to(device());
      const double scale = b.scale.item<double>();
      const Tensor logits = bert().forward(inputs);
      loss +=
          models::BertForMaskedLM::loss_of(logits, labels, Reduction::sum).item<double>() * scale;
      accuracy += nn::accuracy(logits, labels) * double(masked_count(b.rows.labels)) * scale;
    }
    const double n = double(eval_batches_);
    return {.loss = average(loss / n), .metric = "masked_accuracy", .value = average(accuracy / n)};
  }

  std::string batch_description() const override {
    return std::to_string(run_.batch) + " x " + std::to_string(seq_) + " bytes, 15 % masked";
  }
  double items_per_step() const override { return double(run_.batch * seq_); }
  const char* item_unit() const override { return "tok"; }

 private:
  static models::BertConfig config(const TaskSetup& s) {
    models::BertConfig c = models::bert_config(s.run.model);
    c.linears = linears(s);
    return c;
  }
  const models::BertForMaskedLM& bert() const {
    return static_cast<const models::BertForMaskedLM&>(*model_);
  }

  // Batch `index` of `split`, masked as a whole (so any number of replicas trains on what one
  // device would), then this replica's rows.
  RankBatch batch(nn::data::Split split, int64_t index) const {
    const bool train = split == nn::data::Split::train;
    const Tensor tokens = train ? data_.sample(split, index, run_.batch, seq_, run_.seed).x
                                : data_.window(split, index, run_.batch, seq_).x;
    const MaskedBatch all =
        masked(tokens, run_.seed, train ? kTrainStream : kValidationStream, index);
    const int64_t masked_positions = masked_count(all.labels);
    DLF_CHECK(masked_positions > 0, "BERT: ", train ? "training" : "validation", " batch ",
              index + 1, " has no masked position (each of its ", run_.batch, " x ", seq_,
              " bytes is masked with probability 0.15): use a larger --batch or --seq");
    const int64_t first = row0(run_.batch), n = rows(run_.batch);
    return {
        {all.inputs.narrow(0, first, n).contiguous(), all.labels.narrow(0, first, n).contiguous()},
        full({}, double(mesh_.layout().dp) / double(masked_positions))};
  }

  const nn::data::TextDataset& data_;
  int64_t seq_, eval_batches_;
  nn::data::Prefetcher<RankBatch> batches_;
};

}  // namespace

std::unique_ptr<RankTask> make_bert_task(const TaskSetup& setup,
                                         const nn::data::TextDataset& data) {
  return std::make_unique<BertTask>(setup, data);
}

}  // namespace dlf::app
