// The BERT family: masked-language modelling on text (15 % of the bytes chosen, 80 % of those
// masked, 10 % replaced, 10 % kept); the score is masked-byte accuracy.
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/models/bert.h>
#include <dlf/models/family.h>
#include <dlf/nn/data/masking.h>
#include <dlf/nn/metrics.h>

#include "families.h"
#include "named_config.h"

namespace dlf::models {
namespace {

using nn::data::MaskedBatch;
using nn::data::Split;

// Bytes per sequence when the run gives none (the peer's, and BERT pre-training's first phase).
constexpr int64_t kBertSequence = 128;

constexpr uint64_t kTrainStream = 0x6d61736b, kValidationStream = 0x76616c;

// The masking of batch `index` of a split draws from its own stretch of one counter-based
// stream, so a resumed run masks what the uninterrupted one would have.
MaskedBatch masked(const Tensor& tokens, uint64_t seed, uint64_t stream, int64_t index) {
  Generator gen(seed ^ stream);
  gen.set_offset(uint64_t(index) << 32);
  return nn::data::mask_tokens(tokens, gen, kMaskToken, 256);
}

int64_t masked_count(const Tensor& labels) {
  int64_t n = 0;
  for (int64_t label : labels.contiguous().to_vector<int64_t>()) n += label != -100;
  return n;
}

// The summed loss of a replica's rows times the batch's scale: the replicas over its masked
// positions, so that the mean of the replicas' losses is the batch's mean loss.
Tensor scaled_loss(const nn::Module& model, const std::vector<Tensor>& b) {
  const Tensor loss = static_cast<const BertForMaskedLM&>(model).loss(b[0], b[1], Reduction::sum);
  return loss * b[2].to(loss.dtype());
}

class BertTask final : public Task {
 public:
  explicit BertTask(const TaskSetup& s)
      : data_(byte_text(s.data, s.model)),
        model_(s.model),
        batch_(s.batch),
        seq_(bert_family().sequence(s.model, s.seq)),
        seed_(s.seed),
        replicas_(s.replicas),
        replica_(s.replica),
        eval_batches_(s.eval_batches) {}

  // {inputs, labels, scale}: the scale a tensor (a graph input under --compile, where the
  // count changes from batch to batch).
  std::vector<Tensor> batch(int64_t step) const override { return rows(Split::train, step); }

  Evaluation evaluate(const EvalModel& model) const override {
    autograd::NoGradGuard no_grad;
    const auto& bert = static_cast<const BertForMaskedLM&>(*model.module);
    double loss = 0, accuracy = 0;
    for (int64_t i = 0; i < eval_batches_; ++i) {
      const std::vector<Tensor> b = rows(Split::val, i);
      const Tensor inputs = b[0].to(model.device), labels = b[1].to(model.device);
      const double scale = b[2].item<double>();
      const Tensor logits = bert.forward(inputs);
      loss += BertForMaskedLM::loss_of(logits, labels, Reduction::sum).item<double>() * scale;
      accuracy += nn::accuracy(logits, labels) * double(masked_count(b[1])) * scale;
    }
    const double n = double(eval_batches_);
    return {.loss = model.average(loss / n),
            .metric = "masked_accuracy",
            .value = model.average(accuracy / n)};
  }

  std::string batch_description() const override {
    return std::to_string(batch_) + " x " + std::to_string(seq_) + " bytes, 15 % masked";
  }
  double items_per_step() const override { return double(batch_ * seq_); }

 private:
  // Batch `index` of `split`, masked as a whole (so any number of replicas trains on what one
  // device would), then this replica's rows and the scale.
  std::vector<Tensor> rows(Split split, int64_t index) const {
    const bool train = split == Split::train;
    const Tensor tokens = train ? data_.sample(split, index, batch_, seq_, seed_).x
                                : data_.window(split, index, batch_, seq_).x;
    const MaskedBatch all = masked(tokens, seed_, train ? kTrainStream : kValidationStream, index);
    const int64_t masked_positions = masked_count(all.labels);
    DLF_CHECK(masked_positions > 0, "BERT: ", train ? "training" : "validation", " batch ",
              index + 1, " has no masked position (each of its ", batch_, " x ", seq_,
              " bytes is masked with probability 0.15): use a larger --batch or --seq");
    const int64_t n = batch_ / replicas_, first = n * replica_;
    return {all.inputs.narrow(0, first, n).contiguous(),
            all.labels.narrow(0, first, n).contiguous(),
            full({}, double(replicas_) / double(masked_positions))};
  }

  const nn::data::TextDataset& data_;
  std::string model_;
  int64_t batch_, seq_;
  uint64_t seed_;
  int replicas_, replica_;
  int64_t eval_batches_;
};

}  // namespace

const Family& bert_family() {
  static const Family family{
      .name = "bert",
      .models = detail::names_of(bert_configs()),
      .unit = "tok",
      .generates = Generates::filled_masks,
      .build =
          [](const std::string& name, const BuildOptions& o) {
            DLF_CHECK(o.vocab == 0, name,
                      " reads bytes: it has no vocabulary to follow a "
                      "tokenizer's");
            BertConfig c = bert_config(name);
            c.linears = o.linears;
            return std::unique_ptr<nn::Module>(std::make_unique<BertForMaskedLM>(c));
          },
      .tp_split = bert_tensor_parallel_split,
      .load_data = text_data,
      .loss = scaled_loss,
      .task =
          [](const TaskSetup& s) { return std::unique_ptr<Task>(std::make_unique<BertTask>(s)); },
      // the peer's batch, 16 x 128, 15 % masked
      .example_batch =
          [](const std::string& name, int64_t batch, int64_t seq, Generator& gen) {
            const int64_t vocab = bert_config(name).vocab;
            const int64_t B = batch ? batch : 16, T = seq ? seq : kBertSequence;
            const Tensor tokens = randint(1, vocab, {B, T}, {.dtype = DType::i64}, &gen);
            const MaskedBatch masked = nn::data::mask_tokens(tokens, gen, kMaskToken, vocab);
            // the scale of one replica: the mean over the masked positions
            const Tensor scale = full({}, 1.0 / double(masked_count(masked.labels)));
            return ExampleBatch{{masked.inputs, masked.labels, scale}, T};
          },
      .default_batch = [](const std::string&) -> int64_t { return 16; },
      .sequence =
          [](const std::string& name, int64_t seq) {
            const int64_t tokens = seq > 0 ? seq : kBertSequence;
            const int64_t context = bert_config(name).max_positions;
            DLF_CHECK(tokens <= context, "--seq ", tokens, " is longer than ", name, "'s ", context,
                      " positions");
            return tokens;
          },
  };
  return family;
}

}  // namespace dlf::models
